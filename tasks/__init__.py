"""The bundled task suite (data: each other .py file here is a task program; `kernelvault.toolchain.tasks`)."""

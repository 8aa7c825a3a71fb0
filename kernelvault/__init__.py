"""KernelVault: execution-verified GPU kernels, from tasks to a published corpus and training.

One installed name: the project's top-level folders (`toolchain/`, `agents/`, `corpus/`, `pipelines/`,
`sft/`, `rl/`, and the data folders `tasks/` and `examples/`) are this package's subpackages,
`kernelvault.toolchain` and so on. An install maps them there (`package-dir` in pyproject.toml); in a
source checkout that is not installed (the GPU machine runs the tree with PYTHONPATH set to it), the
checkout's root joins this package's search path, so the same names import from the folders as they are.
"""

from pathlib import Path

_CHECKOUT = Path(__file__).resolve().parent.parent
# Installed, the subpackages sit inside this folder; in a checkout, beside it (a jailed worker sees the
# checkout's package folders, not the checkout itself, so the test is on them).
if not (Path(__file__).parent / "toolchain").is_dir() and (_CHECKOUT / "toolchain" / "__init__.py").is_file():
    __path__.append(str(_CHECKOUT))  # noqa: F821 - a package's __path__ is set by the import system

SUBPACKAGES = ("toolchain", "agents", "corpus", "pipelines", "sft", "rl")

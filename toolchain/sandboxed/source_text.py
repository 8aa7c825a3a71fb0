"""Import a module from the text the static wall read, not from what Python's import would decode.

Python's import decodes a file's bytes as its coding declaration says (PEP 263): `# coding: utf-7` turns a
comment into code, so the text the wall checked and the text that ran would differ. The wall refuses any
declaration but UTF-8; here every worker that runs a candidate's (or a task's) source compiles the file's bytes
decoded as UTF-8, so a declaration that got past the wall still means nothing. Triton reads a kernel's source
through linecache (`inspect.getsource`) to compile it: the same text is placed there, pinned (no modification
time to check against), so a file rewritten after the import changes no kernel; its lines are split as the
tokenizer splits them (`source_lines`), so a line number from the compiled code names the line that ran.
"""

from __future__ import annotations

import importlib.util
import linecache
import sys
from pathlib import Path
from types import ModuleType

from kernelvault.toolchain.source_tree import source_lines


def new_module(path: Path, name: str) -> ModuleType:
    """An empty module `name` for the file at `path`, registered in sys.modules (Triton's interpreter and
    `inspect` look modules up there)."""
    spec = importlib.util.spec_from_file_location(name, path)
    assert spec is not None
    module = importlib.util.module_from_spec(spec)
    sys.modules[name] = module
    return module


def run_source(module: ModuleType, path: Path) -> None:
    """Run the file's UTF-8 text as `module`'s body (UnicodeDecodeError and SyntaxError propagate: the import
    failed)."""
    text = path.read_bytes().decode("utf-8")
    code = compile(text, str(path), "exec", dont_inherit=True)  # not the caller's `from __future__` flags
    linecache.cache[str(path)] = (len(text), None, source_lines(text), str(path))
    exec(code, vars(module))  # noqa: S102 - the worker's one job: run this source, in its jail


def load_module(path: Path, name: str) -> ModuleType:
    """Import the file at `path` as the module `name`, from its UTF-8 text."""
    module = new_module(path, name)
    run_source(module, path)
    return module

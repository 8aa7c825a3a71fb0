"""Bundled tasks cut down for the interpreter: the timing protocol and the device gate run on CPU in CI."""

from __future__ import annotations

import re
from pathlib import Path

from kernelvault.contracts import Task
from kernelvault.toolchain.tasks import load_task_file

ROOT = Path(__file__).resolve().parents[1]


# Two performance cases the interpreter runs in well under a second each.
INTERPRETER_CASES = '[{"batch": 64, "dim": 4096}, {"batch": 40, "dim": 8192}]'
# Two cases of a few thousand elements: the interpreter runs a call in milliseconds, for tests that time
# hundreds of calls (calls per sample on CPU) on a 2-core CI machine.
TINY_CASES = '[{"batch": 4, "dim": 1024}, {"batch": 2, "dim": 2048}]'


def small_relu(folder: Path, performance_cases: str = INTERPRETER_CASES) -> Task:
    """tasks/relu.py with performance cases small enough for the interpreter, written into `folder`."""
    source = (ROOT / "tasks" / "relu.py").read_text()
    small = f'"performance_cases": {performance_cases},'
    source = re.sub(r'"performance_cases": \[.*?\],', small, source, flags=re.S)
    path = folder / "relu.py"
    path.write_text(source)
    return load_task_file(path)

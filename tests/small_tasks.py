"""Bundled tasks cut down for the interpreter: the timing protocol and the device gate run on CPU in CI."""

from __future__ import annotations

import re
from pathlib import Path

from kernelvault.contracts import Task
from kernelvault.toolchain.tasks import load_task_file

ROOT = Path(__file__).resolve().parents[1]


def small_relu(folder: Path) -> Task:
    """tasks/relu.py with performance cases small enough for the interpreter, written into `folder`."""
    source = (ROOT / "tasks" / "relu.py").read_text()
    small = '"performance_cases": [{"batch": 64, "dim": 4096}, {"batch": 40, "dim": 8192}],'
    source = re.sub(r'"performance_cases": \[.*?\],', small, source, flags=re.S)
    path = folder / "relu.py"
    path.write_text(source)
    return load_task_file(path)

"""A small copy of the bundled suite (3 tasks, 6 example candidates) for tests that run the main job end to end."""

from __future__ import annotations

import shutil
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
EXAMPLES = ROOT / "examples" / "triton"
SUBSET_TASKS = ("relu", "silu", "vector_add")
SUBSET_EXAMPLES = ("relu.py", "silu.py", "vector_add.py", "broken/parse_error__relu.md",
                   "broken/static_reject__relu.py", "broken/mismatch__silu.py")  # fmt: skip


def copy_example_suite(root: Path) -> tuple[Path, Path]:
    """(tasks folder, examples folder) under `root`, holding the subset above."""
    (root / "tasks").mkdir()
    for name in SUBSET_TASKS:
        shutil.copy(ROOT / "tasks" / f"{name}.py", root / "tasks" / f"{name}.py")
    for relative in SUBSET_EXAMPLES:
        target = root / "examples" / "triton" / relative
        target.parent.mkdir(parents=True, exist_ok=True)
        shutil.copy(EXAMPLES / relative, target)
    return root / "tasks", root / "examples"

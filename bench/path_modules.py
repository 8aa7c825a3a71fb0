"""Which of the project's modules run code on one candidate's way from `kernelvault corpus` to its Parquet row.

    python bench/path_modules.py [--keep DIR]

Runs the main job on one bundled task (relu) with its bundled Triton candidate, in this process, with the prepare
stage in the feeding thread (`--compile-workers 0`, so that it is traced too), and records every call into a
project module (a function, not a module's or class's body) from the moment `run_corpus_job` starts. The jailed
workers (candidate, reference) are other processes and are not counted: this counts the parent's path.
"""

from __future__ import annotations

import argparse
import collections
import shutil
import sys
import tempfile
import threading
from pathlib import Path
from types import FrameType
from typing import Any

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))


def main() -> int:
    parser = argparse.ArgumentParser(
        description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter
    )
    parser.add_argument("--keep", type=Path, help="folder for the run (default: a temporary one, removed)")
    args = parser.parse_args()
    folder = args.keep or Path(tempfile.mkdtemp(prefix="kv-path-"))
    (folder / "tasks").mkdir(parents=True, exist_ok=True)
    (folder / "examples" / "triton").mkdir(parents=True, exist_ok=True)
    shutil.copy(ROOT / "tasks" / "relu.py", folder / "tasks" / "relu.py")
    shutil.copy(ROOT / "examples" / "triton" / "relu.py", folder / "examples" / "triton" / "relu.py")
    calls: collections.Counter[str] = collections.Counter()
    tracing = threading.Event()
    root = str(ROOT) + "/"

    def profile(frame: FrameType, event: str, arg: Any) -> None:
        if event != "call":
            return
        code = frame.f_code
        if code.co_name == "run_corpus_job":
            tracing.set()
        if tracing.is_set() and code.co_filename.startswith(root) and "/.venv" not in code.co_filename:
            if (
                code.co_name != "<module>" and not code.co_name[:1].isupper()
            ):  # not a module's or class's body
                calls[code.co_filename[len(root) :]] += 1

    from kernelvault.cli import main as kernelvault

    sys.setprofile(profile)
    threading.setprofile(profile)
    try:
        code = kernelvault(["corpus", "--target", "triton", "--tasks", str(folder / "tasks"), "--examples",
                            str(folder / "examples"), "--out", str(folder / "out"), "--new-run",
                            "--compile-workers", "0", "--workers", "1"])  # fmt: skip
    finally:
        sys.setprofile(None)
        threading.setprofile(None)
        if args.keep is None:
            shutil.rmtree(folder, ignore_errors=True)
    print(f"\n{len(calls)} project modules run code between `run_corpus_job` and the row (exit {code}):\n")
    print("| module | calls |\n|---|---|")
    for module, count in sorted(calls.items()):
        print(f"| {module} | {count} |")
    return code


if __name__ == "__main__":
    sys.exit(main())

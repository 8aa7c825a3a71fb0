"""Verify function tasks' gold operators as their own answers: the part of each task file before its separator.

A gold operator that is not `correct` against itself is either a strict rule of this project (PyTorch finishing
the work, a write into torch at import) or a false reject to fix; this prints one line per task to tell which.

    python bench/gold_as_answers.py TritonBench/data/TritonBench_G_v1 --tasks log_softmax,lightning_attention
"""

from __future__ import annotations

import argparse
import time
from pathlib import Path

from kernelvault.contracts import Candidate
from kernelvault.toolchain.function_tasks import function_layout
from kernelvault.toolchain.tasks import load_tasks
from kernelvault.toolchain.verify import Verifier, VerifyConfig
from kernelvault.toolchain.worker_lane import WorkerLane


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("folder", type=Path, help="a folder of function tasks (TritonBench-G's, say)")
    parser.add_argument(
        "--tasks", default="", help="comma-separated task names (default: every function task)"
    )
    parser.add_argument("--platform", default="cpu", choices=("cpu", "cuda", "rocm"))
    parser.add_argument("--timeout", type=float, default=300.0, help="seconds per verification")
    args = parser.parse_args()
    loaded = load_tasks(args.folder)
    tasks = {task.name.rsplit("/", 1)[-1]: task for task in loaded.tasks if task.entry}
    names = [name for name in args.tasks.split(",") if name] or sorted(tasks)
    verifier = Verifier(VerifyConfig(platform=args.platform, timeout_s=args.timeout))
    lane = WorkerLane()
    try:
        for name in names:
            task = tasks[name]
            gold = function_layout(task.source, task.entry).reference
            started = time.perf_counter()
            verdict = verifier.complete(
                verifier.prepare(task, Candidate(task.task_id, "triton", gold, "gold")), lane
            )
            outcome = "correct" if verdict.correct else f"{verdict.failure_kind}: {verdict.failure_message}"
            print(f"{name}: {outcome[:240]} ({time.perf_counter() - started:.0f} s)", flush=True)
    finally:
        lane.close()


if __name__ == "__main__":
    main()

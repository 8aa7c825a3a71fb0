"""One candidate file verified against a task on this machine's device with the verifier's defaults, its verdict and
per-case timings printed (a quick check of one adversarial file on a GPU).

    python bench/verify_one.py TASK_FILE CANDIDATE_FILE [--target triton] [--platform cuda] [--no-wall]
"""

from __future__ import annotations

import argparse
from pathlib import Path

from kernelvault.contracts import Candidate
from kernelvault.toolchain.lane_pool import LanePool
from kernelvault.toolchain.tasks import load_task_file
from kernelvault.toolchain.verify import Verifier, VerifyConfig


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("task")
    parser.add_argument("candidates", nargs="+")
    parser.add_argument("--target", default="triton")
    parser.add_argument("--platform", default="cuda")
    parser.add_argument(
        "--no-wall", action="store_true", help="the static wall off: what the layers behind it do"
    )
    args = parser.parse_args()
    task = load_task_file(Path(args.task))
    with LanePool.for_verifier(
        Verifier(VerifyConfig(platform=args.platform, timeout_s=120.0, static_wall=not args.no_wall))
    ) as pool:
        for path in map(Path, args.candidates):
            verdict = pool.verify(task, Candidate(task.task_id, args.target, path.read_text(), path.stem))
            print(f"{path.name}: {verdict.failure_kind or 'correct'} reward {verdict.reward.total:.2f} "
                  f"speedup {verdict.speedup} | {(verdict.failure_message or '')[:300]}")  # fmt: skip
            for timing in verdict.timings:
                print(f"    {timing.case}: timed {timing.candidate_ms:.4f} ms, watched device work {timing.own_kernel_ms} ms, "
                      f"reference {timing.reference_ms:.4f} ms")  # fmt: skip


if __name__ == "__main__":
    main()

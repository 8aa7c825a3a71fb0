"""Why candidate workers are replaced: each honest example of a target verified on one persistent lane, in order,
with its verdict and the reason its worker gave for being replaced after the job (`serve._restart_reason`).

    python bench/worker_restarts.py --platform cuda --target hip [--limit N]

An honest candidate's worker should be kept (no reason); `patched: NAME` names what differs from the snapshot the
worker took at its start (a candidate's patch, or a harness change the snapshot does not expect).
"""

from __future__ import annotations

import argparse
from pathlib import Path

from kernelvault.contracts import Candidate
from kernelvault.pipelines.candidates import BUNDLED_EXAMPLES
from kernelvault.toolchain.lane_pool import LanePool
from kernelvault.toolchain.tasks import load_task_file
from kernelvault.toolchain.verify import Verifier, VerifyConfig

TASKS = Path(__file__).resolve().parent.parent / "tasks"


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--platform", default="cuda")
    parser.add_argument("--target", default="hip", choices=("hip", "triton"))
    parser.add_argument("--limit", type=int, default=0)
    args = parser.parse_args()
    files = sorted((BUNDLED_EXAMPLES / args.target).glob("*.py"))
    files = [path for path in files if (TASKS / path.name).exists()][: args.limit or None]
    verifier = Verifier(VerifyConfig(platform=args.platform, timeout_s=60.0))
    with LanePool.for_verifier(verifier) as pool:
        print("| example | failure | reward | worker replaced | message |\n|---|---|---|---|---|")
        for path in files:
            task = load_task_file(TASKS / path.name)
            verdict = pool.verify(task, Candidate(task.task_id, args.target, path.read_text(), path.stem))
            workers = [lane.workers["candidate"] for lane in pool.lanes if "candidate" in lane.workers]
            reason = "; ".join(worker.last_restart for worker in workers if worker.last_restart) or None
            for worker in workers:
                worker.last_restart = None
            message = (verdict.failure_message or "").replace("\n", " ").replace("|", "/")[:400]
            print(
                f"| {path.stem} | {verdict.failure_kind} | {verdict.reward.total if verdict.reward else 0:.2f} | {reason} | {message} |",
                flush=True,
            )


if __name__ == "__main__":
    main()

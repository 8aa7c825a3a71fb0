"""What a candidate worker's start costs on this machine: the imports and set-up `serve` runs before it says it is
ready, as the worker runs them now and with torch._dynamo imported as it once was, alternated in fresh interpreters.

    python bench/worker_start.py [--runs 7]

A CI run starts a few hundred candidate workers (every integrity reject retires one): their start is most of the
suite's CPU time on a 2-core machine.
"""

from __future__ import annotations

import argparse
import resource
import statistics
import subprocess
import sys
import time

NOW = """
import torch
from kernelvault.toolchain.sandboxed.serve import settle_dynamos_patch
settle_dynamos_patch()
from kernelvault.toolchain.sandboxed.candidate import CandidateHost
from kernelvault.toolchain.sandboxed.integrity import PatchSnapshot, TorchComputeMonitor, Violations, patch_targets
PatchSnapshot(patch_targets())
with TorchComputeMonitor(Violations()):
    torch.empty(4) + 1
assert "torch._dynamo" not in __import__("sys").modules
"""
# before: `serve` imported torch._dynamo so that the deterministic mode's (and the monitor's) lazy import of it
# happened before the patch snapshot
BEFORE = NOW.replace("import torch\n", "import torch\nimport torch._dynamo\n", 1).replace(
    'assert "torch._dynamo" not in __import__("sys").modules\n', ""
)


def one(code: str) -> tuple[float, float]:
    """(CPU seconds, wall seconds) of one fresh interpreter running `code`."""
    before = resource.getrusage(resource.RUSAGE_CHILDREN)
    started = time.perf_counter()
    subprocess.run([sys.executable, "-c", code], check=True)
    wall = time.perf_counter() - started
    after = resource.getrusage(resource.RUSAGE_CHILDREN)
    return (after.ru_utime - before.ru_utime) + (after.ru_stime - before.ru_stime), wall


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--runs", type=int, default=7)
    args = parser.parse_args()
    figures: dict[str, list[tuple[float, float]]] = {"before (torch._dynamo imported)": [], "now": []}
    for _ in range(args.runs):  # alternated, so that a busy moment of the machine touches both
        figures["before (torch._dynamo imported)"].append(one(BEFORE))
        figures["now"].append(one(NOW))
    print(f"candidate worker start, median of {args.runs} fresh interpreters each\n")
    print("| start | CPU s | wall s |\n|---|---|---|")
    for name, runs in figures.items():
        print(
            f"| {name} | {statistics.median(c for c, _ in runs):.2f} | {statistics.median(w for _, w in runs):.2f} |"
        )


if __name__ == "__main__":
    main()

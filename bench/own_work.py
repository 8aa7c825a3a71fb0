"""How far an honest kernel's timed calls sit above the watched sample's device work (`own_work`): every bundled
example of a target verified on one lane with the verifier's defaults, and per performance case the median timed
call, the device time per call of the watched first sample's calls (every kernel, copy and fill), and their ratio.
`OWN_WORK_SHARE` must stay below every honest ratio with margin. Then what the watched sample's profile costs in the
turn alone on the device: a CUDA-only profile started and stopped around one forward, against the forward alone.

    python bench/own_work.py --target triton [--limit N]
"""

from __future__ import annotations

import argparse
import importlib.util
import statistics
import sys
import time
from pathlib import Path

import torch

from kernelvault.contracts import Candidate
from kernelvault.pipelines.candidates import BUNDLED_EXAMPLES
from kernelvault.toolchain.lane_pool import LanePool
from kernelvault.toolchain.sandboxed.own_work import OWN_WORK_SHARE, device_work_ms
from kernelvault.toolchain.tasks import load_task_file
from kernelvault.toolchain.verify import Verifier, VerifyConfig

ROOT = Path(__file__).resolve().parent.parent
TASKS = ROOT / "tasks"


def ratios(target: str, limit: int) -> list[float]:
    files = [
        path for path in sorted((BUNDLED_EXAMPLES / target).glob("*.py")) if (TASKS / path.name).exists()
    ]
    verifier = Verifier(VerifyConfig(platform="cuda", timeout_s=120.0))
    found: list[float] = []
    print(f"\n### {target}: median timed call against the watched sample's device work\n")
    print(
        "| example | case | verdict | timed ms | watched device ms | timed / watched |\n|---|---|---|---|---|---|"
    )
    with LanePool.for_verifier(verifier) as pool:
        for path in files[: limit or None]:
            task = load_task_file(TASKS / path.name)
            verdict = pool.verify(task, Candidate(task.task_id, target, path.read_text(), path.stem))
            got = verdict.failure_kind or "correct"
            if not verdict.timings:
                print(
                    f"| {path.stem} | - | {got} | - | - | - |  {(verdict.failure_message or '')[:120]}",
                    flush=True,
                )
            for timing in verdict.timings:
                own = timing.own_kernel_ms
                ratio = timing.candidate_ms / own if own else None
                if ratio is not None:
                    found.append(ratio)
                shown = f"{ratio:.2f}" if ratio is not None else "-"
                print(f"| {path.stem} | {timing.case} | {got} | {timing.candidate_ms:.4f} | "
                      f"{own if own is None else f'{own:.4f}'} | {shown} |", flush=True)  # fmt: skip
    if found:
        print(f"\n{len(found)} cases: timed/own min {min(found):.2f}, median {statistics.median(found):.2f}; "
              f"OWN_WORK_SHARE {OWN_WORK_SHARE}")  # fmt: skip
    return found


def profile_cost(repeats: int = 20) -> None:
    """The watched call's extra cost in the turn: a CUDA-only profile around a forward of the relu example."""
    spec = importlib.util.spec_from_file_location("relu_example", BUNDLED_EXAMPLES / "triton" / "relu.py")
    module = importlib.util.module_from_spec(spec)  # type: ignore[arg-type]
    spec.loader.exec_module(module)  # type: ignore[union-attr]
    model, x = module.ModelNew().cuda(), torch.randn(4096, 4096, device="cuda")

    def forward() -> None:
        model(x)
        torch.cuda.synchronize()

    forward()
    device_work_ms(forward)  # the first profile in a process starts CUPTI
    plain, profiled = [], []
    for _ in range(repeats):
        started = time.perf_counter()
        forward()
        plain.append(time.perf_counter() - started)
        started = time.perf_counter()
        device_work_ms(forward)
        profiled.append(time.perf_counter() - started)
    print(f"\nwatched-call profile: forward alone {statistics.median(plain) * 1e3:.2f} ms, under a CUDA-only profile "
          f"{statistics.median(profiled) * 1e3:.2f} ms (median of {repeats}, relu 4096x4096, in this process)")  # fmt: skip


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--target", default="triton,hip")
    parser.add_argument("--limit", type=int, default=0)
    args = parser.parse_args()
    print(f"torch {torch.__version__}, {torch.cuda.get_device_name()}, {time.strftime('%Y-%m-%d')}, "
          f"command: python {' '.join(sys.argv)}")  # fmt: skip
    found = [ratio for target in args.target.split(",") for ratio in ratios(target, args.limit)]
    if found:
        print(f"\nall targets: {len(found)} cases, timed/own min {min(found):.2f}")
    profile_cost()


if __name__ == "__main__":
    main()

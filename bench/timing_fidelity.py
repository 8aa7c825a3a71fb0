"""Timing fidelity on a GPU: is our latency stable, and does it agree with triton.testing.do_bench?

For a few bundled examples, on each task's first performance case:
  - our median (`time_staged`, the verifier's protocol), measured 5 times: coefficient of variation (CV) of the
    medians;
  - `triton.testing.do_bench(..., return_mode="median")` on the same callable and inputs: the ratio;
  - the end-to-end `verify_once` task speedup over --verify-runs runs: min and max.
Cases: the smallest and the largest performance case of each task. do_bench counts host launch time
when the kernel is shorter than its launch; ours measures device time (see toolchain/sandboxed/timing.py), so
the two agree only for kernels longer than their launch overhead.
Prints a markdown table (and writes it to $KV_RESULTS_DIR/timing_fidelity.md when set).
Bundled examples are our own code, so this script imports them directly; user candidates never are.

    python bench/timing_fidelity.py [--tasks softmax,rms_norm,matmul] [--verify-runs 2]
"""

from __future__ import annotations

import argparse
import statistics
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))

import torch  # noqa: E402
import triton  # noqa: E402
import triton.testing  # noqa: E402

from bench.bundled_cases import bundled_case, publish  # noqa: E402
from kernelvault.contracts import Candidate  # noqa: E402
from kernelvault.toolchain.lane_pool import verify_once  # noqa: E402
from kernelvault.toolchain.sandboxed.timing import time_staged  # noqa: E402
from kernelvault.toolchain.tasks import load_task_file  # noqa: E402
from kernelvault.toolchain.verify import Verifier  # noqa: E402


def measure(name: str, case_index: int, device: torch.device, repeats: int) -> str:
    """One table row: the bundled example of task `name` on one of its performance cases."""
    task = load_task_file(ROOT / "tasks" / f"{name}.py")
    case = task.performance_cases[case_index]
    with torch.no_grad():
        built = bundled_case(name, case, device)
        model, input_sets = built.example, built.input_sets

        def run(inputs: list[object]) -> object:
            return model(*inputs)

        # the verifier's protocol: fresh values for every call, every output checksummed (`timing.time_staged`)
        medians = [
            time_staged(
                run, input_sets, repetitions=100, warmup=10, device=device, timing_seed=seed
            ).median_ms
            for seed in range(repeats)
        ]
        bench_ms = triton.testing.do_bench(
            lambda: run(input_sets[0]), warmup=25, rep=100, return_mode="median"
        )
    ours = statistics.median(medians)
    cv = statistics.pstdev(medians) / statistics.mean(medians)
    return f"| {name} | {case.name} | {ours:.4f} | {cv:.2%} | {bench_ms:.4f} | {ours / bench_ms:.3f} |"


def verify_speedups(name: str, verifier: Verifier, runs: int) -> str:
    """The end-to-end task speedup (all performance cases) from `runs` independent verifications."""
    task = load_task_file(ROOT / "tasks" / f"{name}.py")
    source = (ROOT / "examples" / "triton" / f"{name}.py").read_text()
    speedups = []
    for _ in range(runs):
        verdict = verify_once(verifier, task, Candidate(task.task_id, "triton", source, "bench"))
        speedups.append(verdict.speedup if verdict.speedup is not None else float("nan"))
    return f"| {name} | {len(task.performance_cases)} | {min(speedups):.3f} | {max(speedups):.3f} | {runs} |"


def main() -> int:
    parser = argparse.ArgumentParser()
    parser.add_argument("--tasks", default="softmax,rms_norm,matmul")
    parser.add_argument("--repeats", type=int, default=5)
    parser.add_argument("--verify-runs", type=int, default=2)
    args = parser.parse_args()
    if not torch.cuda.is_available():
        print("timing_fidelity needs a GPU")
        return 1
    device = torch.device("cuda")
    verifier = Verifier()
    lines = [
        f"Device: {torch.cuda.get_device_name()}, torch {torch.__version__}, triton {triton.__version__}",
        "",
        "| task | case | ours: median of 5 medians, ms | CV of the 5 medians | do_bench median ms | ours / do_bench |",
        "|---|---|---|---|---|---|",
    ]
    names = args.tasks.split(",")
    for name in names:
        for case_index in (0, -1):  # the smallest and the largest performance case
            lines.append(measure(name, case_index, device, args.repeats))
            torch.cuda.empty_cache()
    lines += ["", "| task | performance cases | verify speedup min | max | runs |", "|---|---|---|---|---|"]
    lines += [verify_speedups(name, verifier, args.verify_runs) for name in names]
    publish("\n".join(lines) + "\n", "timing_fidelity.md")
    return 0


if __name__ == "__main__":
    sys.exit(main())

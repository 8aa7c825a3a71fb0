"""The bundled optimisation suite's baselines against the bundled optimised examples (issue #22, part 2).

Each optimisation task (`bundled:optimise`, `REFERENCE__VARIANT`) gets the bundled example of its reference
(`examples/<target>/<REFERENCE>.py`) as the candidate. Verifying it verifies the baseline first on the same
lane (`kernelvault.toolchain.optimisation`), so one verdict holds both timings: its `speedup_over_baseline`
is how much slower the baseline is than the optimised example, measured on one lane a moment apart. The
target: every baseline correct and at least 1.5x slower than the example.

Printed: one Markdown row per task and target: baseline ms and example ms (each summed over the performance
cases, with the widest case's spread), the speedup over the baseline, both over PyTorch, the example's reward
(its speed term uses the speedup over the baseline), and whether it meets 1.5x. On the CPU nothing is timed:
the table then shows only correctness (Triton under the interpreter; HIP compiles, and cannot run).

    python bench/optimisation_baselines.py --platform cuda [--targets triton,hip] [--lanes 1]
"""

from __future__ import annotations

import argparse
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))

from kernelvault.contracts import Candidate, CaseTiming, Task, Verdict  # noqa: E402
from kernelvault.toolchain.lane_pool import LanePool  # noqa: E402
from kernelvault.toolchain.tasks import load_tasks  # noqa: E402
from kernelvault.toolchain.verify import Verifier, VerifyConfig  # noqa: E402

TARGET_RATIO = 1.5


def example_for(task: Task, target: str) -> Path:
    return ROOT / "examples" / target / f"{task.name.split('__', 1)[0]}.py"


def _ms(value: float | None) -> str:
    return f"{value:.4f}" if value is not None else "-"


def _times(timings: tuple[CaseTiming, ...]) -> tuple[float | None, str]:
    """Milliseconds summed over the performance cases, and the widest case's spread ((p75 - p25) / median)."""
    if not timings:
        return None, "-"
    return sum(t.candidate_ms for t in timings), f"{100 * max(t.candidate_spread for t in timings):.1f}%"


def _ratio(value: float | None) -> str:
    return f"{value:.2f}" if value is not None else "-"


def row(task: Task, target: str, verdict: Verdict) -> str:
    baseline = verdict.baseline
    base_ms, base_spread = _times(baseline.timings if baseline else ())
    example_ms, example_spread = _times(verdict.timings)
    ratio = verdict.speedup_over_baseline
    if verdict.failure_kind:
        outcome = f"{verdict.failure_kind}: {(verdict.failure_message or '')[:90]}"
    elif ratio is None:
        outcome = "correct (not timed)" if verdict.correct else "compiles (cannot run here)"
    else:
        outcome = "meets 1.5x" if ratio >= TARGET_RATIO else "UNDER 1.5x"
    reward = f"{verdict.reward.total:.2f}" if verdict.reward else "-"
    cells = [task.name, target, _ms(base_ms), base_spread, _ms(example_ms), example_spread, _ratio(ratio),
             _ratio(verdict.speedup), _ratio(baseline.speedup if baseline else None), reward, outcome]  # fmt: skip
    return "| " + " | ".join(cells) + " |"


HEADER = (
    "| task | target | baseline ms (sum over cases) | spread | example ms | spread | speedup over baseline "
    "| example over PyTorch | baseline over PyTorch | reward | outcome |"
)


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--platform", default="auto")
    parser.add_argument("--targets", default="triton,hip")
    parser.add_argument("--tasks", default="", help="only these optimisation tasks (comma-separated names)")
    parser.add_argument("--lanes", type=int, default=1, help="lanes on the GPU (their timings take turns)")
    parser.add_argument("--timeout-s", type=float, default=120.0)
    args = parser.parse_args()
    verifier = Verifier(VerifyConfig(platform=args.platform, timeout_s=args.timeout_s))
    loaded = load_tasks("bundled:optimise")
    chosen = set(filter(None, args.tasks.split(",")))
    jobs = [(task, target) for task in loaded.tasks for target in args.targets.split(",")
            if target in task.baselines and example_for(task, target).is_file()
            and (not chosen or task.name in chosen)]  # fmt: skip
    print(f"{len(jobs)} baseline(s) of {len(loaded.tasks)} optimisation task(s) on {verifier.choice.platform}, "
          f"against the bundled examples\n")  # fmt: skip
    print(HEADER)
    print("|---" * HEADER.count(" | ") + "|---|")
    with LanePool.for_verifier(verifier, lanes_per_gpu=args.lanes, cpu_lanes=args.lanes) as pool:
        futures = [(task, target, pool.submit(task, Candidate(task.task_id, target, example_for(task, target)
                                                               .read_text(), f"example:{target}")))  # type: ignore[arg-type]
                   for task, target in jobs]  # fmt: skip
        verdicts = [(task, target, future.result()) for task, target, future in futures]
    missing = 0
    for task, target, verdict in verdicts:
        print(row(task, target, verdict))
        ratio = verdict.speedup_over_baseline
        timed = verdict.timings and verdict.baseline and verdict.baseline.timings
        missing += bool(verdict.failure_kind) or bool(timed and (ratio is None or ratio < TARGET_RATIO))
    print(f"\n{len(verdicts) - missing} of {len(verdicts)} meet the target (correct, and where timed at least "
          f"{TARGET_RATIO}x slower than the example)")  # fmt: skip
    return 1 if missing else 0


if __name__ == "__main__":
    sys.exit(main())

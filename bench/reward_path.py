"""The RL reward path, side by side in one run: the reward service on a lane pool against today's path.

Issue #20: `kernelvault rl serve` verified each request in a fresh worker process (17 s per request for the
bundled rms_norm on the H200, against about 2 s in the corpus job's persistent lanes). This runs the same
requests through the same service code twice, one mode after the other on the same machine:

- `fresh`: the service's verify is `verify_once` (a pool of one in the fresh mode: a fresh worker process per request,
  what `rl serve` did before the lane pool);
- `pool`: the service's verify is a `LanePool`'s (persistent lanes on every visible GPU, or `--devices`),
  what `rl serve` does now; `pool:N` gives it N lanes per GPU (`rl serve --lanes-per-gpu N`);
- a suffix changes the verifier of a mode: `+shared` judges outputs in shared memory (on the device, on a GPU:
  `VerifyConfig.shared_outputs`), `+files` through files (neither: the default, shared on a CUDA GPU since
  2026-12-03, files before), `+percase` takes one turn alone on the device per performance case
  (`turn_staged_mb` 0, the way before a verification's cases shared one turn), e.g. `pool:4+files,pool:4`.

Requests: the bundled Triton examples (the correct ones, one per task), each `--repeats` times, interleaved,
sent through `RemoteVerifier` (HTTP, the trainers' client) with `--in-flight` at once. Printed: a Markdown
table of verifications per minute per mode and their ratio, then each task's speedup spread (min, median,
max over its repeats) per mode: a faster path must not change what it measures. Last, where a verification's
time goes in each mode: the median seconds of each stage the verdicts record, and of the check protocol's parts.

    python bench/reward_path.py --platform cuda [--repeats 4] [--in-flight 4] [--modes fresh,pool,pool:4]
"""

from __future__ import annotations

import argparse
import functools
import re
import statistics
import sys
import time
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))

from bench.verify_throughput import mode_options, option_settings, request_kinds  # noqa: E402
from kernelvault.contracts import Candidate, Task, Verdict  # noqa: E402
from kernelvault.pipelines.candidates import ExampleCandidates  # noqa: E402
from kernelvault.rl.reward_service import RemoteVerifier, RewardService, ServiceConfig  # noqa: E402
from kernelvault.toolchain.lane_pool import LanePool, verify_once  # noqa: E402
from kernelvault.toolchain.tasks import load_tasks  # noqa: E402
from kernelvault.toolchain.verify import Verifier, VerifyConfig  # noqa: E402


@dataclass
class ModeResult:
    mode: str
    seconds: float
    verdicts: list[tuple[Task, Verdict]]
    latencies: list[float]  # each request's seconds as its caller saw them (HTTP, queue, lane)
    lane_seconds: list[float]  # each device stage's seconds on its lane (pool modes only)

    @property
    def per_minute(self) -> float:
        return 60.0 * len(self.verdicts) / self.seconds


def requests(repeats: int) -> list[tuple[Task, Candidate]]:
    """The correct bundled Triton examples, one per task, `repeats` rounds interleaved."""
    loaded = load_tasks(None)
    examples = [
        attempt for attempt in ExampleCandidates("triton").attempts(loaded.tasks)
        if attempt.candidate.expected_failure is None
    ]  # fmt: skip
    return [(attempt.task, attempt.candidate) for _ in range(repeats) for attempt in examples]


def run_mode(mode: str, verifier: Verifier, work: list[tuple[Task, Candidate]], in_flight: int,
             devices: str | None) -> ModeResult:  # fmt: skip
    kind, _, lanes = mode_options(mode)[0].partition(":")
    pool = LanePool.for_verifier(verifier, devices, int(lanes or 1)) if kind == "pool" else None
    verify = pool.verify if pool is not None else functools.partial(verify_once, verifier)
    service = RewardService(
        verify, {"platform": verifier.choice.platform}, ServiceConfig(port=0, workers=in_flight)
    )
    url = service.start()
    remote = RemoteVerifier(url, poll_s=5.0)
    try:
        latencies: list[float] = []

        def call(item: tuple[Task, Candidate]) -> Verdict:
            sent = time.perf_counter()
            verdict = remote.verify(*item)
            latencies.append(time.perf_counter() - sent)
            return verdict

        started = time.perf_counter()
        with ThreadPoolExecutor(in_flight) as callers:
            verdicts = list(callers.map(call, work))
        seconds = time.perf_counter() - started
    finally:
        service.stop()
        if pool is not None:
            pool.close()
    lane_seconds = [job.finished - job.started for job in pool.timeline] if pool is not None else []
    return ModeResult(mode, seconds, [(task, verdict) for (task, _), verdict in zip(work, verdicts, strict=True)],
                      latencies, lane_seconds)  # fmt: skip


# The check stage's log ends with the protocol's costs (`ProtocolCosts.summary`, toolchain/judge.py).
PROTOCOL_PARTS = {
    "reading": re.compile(r"reading ([\d.]+) s"),
    "comparing": re.compile(r"comparing ([\d.]+) s"),
    "reference": re.compile(r"reference ([\d.]+) s"),
    "gate wait": re.compile(r"waited ([\d.]+) s"),
}
STAGES = ("parse", "static", "compile", "check", "time", "reward")


def breakdown(results: list[ModeResult]) -> list[str]:
    """Median seconds per verification of each recorded stage and protocol part, per mode."""
    kinds = sorted({kind for result in results for kind in _request_kinds(result)})
    rows = {name: [] for name in ("request (caller)", "lane", *STAGES, *PROTOCOL_PARTS, *kinds)}
    for result in results:
        per_stage: dict[str, list[float]] = {name: [] for name in rows}
        per_stage["request (caller)"] = result.latencies
        per_stage["lane"] = result.lane_seconds
        for _, verdict in result.verdicts:
            for record in verdict.stages:
                if record.name in per_stage and record.outcome != "skipped":
                    per_stage[record.name].append(record.seconds)
                if record.name == "check":
                    for part, pattern in PROTOCOL_PARTS.items():
                        found = pattern.search(record.log)
                        per_stage[part].append(float(found.group(1)) if found else 0.0)
                    spent = request_kinds(record.log)
                    for kind in kinds:
                        per_stage[kind].append(spent.get(kind, 0.0))
        for name in rows:
            rows[name].append(f"{statistics.median(per_stage[name]):.2f}" if per_stage[name] else "-")
    lines = ["", "Where a verification's time goes: median seconds per verification (check protocol parts are "
             "inside the check stage; gate wait is time a lane waited for another lane's timing; "
             "candidate.* and reference.* are the seconds of each kind of request, answers included):", "",
             "| stage | " + " | ".join(result.mode for result in results) + " |",
             "|---|" + "---|" * len(results)]  # fmt: skip
    lines += [f"| {name} | " + " | ".join(cells) + " |" for name, cells in rows.items()]
    return lines


def _request_kinds(result: ModeResult) -> set[str]:
    return {kind for _, verdict in result.verdicts for record in verdict.stages if record.name == "check"
            for kind in request_kinds(record.log)}  # fmt: skip


def _spread(values: list[float]) -> str:
    if not values:
        return "-"
    return f"{min(values):.3f} / {statistics.median(values):.3f} / {max(values):.3f}"


def report(results: list[ModeResult], in_flight: int, platform: str) -> str:
    base = results[0]
    lines = [
        f"| mode | verifications | in flight | seconds | per minute | × {base.mode} | correct |",
        "|---|---|---|---|---|---|---|",
    ]
    for result in results:
        correct = sum(1 for _, verdict in result.verdicts if verdict.correct)
        lines.append(f"| {result.mode} | {len(result.verdicts)} | {in_flight} | {result.seconds:.1f} | "
                     f"{result.per_minute:.1f} | {result.per_minute / base.per_minute:.2f} | {correct} |")  # fmt: skip
    names = sorted({task.name for task, _ in base.verdicts})
    lines += ["", f"Speedup over PyTorch per task, min / median / max over its repeats ({platform}):", ""]
    lines += ["| task | " + " | ".join(result.mode for result in results) + " |",
              "|---|" + "---|" * len(results)]  # fmt: skip
    for name in names:
        cells = [
            _spread([v.speedup for task, v in result.verdicts if task.name == name and v.speedup is not None])
            for result in results
        ]
        lines.append(f"| {name} | " + " | ".join(cells) + " |")
    return "\n".join(lines + breakdown(results))


def main() -> int:
    parser = argparse.ArgumentParser(
        description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter
    )
    parser.add_argument("--platform", default=None, help="cpu, cuda or rocm (default: detect)")
    parser.add_argument("--repeats", type=int, default=4)
    parser.add_argument("--in-flight", type=int, default=4)
    parser.add_argument("--modes", default="fresh,pool",
                        help="fresh, pool, pool:N (N lanes per GPU); +shared: outputs judged in shared memory "
                             "(on the device); +files: through files; +percase: one turn alone on the device per performance case")  # fmt: skip
    parser.add_argument("--devices", default=None, help="the pool's GPUs (default: every visible one)")
    parser.add_argument("--timeout-s", type=float, default=120.0)
    args = parser.parse_args()
    verifier = Verifier(VerifyConfig(platform=args.platform, timeout_s=args.timeout_s))
    work = requests(args.repeats)

    def mode_verifier(mode: str) -> Verifier:
        return Verifier(
            VerifyConfig(platform=args.platform, timeout_s=args.timeout_s, **option_settings(mode))
        )

    print(f"{len(work)} requests ({len(work) // args.repeats} examples × {args.repeats}), {args.in_flight} in "
          f"flight, platform {verifier.choice.platform} ({verifier.choice.device})\n", flush=True)  # fmt: skip
    results = []
    for mode in args.modes.split(","):
        results.append(run_mode(mode, mode_verifier(mode), work, args.in_flight, args.devices))
        # Each mode's figure as soon as it exists: a call cut by its time limit still leaves the modes it ran.
        print(
            f"{mode}: {len(results[-1].verdicts)} verifications in {results[-1].seconds:.1f} s, "
            f"{results[-1].per_minute:.1f} per minute",
            flush=True,
        )
    print()
    print(report(results, args.in_flight, verifier.choice.platform))
    return 0


if __name__ == "__main__":
    sys.exit(main())

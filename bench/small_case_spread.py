"""Small-case timing on a GPU, one run side by side: the timing protocols (`--compare protocols`, the default) or one
call per sample against the calls per sample the verifier chooses (`--compare calls`, #24 item 3), on every
performance case of the bundled Triton examples.

For each case: the reference's pilot (`PILOT_SAMPLES` one-call samples) gives the case's calls per sample
(`timing.calls_for`, at `--sample-ms`, the verifier's default on a GPU). Then:

- protocols: the example and the reference are each timed at that many calls per sample under the legacy protocol
  (`rotate`: a few fixed input sets), under the verifier's (`fresh`: new values for every call, written after the
  sample's L2 flush, every output checksummed, the device synchronised after each sample) and under `cold` (the
  same, with the values written before the flush), `--rounds` times in turn, as the workers time them
  (`timing.time_staged`); the checksums of the fresh runs are compared as the parent compares them. Printed: each
  protocol's speedup (median over the rounds), the fresh ones' ratios to rotate, and each side's spread
  ((p75 - p25) / median). Targets: the fresh speedup within 2% of the rotating one, spreads within 3%.
- calls: one call per sample and the chosen calls per sample, `--repetitions` samples each, alternating. The
  medians of the two methods differ by design on small cases (only a sample's first call follows the L2 flush).

    python bench/small_case_spread.py [--compare protocols|calls] [--tasks relu,softmax] [--sample-ms 0.5]
                                      [--repetitions 100] [--rounds 3] [--input-sets 4]
"""

from __future__ import annotations

import argparse
import secrets
import statistics
import sys
from collections.abc import Callable, Sequence
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))

import torch  # noqa: E402

from bench.bundled_cases import INPUT_SETS, SEED, bundled_case, publish  # noqa: E402
from kernelvault.toolchain.sandboxed.timed_values import Tolerance, compare_checksums  # noqa: E402
from kernelvault.toolchain.sandboxed.timing import (  # noqa: E402
    DEFAULT_GPU_SAMPLE_MS,
    PILOT_SAMPLES,
    RandomKeep,
    TimingStats,
    calls_for,
    time_on_device,
    time_staged,
)
from kernelvault.toolchain.tasks import load_task_file  # noqa: E402

TARGET_SPREAD = 0.03
TARGET_AGREEMENT = 0.02  # the fresh protocol's speedup within this of the rotating one's
# rotate: the legacy fixed input sets; fresh: the verifier's (values written after the flush); cold: fresh values
# written before the flush (what the verifier did until 2026-12-07)
PROTOCOLS = ("rotate", "fresh", "cold")


def bundled_names() -> list[str]:
    return sorted(path.stem for path in (ROOT / "examples" / "triton").glob("*.py")
                  if (ROOT / "tasks" / path.name).is_file())  # fmt: skip


def _timed(model: torch.nn.Module, input_sets: list[list[object]], calls: int, samples: int,
           device: torch.device) -> TimingStats:  # fmt: skip
    return time_on_device(
        lambda inputs: model(*inputs), input_sets, samples, 10, device, calls_per_sample=calls
    )


def case_rows(
    name: str, device: torch.device, sample_ms: float, repetitions: int, set_count: int
) -> list[str]:
    task = load_task_file(ROOT / "tasks" / f"{name}.py")
    rows = []
    for case in task.performance_cases:
        with torch.no_grad():
            built = bundled_case(name, case, device, set_count)
            candidate, input_sets = built.example, built.input_sets
            reference = built.harness.reference(built.init, seed=SEED)
            pilot = _timed(reference, input_sets, 1, PILOT_SAMPLES, device)
            calls = calls_for(pilot.median_ms, sample_ms)
            one = (
                _timed(candidate, input_sets, 1, repetitions, device),
                _timed(reference, input_sets, 1, repetitions, device),
            )
            chosen = (_timed(candidate, input_sets, calls, repetitions, device),
                      _timed(reference, input_sets, calls, repetitions, device))  # fmt: skip
        worst = max(chosen[0].spread, chosen[1].spread)
        rows.append(
            f"| {name} | {case.name} | {calls} | {one[0].median_ms:.4f} | {one[0].spread:.1%} | {one[1].spread:.1%} "
            f"| {one[1].median_ms / one[0].median_ms:.2f} | {chosen[0].median_ms:.4f} | {chosen[0].spread:.1%} "
            f"| {chosen[1].spread:.1%} | {chosen[1].median_ms / chosen[0].median_ms:.2f} "
            f"| {'yes' if worst <= TARGET_SPREAD else 'NO'} |"
        )
        torch.cuda.empty_cache()
    return rows


def _runner(model: torch.nn.Module) -> Callable[[Sequence[object]], object]:
    return lambda call: model(*call)


def _protocol_pair(candidate: torch.nn.Module, reference: torch.nn.Module, input_sets: list[list[object]],
                   calls: int, samples: int, device: torch.device, protocol: str,
                   tolerance: Tolerance) -> tuple[TimingStats, TimingStats, str]:  # fmt: skip
    """The example, then the reference, timed as the workers time them under `protocol` (one of `PROTOCOLS`);
    with fresh inputs, whether their checksums agree (as the parent judges them)."""
    seed = secrets.randbits(63)
    inputs, after_flush = ("rotate", False) if protocol == "rotate" else ("fresh", protocol == "fresh")
    mine = time_staged(_runner(candidate), input_sets, repetitions=samples, warmup=10, device=device,
                       calls_per_sample=calls, inputs=inputs, timing_seed=seed, keep=RandomKeep(), strict=True,
                       fresh_after_flush=after_flush)  # fmt: skip
    theirs = time_staged(_runner(reference), input_sets, repetitions=samples, warmup=10, device=device,
                         calls_per_sample=mine.calls_per_sample, inputs=inputs, timing_seed=seed,
                         keep=sorted(mine.outputs), tolerance=tolerance, fresh_after_flush=after_flush)  # fmt: skip
    if inputs != "fresh":
        return mine, theirs, "-"
    problem, checked = compare_checksums(mine.checksums, theirs.checksums)
    return mine, theirs, f"{checked} ok" if problem is None else f"FAILED: {problem[:60]}"


def protocol_rows(name: str, device: torch.device, sample_ms: float, repetitions: int, set_count: int,
                  rounds: int) -> list[str]:  # fmt: skip
    task = load_task_file(ROOT / "tasks" / f"{name}.py")
    rows = []
    for case in task.performance_cases:
        with torch.no_grad():
            built = bundled_case(name, case, device, set_count)
            candidate, input_sets = built.example, built.input_sets
            reference = built.harness.reference(built.init, seed=SEED)
            pilot = time_staged(_runner(reference), input_sets, repetitions=PILOT_SAMPLES, warmup=10,
                                device=device, timing_seed=secrets.randbits(63))  # as the reference's worker  # fmt: skip
            calls = calls_for(pilot.median_ms, sample_ms)
            tolerance = Tolerance(task.atol, task.rtol)  # None: the dtype's default, as the verifier's
            runs: dict[str, list[tuple[TimingStats, TimingStats, str]]] = {name: [] for name in PROTOCOLS}
            for _ in range(rounds):  # in turn, so that a drift of the clock falls on every protocol
                for protocol in PROTOCOLS:
                    runs[protocol].append(_protocol_pair(candidate, reference, input_sets, calls, repetitions,
                                                         device, protocol, tolerance))  # fmt: skip
        speedups = {inputs: statistics.median(ref.median_ms / ex.median_ms for ex, ref, _ in pairs)
                    for inputs, pairs in runs.items()}  # fmt: skip
        spreads = {inputs: (max(ex.spread for ex, _, _ in pairs), max(ref.spread for _, ref, _ in pairs))
                   for inputs, pairs in runs.items()}  # fmt: skip
        ratio = speedups["fresh"] / speedups["rotate"]
        cold_ratio = speedups["cold"] / speedups["rotate"]
        checks = "; ".join(
            sorted({check for protocol in ("fresh", "cold") for _, _, check in runs[protocol]})
        )
        used = sorted({ex.calls_per_sample for ex, _, _ in runs["fresh"]})
        met = (
            abs(ratio - 1) <= TARGET_AGREEMENT
            and max(spreads["fresh"]) <= TARGET_SPREAD
            and "FAILED" not in checks
        )
        rows.append(
            f"| {name} | {case.name} | {calls}" + (f" (fresh: {'/'.join(map(str, used))})" if used != [calls] else "")
            + f" | {speedups['rotate']:.3f} | {speedups['fresh']:.3f} | {ratio:.3f} | {cold_ratio:.3f} "
            f"| {spreads['rotate'][0]:.1%} / {spreads['rotate'][1]:.1%} | {spreads['fresh'][0]:.1%} / {spreads['fresh'][1]:.1%} "
            f"| {spreads['cold'][0]:.1%} / {spreads['cold'][1]:.1%} "
            f"| {checks} | {'yes' if met else 'NO'} |"
        )  # fmt: skip
        torch.cuda.empty_cache()
    return rows


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--compare", choices=("protocols", "calls"), default="protocols")
    parser.add_argument("--tasks", default=",".join(bundled_names()))
    parser.add_argument("--sample-ms", type=float, default=DEFAULT_GPU_SAMPLE_MS)
    parser.add_argument("--repetitions", type=int, default=100)
    parser.add_argument("--rounds", type=int, default=3, help="protocols: timings of each protocol, in turn")
    # The verifier rotates over 4; more shows whether a case's spread comes from its rotated working set
    # straddling the L2 (the calls of a sample find a varying part of it still cached).
    parser.add_argument("--input-sets", type=int, default=INPUT_SETS)
    args = parser.parse_args()
    if not torch.cuda.is_available():
        print("small_case_spread needs a GPU")
        return 1
    device = torch.device("cuda")
    lines = [
        f"Device: {torch.cuda.get_device_name()}, torch {torch.__version__}; {args.repetitions} samples, "
        f"sample {args.sample_ms} ms, {args.input_sets} input sets"
        + (f", {args.rounds} rounds of each protocol" if args.compare == "protocols" else ""),
        "",
    ]
    if args.compare == "protocols":
        lines += [
            "| task | case | calls / sample | rotate: speedup | fresh: speedup | fresh / rotate | cold / rotate "
            "| rotate spread (example / ref) | fresh spread (example / ref) | cold spread (example / ref) "
            "| fresh and cold checksums | fresh: within 2%, ≤ 3% |",
            "|---|---|---|---|---|---|---|---|---|---|---|---|",
        ]
        for name in args.tasks.split(","):
            rows = protocol_rows(name, device, args.sample_ms, args.repetitions, args.input_sets, args.rounds)
            print(
                "\n".join(rows), file=sys.stderr, flush=True
            )  # a run cut at the call's limit keeps what it measured
            lines += rows
        target = f"fresh speedup within {TARGET_AGREEMENT:.0%} of rotate and spread ≤ {TARGET_SPREAD:.0%}"
        filename = "timing_protocols.md"
    else:
        lines += [
            "| task | case | calls / sample | 1 call: example ms | spread | ref spread | speedup "
            "| chosen: example ms | spread | ref spread | speedup | both ≤ 3% |",
            "|---|---|---|---|---|---|---|---|---|---|---|---|",
        ]
        for name in args.tasks.split(","):
            lines += case_rows(name, device, args.sample_ms, args.repetitions, args.input_sets)
        target = f"within {TARGET_SPREAD:.0%} spread on both sides"
        filename = "small_case_spread.md"
    met = sum(line.endswith("| yes |") for line in lines)
    total = sum(line.endswith(("| yes |", "| NO |")) for line in lines)
    lines += ["", f"{met} of {total} performance cases: {target}"]
    publish("\n".join(lines) + "\n", filename)
    return 0 if met == total else 1


if __name__ == "__main__":
    sys.exit(main())

"""The reward path's timing on a real GPU (marked `gpu`; bench/gpu_session.sh on the H200, never in CI).

Every bundled Triton example is verified on one lane under the corpus's protocol (`full`) once, then under the
reward path's (`reward_verify_config`, timing "rl": reference figures reused, the RL profile) four times in a row.
The verdicts must be the full protocol's; every timed call of every verification must still be checksummed
(a reused figure saves the reference's clock, not its results: the untimed reference run on the device is what
this file exercises that the CPU cannot); and the speedups are written side by side to
$KV_RESULTS_DIR/reward_timing.md (the 3% agreement is `bench/reward_replay.py`'s to measure on real answers).
"""

from __future__ import annotations

import os
import statistics
from pathlib import Path

import pytest

torch = pytest.importorskip("torch")
pytestmark = [
    pytest.mark.gpu,
    pytest.mark.skipif(not torch.cuda.is_available(), reason="needs a CUDA GPU"),
]

from kernelvault.contracts import Candidate  # noqa: E402
from kernelvault.toolchain.reference_times import REFERENCE_TIMES  # noqa: E402
from kernelvault.toolchain.tasks import load_task_file  # noqa: E402
from kernelvault.toolchain.verify import Verifier, VerifyConfig, reward_verify_config  # noqa: E402
from kernelvault.toolchain.worker_lane import WorkerLane  # noqa: E402

ROOT = Path(__file__).resolve().parents[2]


def test_the_reward_paths_timing_keeps_the_full_protocols_verdicts_and_checks_every_timed_call() -> None:
    names = sorted(path.stem for path in (ROOT / "examples" / "triton").glob("*.py")
                   if (ROOT / "tasks" / path.name).is_file())  # fmt: skip
    full = Verifier(VerifyConfig(platform="cuda", timeout_s=120))
    rl = Verifier(reward_verify_config("cuda", 120.0, "rl"))
    REFERENCE_TIMES.clear()
    rows = ["| task | full: speedup | rl: speedups (reference timed or reused, profile) | rl / full, median |",
            "|---|---|---|---|"]  # fmt: skip
    reused_somewhere = 0
    lane = WorkerLane(device="0")
    try:
        for name in names:
            task = load_task_file(ROOT / "tasks" / f"{name}.py")
            candidate = Candidate(
                task.task_id, "triton", (ROOT / "examples" / "triton" / f"{name}.py").read_text(), "test"
            )
            baseline = full.complete(full.prepare(task, candidate), lane)
            assert baseline.correct is True, (name, baseline.failure_message)
            runs = [rl.complete(rl.prepare(task, candidate), lane) for _ in range(4)]
            for verdict in runs:
                assert (verdict.correct, verdict.failure_kind) == (True, None), (
                    name,
                    verdict.failure_message,
                )
                for timing in verdict.timings:
                    assert timing.checked_calls == timing.repetitions * timing.calls_per_sample, (
                        name,
                        timing,
                    )
                    assert timing.timing_profile in ("full", "rl") and timing.reference_timing in (
                        "timed",
                        "reused",
                    )
            reused_somewhere += any(t.reference_timing == "reused" for v in runs for t in v.timings)
            speedups = [v.speedup for v in runs if v.speedup]
            ratio = (
                statistics.median(s / baseline.speedup for s in speedups)
                if speedups and baseline.speedup
                else None
            )
            described = ", ".join(
                f"{v.speedup or 0:.2f} ({'/'.join(t.reference_timing or '-' for t in v.timings)}, "
                f"{'/'.join(t.timing_profile or '-' for t in v.timings)})" for v in runs
            )  # fmt: skip
            rows.append(f"| {name} | {baseline.speedup or 0:.2f} | {described} | "
                        f"{'-' if ratio is None else f'{ratio:.3f}'} |")  # fmt: skip
    finally:
        lane.close()
        table = (f"Device: {torch.cuda.get_device_name()}; figures reused {REFERENCE_TIMES.reused}, reference "
                 f"timings {REFERENCE_TIMES.timed}, drifts {REFERENCE_TIMES.drifts}\n\n" + "\n".join(rows) + "\n")  # fmt: skip
        print("\n" + table)
        if results := os.environ.get("KV_RESULTS_DIR"):
            Path(results, "reward_timing.md").write_text(table)
        REFERENCE_TIMES.clear()
    # two agreeing timings make a figure: on a quiet device most cases get there within four verifications
    assert reused_somewhere >= len(names) // 2, (reused_somewhere, len(names))

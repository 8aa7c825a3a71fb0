"""Hostile HIP candidates on a real GPU (marked `gpu`): each is caught with the reason its file names.

The HIP path shares the Triton path's worker and its integrity checks; what differs is how launches are
observed (the `kernelvault.hip` loader reports each call of an `extern "C"` launch function). These
candidates attack that seam: raw ctypes calls past the loader, a side stream, a second unbuilt source,
as well as the usual torch compute, caching, in-place and half-written outputs.
"""

from __future__ import annotations

import os
from pathlib import Path

import pytest

from kernelvault.pipelines.candidates import expected_options, outcome
from kernelvault.toolchain.lane_pool import verify_once

torch = pytest.importorskip("torch")
pytestmark = [pytest.mark.gpu, pytest.mark.skipif(not torch.cuda.is_available(), reason="needs a GPU")]

ROOT = Path(__file__).resolve().parents[2]
SUITE = ROOT / "tests" / "adversarial" / "hip_hostile"


def test_hostile_hip_candidates_are_caught_with_their_reason(tmp_path: Path) -> None:
    from kernelvault.contracts import Candidate
    from kernelvault.toolchain.tasks import load_task_file
    from kernelvault.toolchain.verify import Verifier, VerifyConfig

    verifier = Verifier(VerifyConfig(timeout_s=60.0, hip_cache=tmp_path / "hip"))
    lines = ["| candidate | expected | got | reward |", "|---|---|---|---|"]
    failures = []
    for path in sorted(SUITE.glob("*.py")):
        task = load_task_file(ROOT / "tasks" / f"{path.stem.split('__')[1]}.py")
        verdict = verify_once(
            verifier, task, Candidate(task.task_id, "hip", path.read_text(), f"suite:{path.name}")
        )
        got = outcome(verdict.failure_kind, verdict.failure_message)
        reward = verdict.reward.total if verdict.reward else 0.0
        lines.append(f"| {path.name} | {' or '.join(expected_options(path))} | {got} | {reward:.2f} |")
        if got not in expected_options(path) or verdict.correct is True or reward > 0.4:
            failures.append((path.name, got, verdict.failure_message))
    table = "\n".join(lines) + "\n"
    print(table)
    if os.environ.get("KV_RESULTS_DIR"):
        Path(os.environ["KV_RESULTS_DIR"], "gpu_hip_adversarial.md").write_text(table)
    assert not failures, failures

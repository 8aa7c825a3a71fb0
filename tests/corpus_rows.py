"""Hand-made corpus rows for tests of the corpus stages (no verification needed to build them)."""

from __future__ import annotations

from pathlib import Path

from kernelvault.contracts import (
    Candidate,
    RewardBreakdown,
    RunEnvironment,
    StageRecord,
    Verdict,
    content_hash,
)
from kernelvault.corpus.schema import attempt_row
from kernelvault.toolchain.reward import graded_reward
from kernelvault.toolchain.tasks import load_task_file

ROOT = Path(__file__).resolve().parents[1]


def row_for(task_name: str, code: str, correct: bool, sample: int, speedup: float | None = None,
            run_id: str = "run1", platform: str = "cpu", model: str | None = None) -> dict:  # fmt: skip
    task = load_task_file(ROOT / "tasks" / f"{task_name}.py", origin="bundled")
    kind = None if correct else "mismatch"
    reward = graded_reward(True, correct, speedup, kind)
    verdict = Verdict(
        task_id=task.task_id, target="triton", candidate_hash=content_hash(code), code=code, compiled=True,
        correct=correct, failure_kind=kind, failure_message=None if correct else "case c0: mismatch",
        stages=(StageRecord("parse", "passed", 0.001), StageRecord("check", "passed" if correct else "failed", 1.0)),
        speedup=speedup, kernels=("kernel",),
        environment=RunEnvironment(platform, "test device", "gfx942", {"triton": "3.9.0"}),
        reward=RewardBreakdown(reward.compile, reward.correct, reward.speed, reward.total),
    )  # fmt: skip
    candidate = Candidate(task.task_id, "triton", f"```python\n{code}```", f"test:{task_name}/{sample}")
    return attempt_row(run_id, task, candidate, verdict, sample_index=sample, model=model)


def example_code(name: str) -> str:
    return (ROOT / "examples" / "triton" / f"{name}.py").read_text()

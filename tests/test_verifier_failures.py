"""Our own failures are recorded as infrastructure_error verdicts and never stop a run."""

from __future__ import annotations

from pathlib import Path

from kernelvault.contracts import Candidate
from kernelvault.pipelines.candidates import Attempt
from kernelvault.pipelines.corpus_job import run_corpus_job
from kernelvault.pipelines.engine import EngineOptions
from kernelvault.toolchain.lane_pool import verify_once
from kernelvault.toolchain.tasks import LoadedTasks, load_task_file, parse_task
from kernelvault.toolchain.verify import Verifier, VerifyConfig

ROOT = Path(__file__).resolve().parents[1]


def test_a_worker_that_cannot_start_is_an_infrastructure_error(tmp_path: Path) -> None:
    task = load_task_file(ROOT / "tasks" / "relu.py")
    candidate = Candidate(
        task.task_id, "triton", (ROOT / "examples" / "triton" / "relu.py").read_text(), "test"
    )
    verifier = Verifier(VerifyConfig(platform="cpu", python=str(tmp_path / "no-such-python")))

    class TwoAttempts:
        description = "two attempts"

        def attempts(self, tasks):  # noqa: ANN001, ANN202
            yield Attempt(task, candidate, sample_index=0)
            yield Attempt(task, candidate, sample_index=1)

        def identity(self):  # noqa: ANN202
            return {"kind": "test"}

    summary = run_corpus_job(LoadedTasks(tasks=[task]), TwoAttempts(), verifier, tmp_path / "out", "triton",
                             EngineOptions(workers=1), progress=False)  # fmt: skip
    # The run went on after the first failure; both attempts are left for a resume, not written as rows.
    assert len(summary.retry_later) == 2 and "no-such-python" in summary.retry_later[0]
    assert summary.attempts == 0 and not summary.shards
    verdict = verify_once(verifier, task, candidate)
    assert verdict.failure_kind == "infrastructure_error" and verdict.reward is not None
    assert verdict.reward.total == 0.0
    assert "no-such-python" in (verdict.failure_message or "")


def test_a_reference_that_raises_is_blamed_on_the_task_not_the_candidate() -> None:
    source = (ROOT / "tasks" / "relu.py").read_text().replace("return torch.relu(x)", "return x @ x")
    task = parse_task(source, "broken_relu", "test")
    candidate = Candidate(
        task.task_id, "triton", (ROOT / "examples" / "triton" / "relu.py").read_text(), "test"
    )
    verdict = verify_once(Verifier(VerifyConfig(platform="cpu")), task, candidate)
    assert verdict.failure_kind == "infrastructure_error"
    assert "reference failed" in (verdict.failure_message or "")

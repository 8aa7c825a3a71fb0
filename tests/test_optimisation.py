"""Optimisation tasks (issue #22, part 1): a reference plus a baseline kernel that a candidate must match and beat."""

from __future__ import annotations

import contextlib
import io
from pathlib import Path

import datasets
import pytest

from kernelvault.cli import main
from kernelvault.contracts import Candidate, CaseTiming, StageRecord, Verdict, content_hash
from kernelvault.toolchain.extract import extract_code
from kernelvault.toolchain.lane_pool import LanePool, verify_once
from kernelvault.toolchain.optimisation import against_baseline
from kernelvault.toolchain.reference_check import check_tasks
from kernelvault.toolchain.reward import speed_bonus
from kernelvault.toolchain.tasks import TaskFormatError, load_tasks, parse_task
from kernelvault.toolchain.verify import Verifier, VerifyConfig

ROOT = Path(__file__).resolve().parents[1]
RELU_EXAMPLE = (ROOT / "examples" / "triton" / "relu.py").read_text()
ONE_PER_PROGRAM = '''"""ReLU, deliberately slow: one element per program (scalar loads, a launch-sized grid)."""

import torch
import torch.nn as nn
import triton
import triton.language as tl


@triton.jit
def relu_one_kernel(x_ptr, y_ptr):
    i = tl.program_id(0).to(tl.int64)
    x = tl.load(x_ptr + i)
    tl.store(y_ptr + i, tl.where(x < 0, 0.0, x))


class ModelNew(nn.Module):
    def forward(self, x: torch.Tensor) -> torch.Tensor:
        x = x.contiguous()
        y = torch.empty(x.shape, device=x.device, dtype=x.dtype)
        if x.numel():
            relu_one_kernel[(x.numel(),)](x, y)
        return y
'''


def _suite(root: Path, name: str, baseline: str) -> Path:
    """A folder of one optimisation task (`relu__NAME`, the reference beside it with small correctness cases:
    the baseline runs one program per element, and the CPU's interpreter runs each in NumPy)."""
    relu = (ROOT / "tasks" / "relu.py").read_text()
    for case in ('        {"batch": 3, "dim": 1000},\n', '        {"batch": 33, "dim": 4097},\n'):
        relu = relu.replace(case, "")
    (root / "relu.py").write_text(relu)
    suite = root / "optimise"
    suite.mkdir()
    (suite / f"relu__{name}.triton.py").write_text(baseline)
    return suite


@pytest.fixture(scope="module")
def good(tmp_path_factory: pytest.TempPathFactory) -> Path:
    return _suite(tmp_path_factory.mktemp("good"), "one_per_program", ONE_PER_PROGRAM)


@pytest.fixture(scope="module")
def broken(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """Its baseline copies the input: not a ReLU."""
    return _suite(tmp_path_factory.mktemp("broken"), "wrong_baseline",
                  ONE_PER_PROGRAM.replace("tl.where(x < 0, 0.0, x)", "x"))  # fmt: skip


@pytest.fixture(scope="module")
def verifier() -> Verifier:
    return Verifier(VerifyConfig(platform="cpu"))


def _only_task(folder: Path):
    loaded = load_tasks(str(folder))
    assert not loaded.errors and len(loaded.tasks) == 1
    return loaded.tasks[0]


def test_a_task_file_names_its_baselines_and_they_are_part_of_its_identity(good: Path) -> None:
    task = _only_task(good)
    assert set(task.baselines) == {"triton"} and "relu_one_kernel" in task.baselines["triton"]
    assert parse_task(task.source, task.name, "test").baselines == task.baselines  # embedded in its text
    plain = parse_task((ROOT / "tasks" / "relu.py").read_text(), "relu", "bundled")
    assert plain.baselines == {} and plain.task_id != task.task_id  # a changed baseline is another task
    assert task.task_id == content_hash(task.source)


@pytest.mark.parametrize(
    ("literal", "message"),
    [
        ('{"cuda": "x"}', "names target 'cuda'; targets are triton, hip"),
        ('{"triton": ""}', "must be the baseline's source, a non-empty string"),
        ('{"triton": open("b.py").read()}', "must be a literal dict"),
        ("{}", "must be a non-empty dict"),
    ],
)
def test_malformed_baselines_are_refused_with_one_line(literal: str, message: str) -> None:
    source = (ROOT / "tasks" / "relu.py").read_text() + f"\nKERNELVAULT_BASELINES = {literal}\n"
    with pytest.raises(TaskFormatError, match="KERNELVAULT_BASELINES") as error:
        parse_task(source, "relu", "test")
    assert message in str(error.value) and "\n" not in str(error.value)


def test_a_correct_candidate_is_judged_with_the_baseline_verified_first(
    verifier: Verifier, good: Path
) -> None:
    task = _only_task(good)
    verdict = verify_once(verifier, task, Candidate(task.task_id, "triton", RELU_EXAMPLE, "file:relu"))
    assert verdict.correct is True and verdict.failure_kind is None
    assert verdict.baseline is not None
    assert verdict.baseline.code_hash == content_hash(extract_code(task.baselines["triton"]).code or "")
    # The CPU times nothing: no speedup of either kind, and the reward is compile + correct.
    assert verdict.speedup_over_baseline is None and verdict.speedup is None
    assert verdict.reward is not None and verdict.reward.total == pytest.approx(1.4)


def test_a_baseline_that_is_not_correct_fails_the_task_not_the_candidate(
    verifier: Verifier, broken: Path
) -> None:
    task = _only_task(broken)
    verdict = verify_once(verifier, task, Candidate(task.task_id, "triton", RELU_EXAMPLE, "file:relu"))
    assert (
        verdict.failure_kind == "infrastructure_error"
    )  # never a verdict on the candidate: retried on resume
    assert "the task's triton baseline does not pass (mismatch" in (verdict.failure_message or "")
    # A candidate that fails its own CPU stages is judged as it is: the baseline is not needed for that.
    unparsable = verify_once(verifier, task, Candidate(task.task_id, "triton", "no code here", "file:prose"))
    assert unparsable.failure_kind == "parse_error" and unparsable.baseline is None


def _timed(case_ms: dict[str, float], correct: bool = True) -> Verdict:
    timings = tuple(CaseTiming(case, ms, 1.0, 0.01, 0.01, 100) for case, ms in case_ms.items())
    stages = (StageRecord("reward", "passed", 0.0, "total"),)
    return Verdict("t", "triton", "h", "code", True, correct, None if correct else "mismatch", None, stages,
                   timings=timings, speedup=1.0)  # fmt: skip


def test_the_speed_term_is_the_speedup_over_the_baseline_summed_over_the_cases_both_timed() -> None:
    baseline = _timed({"p0": 4.0, "p1": 8.0})
    candidate = _timed({"p0": 1.0, "p1": 2.0})
    judged = against_baseline(candidate, baseline)
    assert judged.speedup_over_baseline == pytest.approx(12.0 / 3.0)
    assert judged.reward is not None and judged.reward.speed == pytest.approx(speed_bonus(4.0))
    assert judged.speedup == 1.0  # over PyTorch, kept beside it
    assert judged.baseline is not None and judged.baseline.timings == baseline.timings
    slower = against_baseline(_timed({"p0": 8.0, "p1": 16.0}), baseline)
    assert slower.speedup_over_baseline == pytest.approx(0.5) and slower.reward.speed == 0.0
    wrong = against_baseline(_timed({"p0": 1.0, "p1": 2.0}, correct=False), baseline)
    assert wrong.speedup_over_baseline is None and wrong.reward.total == pytest.approx(0.4)
    partial = against_baseline(candidate, _timed({"p0": 4.0}))  # a case the baseline was not timed on
    assert partial.speedup_over_baseline is None


def test_the_lane_pool_runs_the_baseline_on_the_candidates_lane(verifier: Verifier, good: Path) -> None:
    task = _only_task(good)
    with LanePool(verifier, ("cpu",)) as pool:
        verdict = pool.verify(task, Candidate(task.task_id, "triton", RELU_EXAMPLE, "file:relu"))
        jobs = pool.lanes[0].stats()["candidate"].jobs
    assert verdict.correct is True and verdict.baseline is not None
    assert jobs == 2  # the baseline, then the candidate, in the same persistent worker


def test_rows_carry_the_baseline_and_tasks_check_verifies_it(
    tmp_path: Path, good: Path, broken: Path
) -> None:
    examples = tmp_path / "examples" / "triton"
    examples.mkdir(parents=True)
    (examples / "relu.py").write_text(RELU_EXAMPLE)  # the reference's example: the optimisation task's too
    out = tmp_path / "out"
    with contextlib.redirect_stdout(io.StringIO()):
        code = main(["corpus", "--target", "triton", "--tasks", str(good), "--examples", str(tmp_path / "examples"),
                     "--out", str(out), "--platform", "cpu", "--workers", "1", "--no-progress"])  # fmt: skip
    assert code == 0
    rows = datasets.load_dataset("parquet", data_dir=str(out / "data" / "triton"), split="train")
    row = rows[0]
    assert row["correct"] is True and row["baseline_hash"] and row["speedup_over_baseline"] is None
    assert row["reward"] == pytest.approx(1.4)

    checked = io.StringIO()
    with contextlib.redirect_stdout(checked):
        assert main(["tasks", "check", str(good)]) == 0
    assert "triton baseline: correct" in checked.getvalue()
    with contextlib.redirect_stdout(checked):
        assert main(["tasks", "check", str(broken)]) == 1
    assert "BROKEN  relu__wrong_baseline" in checked.getvalue()
    assert "the task's triton baseline does not pass (mismatch" in checked.getvalue()


def test_a_folder_of_baseline_files_composes_tasks_from_the_references_beside_it(tmp_path: Path) -> None:
    suite = tmp_path / "optimise"
    suite.mkdir()
    (tmp_path / "relu.py").write_text((ROOT / "tasks" / "relu.py").read_text())
    slow = (ROOT / "tasks" / "optimise" / "relu__uncoalesced.triton.py").read_text()
    (suite / "relu__uncoalesced.triton.py").write_text(slow)
    (suite / "gelu__naive.triton.py").write_text(slow)  # no gelu.py anywhere
    (suite / "relu.triton.py").write_text(slow)  # no __VARIANT: not an optimisation task's name
    loaded = load_tasks(str(suite))
    assert [task.name for task in loaded.tasks] == ["relu__uncoalesced"]
    task = loaded.tasks[0]
    assert task.baselines == {"triton": slow} and task.category == "activation"
    assert task.source.startswith(
        (ROOT / "tasks" / "relu.py").read_text().rstrip()
    )  # the reference, then them
    assert sorted(name for name, _ in loaded.errors) == ["gelu__naive", "relu"]
    assert all("REFERENCE__VARIANT.TARGET.py" in why for _, why in loaded.errors)


def test_the_bundled_optimisation_suite_loads_and_every_baseline_passes_on_the_cpu() -> None:
    loaded = load_tasks("bundled:optimise")
    assert not loaded.errors
    assert len(loaded.tasks) >= 30 and all(task.baselines for task in loaded.tasks)
    assert sum("triton" in task.baselines for task in loaded.tasks) >= 25
    assert sum("hip" in task.baselines for task in loaded.tasks) >= 25
    assert {task.category for task in loaded.tasks} >= {
        "activation", "elementwise", "reduction", "softmax", "normalization", "matmul", "scan", "loss", "fused"
    }  # fmt: skip
    reports = check_tasks(loaded.tasks, workers=2)
    assert [(report.task, report.problems) for report in reports if not report.ok] == []
    # Triton's baselines run under the interpreter; HIP's compile for gfx90a (they run on a GPU only).
    for task, report in zip(loaded.tasks, reports, strict=True):
        expected = {
            "triton": "triton baseline: correct",
            "hip": "hip baseline: compiles (this platform cannot run it)",
        }
        assert sorted(report.notes) == sorted(expected[target] for target in task.baselines), task.name
    with pytest.raises(TaskFormatError, match="bundled suites: optimise"):
        load_tasks("bundled:nope")


def test_the_agent_is_shown_the_baseline_and_told_its_speed_against_it(tmp_path: Path) -> None:
    """TritonKernelGen on an optimisation task, against a real OpenAI-compatible server: the prompt shows the
    reference without the baselines literal, then the Triton baseline (without the docstring that says why it
    is slow), and asks to beat it; the feedback of a correct turn speaks of the speedup over the baseline; the
    rows carry the baseline. `keep_optimising` (stop_on_correct False) asks again after a correct answer."""
    from kernelvault.agents.client import EndpointConfig
    from kernelvault.pipelines.agent_job import AgentJobConfig, run_agent_job
    from kernelvault.simulated_openai import Answer, FakeOpenAI
    from kernelvault.toolchain.tasks import LoadedTasks

    task = next(task for task in load_tasks("bundled:optimise").tasks if task.name == "relu__uncoalesced")
    answer = f"Contiguous blocks per program.\n\n```python\n{RELU_EXAMPLE}```\n"
    server = FakeOpenAI(scenarios={"ReLU activation, max(x, 0)": [Answer(answer), Answer(answer)]})
    url, stop = server.start()
    endpoint = EndpointConfig(base_url=url, model="qwen3-test", attempts=2, backoff_initial_s=0.01)
    config = AgentJobConfig(endpoint=endpoint, samples=1, max_turns=2, concurrency=1, stop_on_correct=False)
    try:
        run_agent_job(LoadedTasks(tasks=[task]), Verifier(VerifyConfig(platform="cpu", timeout_s=120)), tmp_path,
                      "triton", config, progress=False)  # fmt: skip
    finally:
        stop()
    answered = [request.body["messages"] for request in server.requests if request.status == 200]
    assert len(answered) == 2
    prompt, feedback = answered[-1][-3]["content"], answered[-1][-1]["content"]
    assert "This Triton implementation (the baseline) is correct but slow" in prompt
    assert "relu_strided_kernel" in prompt and "faster than the baseline" in prompt
    assert "KERNELVAULT_BASELINES" not in prompt and "deliberately slow" not in prompt
    assert "HIP_SOURCE" not in prompt  # the HIP baseline is for the other target
    assert "speedup over the baseline not measured on this platform" in feedback
    rows = datasets.load_dataset("parquet", data_dir=str(tmp_path / "data" / "triton"), split="train")
    assert rows.num_rows == 2 and all(row["correct"] and row["baseline_hash"] for row in rows)

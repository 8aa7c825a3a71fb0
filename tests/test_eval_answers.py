"""`kernelvault eval --suite PATH --answers FILE`: answers already written, scored per model with GEAK's Corr@k.

The suite is the TritonBench-T fixture folder; the answers are the fixture's real-layout answers to
`scaled_add` (a correct kernel, one that does not compile and the same with another syntax error), dealt to
two models in the plain layout. Every verification runs the whole CPU toolchain.
"""

from __future__ import annotations

import contextlib
import io
import json
from pathlib import Path
from typing import Any

import pytest

from kernelvault.cli.common import CommandParser
from kernelvault.cli.evaluate import register as add_eval_parser
from kernelvault.cli.report import register as add_report_parser
from kernelvault.pipelines.eval_metrics import EvalSettings, SuiteTask, compute_eval_metrics, metric_rows
from kernelvault.pipelines.eval_report import load_runs

ROOT = Path(__file__).resolve().parents[1]
FIXTURES = ROOT / "tests" / "fixtures" / "tritonbench"
TASKS = FIXTURES / "data" / "TritonBench_T_v1"
ANSWERS = FIXTURES / "LLM_generated" / "Bench_T_general_purpose" / "output_fixture-model.jsonl"


def cli(*argv: str) -> tuple[int, str]:
    parser = CommandParser(prog="kernelvault")  # its usage errors are raised, as `kernelvault` reports them
    commands = parser.add_subparsers(dest="command", required=True)
    add_eval_parser(commands)
    add_report_parser(commands)
    args = parser.parse_args(argv)
    out = io.StringIO()
    with contextlib.redirect_stdout(out):
        code = args.handler(args)
    return code, out.getvalue()


@pytest.fixture(scope="module")
def evaluated(tmp_path_factory: pytest.TempPathFactory) -> dict[str, Any]:
    base = tmp_path_factory.mktemp("eval-answers")
    good, _, broken = (json.loads(line)["predict"] for line in ANSWERS.read_text().splitlines())
    lines = [
        {"task": "scaled_add", "model": "model-a", "answer": good},
        {"task": "scaled_add", "model": "model-a", "answer": broken + "\n)\n"},
        {"task": "scaled_add", "model": "model-a", "answer": broken},
        {"task": "noisy_scale", "model": "model-a", "answer": good.replace("scaled_add", "noisy_scale")},
        {"task": "scaled_add", "model": "model-b", "answer": broken},
        {"task": "not_in_the_suite", "model": "model-b", "answer": good},
    ]
    answers = base / "answers.jsonl"
    answers.write_text("".join(json.dumps(line) + "\n" for line in lines))
    run_dir = base / "run"
    code, printed = cli("eval", "--suite", str(TASKS), "--task", "scaled_add", "--task", "noisy_scale",
                        "--answers", str(answers), "--platform", "cpu", "--timeout", "120", "--workers", "2",
                        "--allow-unjailed", "--no-progress", "--out", str(run_dir))  # fmt: skip
    assert code == 0
    return {"run_dir": run_dir, "printed": printed, "answers": answers}


def test_each_model_gets_its_own_corr_at_k_over_its_samples(evaluated: dict[str, Any]) -> None:
    """model-a: 3 samples of scaled_add, 1 correct: Corr@1 = 1/3, Corr@3 = 1 (the unbiased estimator);
    1 of 3 compiled. model-b: its one sample does not compile."""
    results = json.loads((evaluated["run_dir"] / "eval" / "results.json").read_text())
    a, b = results["per_model"]["model-a"]["metrics"], results["per_model"]["model-b"]["metrics"]
    assert a["sample_corr@1"] == pytest.approx(1 / 3) and a["sample_corr@3"] == pytest.approx(1.0)
    assert a["pass@3"] == pytest.approx(1.0)  # one attempt per sample: Pass@k and Corr@k agree
    assert a["call_accuracy"] == pytest.approx(1 / 3)
    assert b["sample_corr@1"] == 0.0 and b["call_accuracy"] == 0.0 and "sample_corr@3" not in b
    printed = evaluated["printed"]
    assert "Corr@3 of samples (GEAK)" in printed and "call accuracy" in printed
    assert "model-a" in printed.splitlines()[1] and "model-b" in printed.splitlines()[1]


def test_tasks_that_cannot_be_judged_are_counted_out_with_their_reason(evaluated: dict[str, Any]) -> None:
    """noisy_scale's reference is not deterministic: model-a's answer to it is never judged, and the task
    leaves the denominator with that reason; model-b never answered it. An answer to a task outside the
    suite is listed, not dropped."""
    results = json.loads((evaluated["run_dir"] / "eval" / "results.json").read_text())
    a, b = results["per_model"]["model-a"], results["per_model"]["model-b"]
    assert (a["judged_tasks"], b["judged_tasks"]) == (1, 1)
    ((name, reason),) = a["unjudged"]
    assert name == "noisy_scale" and "infrastructure_error" in reason and "not deterministic" in reason
    assert b["unjudged"] == [["noisy_scale", "no answer of this model matched the task"]]
    printed = evaluated["printed"]
    assert "counted out: model-a: noisy_scale: infrastructure_error" in printed
    markdown = (evaluated["run_dir"] / "eval" / "results.md").read_text()
    assert "| judged tasks (counted out) | 1 (1) | 1 (1) |" in markdown
    assert "answer not matched: answers.jsonl:6: no task named 'not_in_the_suite'" in printed


def test_the_report_reads_an_answers_run_as_one_column_per_model(evaluated: dict[str, Any]) -> None:
    views = load_runs(evaluated["run_dir"])
    assert [view.metrics.model for view in views] == ["model-a", "model-b"]
    assert views[0].metrics.sample_corr_at == pytest.approx({1: 1 / 3, 3: 1.0})


def test_rerunning_resumes_without_verifying_again(evaluated: dict[str, Any]) -> None:
    code, printed = cli("eval", "--suite", str(TASKS), "--task", "scaled_add", "--task", "noisy_scale",
                        "--answers", str(evaluated["answers"]), "--platform", "cpu", "--timeout", "120", "--allow-unjailed",
                        "--no-progress", "--out", str(evaluated["run_dir"]))  # fmt: skip
    assert code == 0 and "Corr@3 of samples (GEAK)" in printed


def test_answers_take_no_endpoint(tmp_path: Path) -> None:
    from kernelvault.cli import UsageError

    with pytest.raises(UsageError, match="takes no --base-url"):
        cli("eval", "--suite", str(TASKS), "--answers", str(ANSWERS), "--base-url", "http://x",
            "--out", str(tmp_path))  # fmt: skip
    with pytest.raises(UsageError, match="answers not found"):
        cli("eval", "--suite", str(TASKS), "--answers", str(tmp_path / "none.jsonl"), "--platform", "cpu",
            "--out", str(tmp_path))  # fmt: skip


def test_sample_corr_at_k_follows_geak_eval_on_hand_made_rows() -> None:
    """GEAK-eval's numbers for n = 5 passes of one file with c = 2 correct: PassK(5, 2, k) for k = 1, 3, 5 is
    0.4, 0.9, 1.0 (its product form of the unbiased estimator); a second task with 0 of 5 halves them. A
    trajectory that is correct only at turn 2 counts as a correct sample (GEAK scores the agent's final
    answer), which Pass@k (attempt 1 only) does not."""

    def row(task: str, sample: int, turn: int, correct: bool, kind: str | None = None) -> dict[str, Any]:
        return {"run_id": "r", "task_id": task, "task_name": task, "task_category": None, "task_origin": "x",
                "sample_index": sample, "turn": turn, "compiled": kind != "compile_error", "correct": correct,
                "failure_kind": kind, "failure_message": None, "speedup": None, "reward": 0.0,
                "trajectory_return": None, "prompt_tokens": 0, "completion_tokens": 0, "platform": "cpu",
                "model": "m", "target": "triton", "sampling": None}  # fmt: skip

    rows = [row("t1", s, 0, s < 2, None if s < 2 else "mismatch") for s in range(4)]
    rows += [row("t1", 4, 0, False, "mismatch"), row("t1", 4, 1, False, "compile_error")]
    rows += [row("t2", s, 0, False, "compile_error") for s in range(5)]
    rows += [row("t3", 0, 0, False, "infrastructure_error")]
    settings = EvalSettings("m", "x", "triton", samples=5, turns=2,
                            tasks=(SuiteTask("t1", "t1"), SuiteTask("t2", "t2"), SuiteTask("t3", "t3")))  # fmt: skip
    m = compute_eval_metrics(rows, settings)
    assert m.sample_corr_at == pytest.approx({1: 0.2, 3: 0.45, 5: 0.5})
    assert m.call_accuracy == pytest.approx((1.0 + 0.0) / 2) and m.judged_tasks == 2
    assert m.unjudged == (("t3", "infrastructure_error"),)
    late = [*rows[:5], row("t1", 4, 1, True), *rows[6:]]  # sample 4 fixed at turn 2: 3 of 5 samples correct
    m = compute_eval_metrics(late, settings)
    assert m.sample_corr_at[1] == pytest.approx(0.6 / 2) and m.pass_at[1] == pytest.approx(0.4 / 2)
    cells = dict(metric_rows([m]))
    assert cells["Corr@1 of samples (GEAK)"] == ["30.0%"] and cells["judged tasks (counted out)"] == ["2 (1)"]

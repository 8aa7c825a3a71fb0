"""`kernelvault eval` end to end: two scripted models behind a real OpenAI-compatible server on localhost,
verified by the real toolchain on the cpu platform, with every metric checked against values worked out
by hand from the scripts below; then `kernelvault report` over both runs, rendered in headless Chromium.

The suite is two bundled tasks (relu: activation, vector_add: elementwise), 2 samples × up to 3 attempts.
Answers that never reach a worker (no code, wrong class name) keep the CPU time down: eight candidates
are verified in all, a few seconds each.
"""

from __future__ import annotations

import argparse
import io
import json
import shutil
import threading
from concurrent.futures import ThreadPoolExecutor
from contextlib import nullcontext, redirect_stderr
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import pytest
from test_report import chromium_check, find_chromium

from kernelvault.cli.evaluate import register as add_eval_parser
from kernelvault.cli.report import register as add_report_parser
from kernelvault.pipelines.evaluation import (
    find_contamination,
    load_suite,
    read_training_corpus,
)
from kernelvault.simulated_openai import Answer, FakeOpenAI

ROOT = Path(__file__).resolve().parents[1]
EXAMPLES = ROOT / "examples" / "triton"
RELU = "ReLU activation, max(x, 0)"  # each task's docstring: how the server knows which task it is asked
VECTOR_ADD = "Sum of two 1-D float32 vectors"


def fenced(path: Path, note: str) -> Answer:
    return Answer(f"{note}\n\n```python\n{path.read_text()}```\n")


RELU_OK = fenced(EXAMPLES / "relu.py", "Sample one: an elementwise kernel.")
RELU_OK_2 = fenced(EXAMPLES / "relu.py", "Sample two: the same kernel.")
ADD_OK = fenced(EXAMPLES / "vector_add.py", "Sample one: a masked add.")
ADD_OK_2 = fenced(EXAMPLES / "vector_add.py", "Sample two: a masked add.")
ADD_AFTER_FEEDBACK = fenced(EXAMPLES / "vector_add.py", "Fixed: no pointer tricks this time.")
RELU_WRONG_CLASS = fenced(EXAMPLES / "broken" / "static_reject__relu.py", "A ReLU kernel.")  # static_reject
RELU_FIXED = fenced(EXAMPLES / "relu.py", "Renamed the class to ModelNew.")
NO_CODE = Answer(
    "I would use tl.maximum(x, 0.0) over blocks of 1024 elements, masked at the end."
)  # parse_error
ADD_SEGFAULT = fenced(EXAMPLES / "broken" / "runtime_error__vector_add.py", "A fast add.")  # runtime_error
ADD_CUT_OFF = Answer(
    "```python\nimport torch\nimport triton\n\n@triton.jit\ndef add(", finish_reason="length"
)

# One script per sample: the answers of that trajectory, turn by turn.
MODEL_A = {RELU: [[RELU_OK], [RELU_OK_2]], VECTOR_ADD: [[ADD_OK], [ADD_OK_2]]}
MODEL_B = {
    RELU: [[RELU_WRONG_CLASS, RELU_FIXED], [NO_CODE, NO_CODE, NO_CODE]],
    VECTOR_ADD: [[ADD_OK], [ADD_SEGFAULT, ADD_CUT_OFF, ADD_AFTER_FEEDBACK]],
}


@dataclass
class ScriptedModel(FakeOpenAI):
    """Per-trajectory scripts: a new conversation takes the next unused script of its task, and later
    turns continue the script whose first answer the conversation holds (first answers are distinct)."""

    scripts: dict[str, list[list[Answer]]] = field(default_factory=dict)
    _taken: dict[str, int] = field(default_factory=dict)
    _script_lock: threading.Lock = field(default_factory=threading.Lock)

    def answer_for(self, messages: list[dict[str, Any]]) -> Answer:
        for marker, scripts in self.scripts.items():
            asked = [i for i, m in enumerate(messages) if m["role"] == "user" and marker in m["content"]]
            if not asked:
                continue
            answered = [m["content"] for m in messages[asked[-1] + 1 :] if m["role"] == "assistant"]
            if not answered:
                with self._script_lock:
                    index = self._taken.get(marker, 0)
                    self._taken[marker] = index + 1
                return scripts[index][0]
            script = next(s for s in scripts if s[0].content == answered[0])
            return script[len(answered)]
        return Answer("I cannot help with that.")


def tokens_of(scripts: dict[str, list[list[Answer]]]) -> tuple[int, int]:
    """(prompt, completion) tokens the server reports for every scripted answer (each is served once)."""
    answers = [answer for trajectories in scripts.values() for script in trajectories for answer in script]
    return 100 * len(answers), sum(len(answer.content) // 4 for answer in answers)


def cli(*argv: str) -> int:
    parser = argparse.ArgumentParser(prog="kernelvault")
    commands = parser.add_subparsers(dest="command", required=True)
    add_eval_parser(commands)
    add_report_parser(commands)
    args = parser.parse_args(argv)
    return args.handler(args)


def evaluate(name: str, scripts: dict[str, list[list[Answer]]], out: Path, *extra: str,
             capture: bool = False) -> str:  # fmt: skip
    """Run `kernelvault eval` against a scripted model; returns what it printed on stderr if `capture`.

    sys.stderr is process-wide: only one of the concurrent runs may capture it.
    """
    server = ScriptedModel(scripts=scripts)
    url, stop = server.start()
    stderr = io.StringIO()
    try:
        with redirect_stderr(stderr) if capture else nullcontext():
            code = cli("eval", "--target", "triton", "--suite", str(ROOT / "tasks"), "--task", "relu",
                       "--task", "vector_add", "--model", name, "--base-url", url, "--samples", "2", "--turns", "3",
                       "--platform", "cpu", "--timeout", "180", "--workers", "2", "--no-progress", "--out", str(out),
                       *extra)  # fmt: skip
    finally:
        stop()
    assert code == 0
    return stderr.getvalue()


@pytest.fixture(scope="module")
def evaluated(tmp_path_factory: pytest.TempPathFactory) -> dict[str, Any]:
    base = tmp_path_factory.mktemp("eval")
    training = base / "training-tasks"  # model B's training corpus holds the relu reference
    training.mkdir()
    (training / "relu_copy.py").write_text((ROOT / "tasks" / "relu.py").read_text())
    # Both models at once: a trajectory waits on its previous verdict, so one run alone leaves cores idle.
    with ThreadPoolExecutor(2) as pool:
        model_a = pool.submit(evaluate, "model-a", MODEL_A, base / "model-a")
        model_b = pool.submit(evaluate, "model-b", MODEL_B, base / "model-b", "--training-corpus", str(training),
                              "--price-prompt", "0.5", "--price-completion", "2.0", capture=True)  # fmt: skip
        stderr = {"model-a": model_a.result(), "model-b": model_b.result()}
    runs = {"model-a": base / "model-a", "model-b": base / "model-b"}
    return {"runs": runs, "base": base, "training": training, "stderr": stderr}


def results(run_dir: Path) -> dict[str, Any]:
    return json.loads((run_dir / "eval" / "results.json").read_text())


def test_honest_model_scores_full_marks_and_speed_is_not_measured_on_cpu(evaluated: dict[str, Any]) -> None:
    data = results(evaluated["runs"]["model-a"])["metrics"]
    m = data["metrics"]
    # Every trajectory: one attempt, correct. Reward 1.4 each (0.4 compile + 1.0 correct, no timing on cpu).
    assert (data["attempts"], data["trajectories"], data["compiled"], data["correct_attempts"]) == (
        4,
        4,
        4,
        4,
    )
    assert m["compile_rate"] == 1.0 and m["pass@1"] == 1.0 and m["pass@2"] == 1.0
    assert (m["corr@1"], m["corr@2"], m["corr@3"]) == (1.0, 1.0, 1.0)
    assert m["fast_0"] == 1.0  # solved at all: needs no timing
    assert m["fast_1"] is None and m["fast_1.5"] is None and m["fast_2"] is None  # not measured, not 0
    assert m["geomean_speedup"] is None and data["speed_unmeasured"] == 4
    assert m["mean_reward"] == pytest.approx(1.4) and m["mean_return"] == pytest.approx(1.4)
    assert data["failures"] == {} and data["first_correct_histogram"] == {"1": 4, "2": 0, "3": 0, "never": 0}
    prompt, completion = tokens_of(MODEL_A)
    assert (data["prompt_tokens"], data["completion_tokens"]) == (prompt, completion)
    assert m["tokens_per_correct"] == pytest.approx((prompt + completion) / 4)
    assert m["cost_usd"] is None and m["cost_per_correct_usd"] is None  # no prices given
    table = (evaluated["runs"]["model-a"] / "eval" / "results.md").read_text()
    assert "| fast_1.5 | not measured |" in table and "| Pass@1 | 100.0% |" in table


def test_mixed_model_metrics_match_the_hand_computed_values(evaluated: dict[str, Any]) -> None:
    data = results(evaluated["runs"]["model-b"])["metrics"]
    m = data["metrics"]
    # relu:       s1 [static_reject, correct]      s2 [parse_error ×3]
    # vector_add: s1 [correct]                     s2 [runtime_error, parse_error (cut off), correct]
    assert data["attempts"] == 9 and data["trajectories"] == 4 and data["missing_trajectories"] == 0
    assert data["compiled"] == 4 and m["compile_rate"] == pytest.approx(4 / 9)  # 3 correct + the segfault
    # Pass@k, per task n=2: relu c=0 → 0; vector_add c=1 → pass@1 = 1 - C(1,1)/C(2,1) = 0.5, pass@2 = 1.
    assert m["pass@1"] == pytest.approx((0 + 0.5) / 2) and m["pass@2"] == pytest.approx((0 + 1) / 2)
    # First correct attempt per trajectory: relu 2, never; vector_add 1, 3.
    assert m["corr@1"] == pytest.approx((0 + 0.5) / 2)
    assert m["corr@2"] == pytest.approx((0.5 + 0.5) / 2)
    assert m["corr@3"] == pytest.approx((0.5 + 1.0) / 2)
    assert m["fast_0"] == pytest.approx(0.75) and m["fast_2"] is None
    assert data["first_correct_histogram"] == {"1": 1, "2": 1, "3": 1, "never": 1}
    assert data["failures"] == {"parse_error": 4, "static_reject": 1, "runtime_error": 1}
    # Rewards: relu 0, 1.4 | 0, 0, 0; vector_add 1.4 | 0.4, 0, 1.4.
    assert m["mean_reward"] == pytest.approx(4.6 / 9)
    returns = [0 + 0.6 * 1.4, 0.0, 1.4, 0.4 + 0.6 * 0 + 0.36 * 1.4]  # G = r1 + 0.6 r2 + 0.36 r3
    assert m["mean_return"] == pytest.approx(sum(returns) / 4)
    prompt, completion = tokens_of(MODEL_B)
    assert (data["prompt_tokens"], data["completion_tokens"]) == (prompt, completion)
    cost = (prompt * 0.5 + completion * 2.0) / 1e6
    assert m["cost_usd"] == pytest.approx(cost) and m["cost_per_correct_usd"] == pytest.approx(cost / 3)
    assert m["tokens_per_correct"] == pytest.approx((prompt + completion) / 3)
    by_category = {c["category"]: c for c in data["per_category"]}
    assert by_category["activation"]["corr_at_budget"] == 0.5 and by_category["activation"]["pass_at_1"] == 0
    assert (
        by_category["elementwise"]["corr_at_budget"] == 1.0 and by_category["elementwise"]["pass_at_1"] == 0.5
    )


def test_overlap_with_the_training_corpus_is_reported_loudly(evaluated: dict[str, Any]) -> None:
    payload = results(evaluated["runs"]["model-b"])
    assert [(c["task_name"], c["kind"]) for c in payload["contamination"]] == [("relu", "exact")]
    clean = payload["clean_metrics"]  # vector_add alone
    assert clean["tasks"] == 1 and clean["attempts"] == 4
    assert clean["metrics"]["pass@1"] == 0.5 and clean["metrics"]["corr@3"] == 1.0
    assert clean["metrics"]["compile_rate"] == pytest.approx(3 / 4)
    assert results(evaluated["runs"]["model-a"])["contamination"] == []
    table = (evaluated["runs"]["model-b"] / "eval" / "results.md").read_text()
    assert table.splitlines()[2].startswith("> **⚠ CONTAMINATION") and "relu (exact match" in table
    assert "## Results without contaminated tasks" in table
    assert f"| 1 (against {evaluated['training']}) |" in table  # the runs table names what was checked
    banner = "CONTAMINATION: 1 of 2 suite task(s) overlap the training corpus"
    assert evaluated["stderr"]["model-b"].count(banner) == 2  # before the run and after the results
    assert "relu: exact match of training task relu_copy" in evaluated["stderr"]["model-b"]


def test_an_evaluation_run_is_corpus_data(evaluated: dict[str, Any]) -> None:
    from kernelvault.corpus.stats import load_attempts

    rows = load_attempts(evaluated["runs"]["model-b"] / "data" / "triton").to_pylist()
    assert len(rows) == 9 and {row["model"] for row in rows} == {"model-b"}
    # Which sample drew which script is up to the scheduler; the turns of the correct answers are not.
    correct = sorted((row["task_name"], row["turn"]) for row in rows if row["correct"])
    assert correct == [("relu", 1), ("vector_add", 0), ("vector_add", 2)]
    assert all(row["messages"] and row["platform"] == "cpu" for row in rows)
    settings = json.loads((evaluated["runs"]["model-b"] / "eval" / "settings.json").read_text())
    assert settings["samples"] == 2 and settings["turns"] == 3 and settings["target"] == "triton"


def test_a_training_corpus_folder_of_shards_is_read_for_decontamination(evaluated: dict[str, Any]) -> None:
    corpus = read_training_corpus(str(evaluated["runs"]["model-a"]))  # model A's run, as a corpus
    assert sorted(task.name for task in corpus.tasks) == ["relu", "vector_add"]
    suite = load_suite(str(ROOT / "tasks"), ("relu", "vector_add", "silu"))
    assert sorted(item.task_name for item in find_contamination(suite.tasks, corpus)) == [
        "relu",
        "vector_add",
    ]


def test_report_compares_both_models_and_renders_in_chromium(evaluated: dict[str, Any]) -> None:
    out = evaluated["base"] / "report"
    runs = evaluated["runs"]
    assert cli("report", str(runs["model-a"]), str(runs["model-b"]), "--out", str(out)) == 0
    markdown = (out / "report.md").read_text()
    assert "| Corr@3 | 100.0% | 75.0% |" in markdown and "| Pass@1 | 100.0% | 25.0% |" in markdown
    assert "| fast_1 | not measured | not measured |" in markdown
    assert "⚠ CONTAMINATION in model-b" in markdown
    for name in ("correctness-by-category", "speedup-distribution", "reward-distribution",
                 "attempts-to-first-correct"):  # fmt: skip
        assert f"](plots/{name}.png)" in markdown and (out / "plots" / f"{name}.png").stat().st_size > 1000
    if find_chromium() is None:
        pytest.skip("headless Chromium not installed (apt-get install chromium): HTML rendering not checked")
    page = chromium_check(out / "report.html", out / "check", screenshot=False)  # test_report paints one
    assert page["tables"]["results"]["header"] == ["", "model-a", "model-b"]
    results_rows = {row[0]: row[1:] for row in page["tables"]["results"]["rows"]}
    assert results_rows["Corr@3"] == ["100.0%", "75.0%"] and results_rows["fast_2"] == ["not measured"] * 2
    assert len(page["tables"]["tasks"]["rows"]) == 2 and len(page["tables"]["categories"]["rows"]) == 2
    assert page["warnings"] and "CONTAMINATION in model-b" in page["warnings"][0]
    assert len(page["images"]) == 4
    for image in page["images"]:
        assert image["complete"] and image["naturalWidth"] > 300 and image["renderedWidth"] > 100, image


def test_rerunning_with_new_prices_reprices_without_new_requests(
    evaluated: dict[str, Any], tmp_path: Path
) -> None:
    run = tmp_path / "model-b"
    shutil.copytree(evaluated["runs"]["model-b"], run)
    server = ScriptedModel(scripts=MODEL_B)  # the same endpoint: its URL is part of the run's identity
    first_url = json.loads((run / "eval" / "settings.json").read_text())["base_url"]
    url, stop = server.start(port=int(first_url.rsplit(":", 1)[1].split("/")[0]))
    try:  # the run's identity (model, suite, budget, verifier) is unchanged: it resumes with nothing to do
        code = cli("eval", "--suite", str(ROOT / "tasks"), "--task", "relu", "--task", "vector_add", "--model",
                   "model-b", "--base-url", url, "--samples", "2", "--turns", "3", "--platform", "cpu",
                   "--timeout", "180", "--no-progress", "--out", str(run), "--price-prompt", "3",
                   "--price-completion", "15")  # fmt: skip
    finally:
        stop()
    assert code == 0 and server.requests == []
    data = results(run)
    prompt, completion = tokens_of(MODEL_B)
    assert data["metrics"]["metrics"]["cost_usd"] == pytest.approx((prompt * 3 + completion * 15) / 1e6)
    assert data["metrics"]["attempts"] == 9 and data["contamination"] == [] and data["clean_metrics"] is None


URL = "http://127.0.0.1:9/v1"  # never contacted: each of these is refused before any request


@pytest.mark.parametrize(
    ("argv", "message"),
    [
        (["--model", "m"], "needs a model endpoint"),
        (["--model", "m", "--base-url", URL, "--price-prompt", "1.0"], "both --price-prompt and --price-completion"),
        (["--model", "m", "--base-url", URL, "--turns", "0"], "at least 1"),
        (["--model", "m", "--base-url", URL, "--platform", "cpu", "--task", "no_such_task"], "no task named no_such_task"),
    ],
)  # fmt: skip
def test_bad_eval_arguments_are_one_line_usage_errors(
    argv: list[str], message: str, monkeypatch, tmp_path
) -> None:  # noqa: ANN001
    from kernelvault.cli.common import UsageError

    monkeypatch.delenv("OPENAI_BASE_URL", raising=False)
    with pytest.raises(UsageError, match=message):
        cli("eval", "--out", str(tmp_path / "run"), *argv)
    assert not (tmp_path / "run").exists()


def test_the_target_reaches_the_agent_job() -> None:
    from kernelvault.cli.evaluate import _eval_config

    parser = argparse.ArgumentParser()
    add_eval_parser(parser.add_subparsers())
    args = parser.parse_args(["eval", "--target", "hip", "--model", "m", "--base-url", URL, "--samples", "4",
                              "--turns", "2", "--keep-optimising"])  # fmt: skip
    config = _eval_config(args)
    assert config.target == "hip" and config.agent.samples == 4 and config.agent.max_turns == 2
    assert config.agent.stop_on_correct is False and config.agent.endpoint.model == "m"


def test_report_of_a_missing_folder_is_a_usage_error(tmp_path: Path) -> None:
    from kernelvault.cli.common import UsageError

    with pytest.raises(UsageError, match="no run folder"):
        cli("report", str(tmp_path / "absent"), "--out", str(tmp_path / "out"))

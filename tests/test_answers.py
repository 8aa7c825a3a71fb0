"""Answers models already wrote (TritonBench's JSONL, or task/model/answer lines) as a candidate source."""

from __future__ import annotations

import contextlib
import io
import json
from pathlib import Path

import pyarrow.parquet as pq
import pytest

from kernelvault.contracts import Task
from kernelvault.pipelines.answers import AnswerCandidates, model_of_file
from kernelvault.toolchain.tasks import load_tasks

ROOT = Path(__file__).resolve().parents[1]
RELU_KERNEL = (ROOT / "examples" / "triton" / "relu.py").read_text()
FENCED_RELU = f"Here is the kernel:\n\n```python\n{RELU_KERNEL}```\n"


def tritonbench_line(entry: str, predict: str) -> str:
    instruction = (
        "You are an expert in Trion programming.\nFunctional Description: elementwise.\n"
        f"Wrapper Entry Information: {entry}(input, *, out=None) -> Tensor\nMath: y = f(x)\n"
    )
    return json.dumps({"instruction": instruction, "predict": predict, "label": ""})


def plain_line(task: str, model: str, answer: str, **extra: object) -> str:
    return json.dumps({"task": task, "model": model, "answer": answer, **extra})


@pytest.fixture
def tasks() -> list[Task]:
    return load_tasks(None).tasks


@pytest.fixture
def answers(tmp_path: Path) -> Path:
    folder = tmp_path / "answers"
    folder.mkdir()
    (folder / "output_gpt-4o_rag.jsonl").write_text(
        "\n".join([
            tritonbench_line("relu", FENCED_RELU),  # markdown with a fenced block
            tritonbench_line("relu", RELU_KERNEL),  # plain Python
            "{not json",
            tritonbench_line("no_such_op", RELU_KERNEL),
            "",  # a blank line is no answer and no error
            tritonbench_line("vector_add", "import torch\n"),
        ]) + "\n"
    )  # fmt: skip
    (folder / "plain.jsonl").write_text(
        "\n".join([
            plain_line("relu", "qwen3-8b", FENCED_RELU),
            plain_line("relu", "llama-3-70b", RELU_KERNEL, sample=0),  # sample 0 of relu is taken: moves on
            plain_line("relu", "qwen3-8b", RELU_KERNEL, sample=7),
            json.dumps({"task": "relu", "answer": "x"}),  # no model
        ]) + "\n"
    )  # fmt: skip
    return folder


def test_model_names_come_from_tritonbench_file_names() -> None:
    assert model_of_file(Path("LLM_generated/output_gpt-4o.jsonl")) == "gpt-4o"
    assert model_of_file(Path("output_gpt-4o_rag.jsonl")) == "gpt-4o_rag"
    assert model_of_file(Path("deepseek_rag.jsonl")) == "deepseek_rag"


def test_answers_become_attempts_grouped_per_task_with_the_raw_text_and_the_model(
    answers: Path, tasks: list[Task]
) -> None:
    source = AnswerCandidates(answers, "triton")
    attempts = list(source.attempts(tasks))
    # files in name order (output_… before plain), then line order
    got = [(a.task.name, a.sample_index, a.model, a.candidate.origin) for a in attempts]
    assert got == [
        ("relu", 0, "gpt-4o_rag", "model:gpt-4o_rag"),
        ("relu", 1, "gpt-4o_rag", "model:gpt-4o_rag"),
        ("vector_add", 0, "gpt-4o_rag", "model:gpt-4o_rag"),
        ("relu", 2, "qwen3-8b", "model:qwen3-8b"),
        ("relu", 3, "llama-3-70b", "model:llama-3-70b"),
        ("relu", 7, "qwen3-8b", "model:qwen3-8b"),
    ]
    assert len({(a.task.task_id, a.sample_index, a.turn) for a in attempts}) == len(attempts)
    assert attempts[0].candidate.text == FENCED_RELU  # the parse stage extracts the code, not the source
    assert attempts[1].candidate.text == RELU_KERNEL
    assert all(a.turn == 0 and a.candidate.target == "triton" for a in attempts)
    # a TritonBench line keeps the prompt it answered (a release's sft config trains on that conversation)
    assert attempts[0].messages[0][0] == "user" and "Wrapper Entry Information" in attempts[0].messages[0][1]
    assert attempts[0].messages[1] == ("assistant", FENCED_RELU)
    assert attempts[3].messages == (), "a plain line has no prompt to keep"
    assert source.description.startswith("2 answer file(s), 7 answers of 3 model(s)")
    assert [a.sample_index for a in AnswerCandidates(answers, "triton").attempts(tasks)] == [
        a.sample_index for a in attempts
    ]  # a resumed run sees the same keys


def test_lines_without_a_usable_answer_are_listed_not_fatal(answers: Path, tasks: list[Task]) -> None:
    source = AnswerCandidates(answers, "triton")
    list(source.attempts(tasks))
    list(source.attempts(tasks))  # a second pass does not list its skips twice
    reasons = dict(source.skipped)
    assert set(reasons) == {"output_gpt-4o_rag.jsonl:3", "output_gpt-4o_rag.jsonl:4", "plain.jsonl:4"}
    assert reasons["output_gpt-4o_rag.jsonl:3"].startswith("not JSON")
    assert "no_such_op" in reasons["output_gpt-4o_rag.jsonl:4"]
    assert "'model'" in reasons["plain.jsonl:4"]


def test_an_instruction_without_an_entry_matches_a_task_named_as_a_file(
    tmp_path: Path, tasks: list[Task]
) -> None:
    path = tmp_path / "output_o1.jsonl"
    lines = [
        {"instruction": "Write softmax.py: a row softmax in Triton.", "predict": "x", "label": ""},
        {"instruction": "Write a fast attention kernel.", "predict": "x", "label": ""},
    ]
    path.write_text("".join(json.dumps(line) + "\n" for line in lines))
    source = AnswerCandidates(path, "triton")
    assert [a.task.name for a in source.attempts(tasks)] == ["softmax"]
    assert [where for where, _ in source.skipped] == ["output_o1.jsonl:2"]


def test_an_instruction_that_names_no_function_is_matched_by_its_description_as_tritonbench_does(
    tmp_path: Path,
) -> None:
    """TritonBench's evaluator finds every answer's task by its functional description in the suite's
    statistics file (`data/TritonBench_T_v1.json`; the checkout names it `.jsonl`, a JSON array all the
    same). Instructions whose entry information starts `input (Tensor): ...` name no function: they are
    matched that way, and an answer that still matches nothing says why in one line."""
    fixture = ROOT / "tests" / "fixtures" / "tritonbench" / "data" / "TritonBench_T_v1"
    folder = tmp_path / "data" / "TritonBench_T_v1"
    folder.mkdir(parents=True)
    for name in ("scaled_add", "halve"):
        (folder / f"{name}.py").write_text((fixture / f"{name}.py").read_text())
    statistics = [
        {
            "name": "scaled_add",
            "file": "scaled_add.py",
            "description": "Adds other, scaled by alpha, to input.\nSee torch.add.",
        },
        {"name": "halve", "file": "halve.py", "description": "Halves each element of input. Adds nothing."},
    ]
    (tmp_path / "data" / "TritonBench_T_v1.jsonl").write_text(json.dumps(statistics))
    tasks = load_tasks(folder).tasks

    def line(description: str) -> dict[str, str]:
        instruction = (f"You are an expert in Trion programming.\nFunctional Description: {description}\n"
                       "Wrapper Entry Information: input (Tensor): the input tensor. out (Tensor, optional).\n")  # fmt: skip
        return {"instruction": instruction, "predict": "x", "label": ""}

    path = tmp_path / "output_gpt-4o.jsonl"
    lines = [line("Adds other, scaled by alpha, to input."), line("Halves each element"), line("Adds"),
             line("Sorts the input.")]  # fmt: skip
    path.write_text("".join(json.dumps(item) + "\n" for item in lines))
    source = AnswerCandidates(path, "triton")
    assert [a.task.name for a in source.attempts(tasks)] == ["scaled_add", "halve"]
    reasons = dict(source.skipped)
    assert reasons["output_gpt-4o.jsonl:3"] == (
        "no task for entry 'input', and its functional description occurs in 2 tasks' statistics "
        "(scaled_add, halve)"
    )  # the description must single out one task, as in TritonBench's evaluator
    assert reasons["output_gpt-4o.jsonl:4"] == (
        "no task for entry 'input', and its functional description occurs in no task's statistics"
    )
    (tmp_path / "data" / "TritonBench_T_v1.jsonl").unlink()  # no statistics file: the entry name alone
    source = AnswerCandidates(path, "triton")
    assert list(source.attempts(tasks)) == []
    assert dict(source.skipped)["output_gpt-4o.jsonl:1"] == "no task for entry 'input'"


def test_a_tritonbench_g_answer_is_matched_by_its_label_in_the_gold_code_as_tritonbench_does(
    tmp_path: Path,
) -> None:
    """TritonBench-G's instructions name no function or file; its evaluator finds the task whose gold code
    (`output` in data/TritonBench_G_v1.json) contains the answer's `label`. A label whose gold file the
    loader refused says so."""
    fixture = ROOT / "tests" / "fixtures" / "tritonbench" / "data" / "TritonBench_T_v1" / "scaled_add.py"
    folder = tmp_path / "data" / "TritonBench_G_v1"
    folder.mkdir(parents=True)
    (folder / "fused_op.py").write_text(fixture.read_text())
    (folder / "broken_op.py").write_text("print('no reference here')\n")
    statistics = [
        {"file": "fused_op.py", "output": "import torch\n\ndef scaled_add(x, y):\n    return x + y\n"},
        {"file": "broken_op.py", "output": "import torch\n\nclass Broken:\n    pass\n"},
    ]
    (tmp_path / "data" / "TritonBench_G_v1.json").write_text(json.dumps(statistics))
    loaded = load_tasks(folder)
    assert [task.name for task in loaded.tasks] == ["fused_op"] and len(loaded.errors) == 1
    instruction = "You are a expert in writing Triton operators.\n    The Triton code adds two tensors.\n"
    lines = [
        {
            "instruction": instruction,
            "predict": "x",
            "label": "def scaled_add(x, y):\n    return x + y<|im_end|>",
        },
        {"instruction": instruction, "predict": "x", "label": "class Broken:"},
        {"instruction": instruction, "predict": "x", "label": "def nothing_like_it():"},
    ]
    path = tmp_path / "output_gpt-4o_comp.jsonl"
    path.write_text("".join(json.dumps(item) + "\n" for item in lines))
    source = AnswerCandidates(path, "triton")
    assert [a.task.name for a in source.attempts(loaded.tasks)] == ["fused_op"]
    assert dict(source.skipped) == {
        "output_gpt-4o_comp.jsonl:2": "its label belongs to broken_op.py, which is not a loaded task (see the "
        "loader's refusals)",
        "output_gpt-4o_comp.jsonl:3": "its label occurs in no task's statistics",
    }


@pytest.mark.skipif("entry" not in Task.__dataclass_fields__, reason="tasks have no entry names yet")
def test_a_tritonbench_entry_name_matches_a_function_tasks_entry(tmp_path: Path, tasks: list[Task]) -> None:
    import dataclasses

    relu = next(task for task in tasks if task.name == "relu")
    function_task = dataclasses.replace(relu, name="tritonbench_t/fused_relu_file", entry="fused_relu")
    path = tmp_path / "output_gpt-4o.jsonl"
    path.write_text(tritonbench_line("fused_relu", RELU_KERNEL) + "\n")
    [attempt] = AnswerCandidates(path, "triton").attempts([function_task])
    assert attempt.task is function_task and attempt.model == "gpt-4o"


def test_the_identity_changes_when_an_answer_file_changes(answers: Path) -> None:
    before = AnswerCandidates(answers, "triton").identity()
    assert before == AnswerCandidates(answers, "triton").identity()
    assert before["kind"] == "answers"
    with (answers / "plain.jsonl").open("a") as file:
        file.write(plain_line("relu", "qwen3-8b", "another answer") + "\n")
    assert AnswerCandidates(answers, "triton").identity() != before


def test_a_missing_path_is_a_usage_error_not_a_crash(tmp_path: Path) -> None:
    from kernelvault.cli import main

    stderr = io.StringIO()
    with contextlib.redirect_stderr(stderr):
        code = main(["corpus", "--tasks", str(ROOT / "tasks" / "relu.py"), "--answers", str(tmp_path / "none"),
                     "--out", str(tmp_path / "out"), "--platform", "cpu", "--no-progress"])  # fmt: skip
    assert code == 2 and "answers not found" in stderr.getvalue()


def test_answers_are_model_output_refused_without_a_jail_unless_the_user_opts_in(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    from kernelvault.cli import main

    monkeypatch.setenv("KV_ISOLATION", "process")  # this machine without a jail, as far as the verifier knows
    monkeypatch.delenv("KV_ALLOW_UNJAILED", raising=False)
    path = tmp_path / "answers.jsonl"
    path.write_text(plain_line("relu", "m", FENCED_RELU) + "\n")
    stderr = io.StringIO()
    with contextlib.redirect_stderr(stderr), contextlib.redirect_stdout(io.StringIO()):
        code = main(["corpus", "--tasks", str(ROOT / "tasks" / "relu.py"), "--answers", str(path),
                     "--out", str(tmp_path / "out"), "--platform", "cpu", "--no-progress"])  # fmt: skip
    assert code == 2 and "without an OS jail" in stderr.getvalue()
    assert not (tmp_path / "out" / "data").exists()


@pytest.mark.slow  # one real verification on the interpreter: ~12 s
def test_the_main_job_verifies_an_answers_file_and_writes_the_model_into_the_row(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    from kernelvault.cli import main

    monkeypatch.setenv("KV_ALLOW_UNJAILED", "1")  # runs where the machine has no jail too (the rows say so)
    path = tmp_path / "answers.jsonl"
    broken = '{"task": "relu", "model": "m", "answer": "cut off'  # a line the writer never finished
    path.write_text(
        plain_line("relu", "qwen3-8b", FENCED_RELU)
        + "\n"
        + plain_line("nope", "m", "x")
        + "\n"
        + broken
        + "\n"
    )
    printed = io.StringIO()
    with contextlib.redirect_stdout(printed):
        code = main(["corpus", "--tasks", str(ROOT / "tasks" / "relu.py"), "--answers", str(path),
                     "--out", str(tmp_path / "out"), "--platform", "cpu", "--timeout", "25",
                     "--no-progress"])  # fmt: skip
    assert code == 0, printed.getvalue()
    assert "1 answer file(s), 2 answers of 2 model(s)" in printed.getvalue()
    assert "skipped 2 answer line(s)" in printed.getvalue() and "answers.jsonl:2" in printed.getvalue()
    # The run record lists what was skipped, so it is not only in a scrolled-away message.
    [record] = (tmp_path / "out" / "runs").glob("*.json")
    skipped = sorted(json.loads(record.read_text())["skipped_input"], key=lambda entry: entry["line"])
    assert skipped == [
        {"file": "answers.jsonl", "line": 2, "reason": "no task named 'nope'"},
        {"file": "answers.jsonl", "line": 3, "reason": "not JSON (Unterminated string starting at)"},
    ]
    [row] = [row for shard in sorted((tmp_path / "out" / "data" / "triton").glob("*.parquet"))
             for row in pq.read_table(shard).to_pylist()]  # fmt: skip
    assert (row["task_name"], row["model"], row["candidate_origin"]) == ("relu", "qwen3-8b", "model:qwen3-8b")
    assert row["answer"] == FENCED_RELU and row["code"].strip() == RELU_KERNEL.strip()
    assert row["correct"] is True, row["failure_message"]

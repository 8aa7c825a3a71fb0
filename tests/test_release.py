"""Release folders: dedup marks, decontamination, and sft/rl configs that TRL's own format code accepts."""

from __future__ import annotations

import re
from pathlib import Path

import datasets
import pytest
from corpus_rows import ROOT, example_code, row_for

from kernelvault.corpus.release import build_release
from kernelvault.corpus.shards import ShardWriter
from kernelvault.toolchain.tasks import parse_task


def renamed(code: str) -> str:
    """The same kernel with its local names changed consistently."""
    for old, new in (("offsets", "idx"), ("mask", "valid"), ("out_ptr", "dst_ptr"), ("x_ptr", "src_ptr")):
        code = re.sub(rf"\b{old}\b", new, code)
    return code


@pytest.fixture()
def corpus_dir(tmp_path: Path) -> Path:
    relu = example_code("relu")
    rows = [
        row_for("relu", relu, True, 0, speedup=1.5),
        row_for(
            "relu", "# a comment the model added\n" + relu.replace("\n\n", "\n\n\n"), True, 1, speedup=1.4
        ),
        row_for("relu", renamed(relu), True, 2, speedup=1.3),
        row_for("relu", example_code("silu"), False, 3),  # wrong kernel for the task: a mismatch
        row_for("softmax", example_code("softmax"), True, 0, speedup=2.0),
        row_for("silu", example_code("silu"), True, 0, speedup=None),
    ]
    with ShardWriter(tmp_path / "corpus", "triton", "run1", max_rows=4) as writer:
        writer.write_many(rows)
    return tmp_path / "corpus"


def test_release_marks_duplicates_and_keeps_them_out_of_sft(corpus_dir: Path, tmp_path: Path) -> None:
    report = build_release(corpus_dir, tmp_path / "release")
    assert report.exact_duplicates["triton"] == 1 and report.near_duplicates["triton"] == 1
    attempts = datasets.load_dataset(str(tmp_path / "release"), data_dir="triton", split="train")
    assert attempts.num_rows == 6  # every attempt stays: GRPO statistics need each sample
    by_sample = {(row["task_name"], row["sample_index"]): row for row in attempts}
    original = by_sample[("relu", 0)]
    assert original["duplicate_of"] is None
    assert by_sample[("relu", 1)]["duplicate_kind"] == "exact"
    assert by_sample[("relu", 1)]["duplicate_of"] == original["attempt_id"]
    assert by_sample[("relu", 2)]["duplicate_kind"] == "near"
    assert by_sample[("relu", 1)]["code_norm_hash"] == original["code_norm_hash"]

    sft = datasets.load_dataset(str(tmp_path / "release"), data_dir="sft", split="train+test")
    assert sorted(sft["task_name"]) == ["relu", "silu", "softmax"]  # correct, non-duplicate attempts only
    assert report.rows["sft"] == 3 and report.rows["rl"] == 3


def test_decontamination_drops_matching_tasks_and_says_which(corpus_dir: Path, tmp_path: Path) -> None:
    softmax = (ROOT / "tasks" / "softmax.py").read_text()
    eval_set = [parse_task("# evaluation copy\n" + softmax, "eval/softmax_copy", "eval")]
    report = build_release(corpus_dir, tmp_path / "release", eval_tasks=eval_set)
    assert [(c.task_name, c.eval_task, c.kind) for c in report.contaminated] == [
        ("softmax", "eval/softmax_copy", "exact")
    ]
    assert report.dropped_rows == 1
    attempts = datasets.load_dataset(str(tmp_path / "release"), data_dir="triton", split="train")
    assert "softmax" not in set(attempts["task_name"])
    rl = datasets.load_dataset(str(tmp_path / "release"), data_dir="rl", split="train")
    assert "softmax" not in set(rl["task_name"])
    assert any("dropped task softmax" in line for line in report.lines())


def test_sft_and_rl_configs_pass_trls_format_handling(corpus_dir: Path, tmp_path: Path) -> None:
    trl_data = pytest.importorskip("trl.data_utils")
    build_release(corpus_dir, tmp_path / "release")
    tokenizer = tiny_chat_tokenizer()
    sft = datasets.load_dataset(str(tmp_path / "release"), data_dir="sft", split="train")
    for example in sft:
        assert trl_data.is_conversational(example)
        text = trl_data.maybe_apply_chat_template(example, tokenizer)["text"]
        assert "ModelNew" in text and "class Model(nn.Module)" in text  # the answer and the reference
    rl = datasets.load_dataset(str(tmp_path / "release"), data_dir="rl", split="train")
    for example in rl:
        assert trl_data.is_conversational(example)
        prompt = trl_data.maybe_apply_chat_template(example, tokenizer)["prompt"]
        assert example["task_source"].splitlines()[0] in prompt
        # the reference in the row is the task itself: the reward function can rebuild it
        assert parse_task(example["task_source"], example["task_name"], "rl").task_id == example["task_id"]
    verl = datasets.load_dataset(str(tmp_path / "release"), data_dir="rl_verl", split="train")
    assert set(verl.column_names) == {"data_source", "prompt", "ability", "reward_model", "extra_info"}
    assert verl[0]["reward_model"]["style"] == "rule" and verl[0]["data_source"] == "kernelvault/triton"


def tiny_chat_tokenizer():  # noqa: ANN201 - a transformers tokenizer
    """A word-level tokenizer with a chat template, trained on nothing: enough for template rendering."""
    from tokenizers import Tokenizer, models, pre_tokenizers
    from transformers import PreTrainedTokenizerFast

    backend = Tokenizer(models.WordLevel({"<unk>": 0}, unk_token="<unk>"))
    backend.pre_tokenizer = pre_tokenizers.Whitespace()
    tokenizer = PreTrainedTokenizerFast(tokenizer_object=backend, unk_token="<unk>", eos_token="<unk>")
    tokenizer.chat_template = (
        "{% for m in messages %}<|{{ m['role'] }}|>\n{{ m['content'] }}\n{% endfor %}"
        "{% if add_generation_prompt %}<|assistant|>\n{% endif %}"
    )
    return tokenizer


def test_held_out_tasks_are_sfts_test_split_and_the_rl_validation_split_the_same_on_every_build(
    corpus_dir: Path, tmp_path: Path
) -> None:
    """One rule (a hash of the task id) holds whole tasks out: every row of theirs is in `sft`'s test split and
    their prompts in the rl configs' validation split; no task is on both sides; a second build agrees."""
    from kernelvault.agents.prompting import initial_messages

    report = build_release(corpus_dir, tmp_path / "release", held_out_fraction=0.2)
    assert len(report.held_out_tasks) == 1  # three tasks: one held out, two train
    tasks_by_split: dict[str, dict[str, set[str]]] = {}
    for config in ("sft", "rl", "rl_verl"):
        splits = datasets.load_dataset(str(tmp_path / "release"), data_dir=config)
        assert set(splits) == ({"train", "test"} if config == "sft" else {"train", "validation"}), config
        tasks_by_split[config] = {split: {row["task_name"] if "task_name" in row else row["extra_info"]["task_name"]
                                          for row in rows} for split, rows in splits.items()}  # fmt: skip
        train, held = (
            tasks_by_split[config][split] for split in ("train", "test" if config == "sft" else "validation")
        )
        assert held == set(report.held_out_tasks) and not train & held, config
        assert train | held == {"relu", "silu", "softmax"}, config
    sft_test = datasets.load_dataset(str(tmp_path / "release"), data_dir="sft", split="test")
    assert sft_test.num_rows == 1 and sft_test[0]["messages"][-1]["role"] == "assistant"
    rl = datasets.load_dataset(str(tmp_path / "release"), data_dir="rl")
    row = next(row for split in rl.values() for row in split if row["task_name"] == "relu")
    # The agents' opening for the platform the rows were verified on, few-shot included.
    assert row["prompt"] == initial_messages(row["task_source"], "triton", "cpu")
    assert len(row["prompt"]) == 4 and row["prompt"][2]["role"] == "assistant"
    # Chosen by task id, not by row order or a random draw: a second build holds out the same task.
    again = build_release(corpus_dir, tmp_path / "again", held_out_fraction=0.2)
    assert again.held_out_tasks == report.held_out_tasks
    sft_again = datasets.load_dataset(str(tmp_path / "again"), data_dir="sft", split="test")
    assert sft_again["attempt_id"] == sft_test["attempt_id"]


def test_a_task_keeps_its_side_of_the_split_when_tasks_are_added() -> None:
    from kernelvault.corpus.split import held_out_tasks

    ids = [f"task-{i}" for i in range(200)]
    held = held_out_tasks(ids[:100])
    assert 0 < len(held) < 100
    assert held_out_tasks(ids) & set(ids[:100]) == held  # a hash of the id alone: the first 100 did not move
    assert held_out_tasks(reversed(ids[:100])) == held
    assert (
        len(held_out_tasks(["a", "b"], 0.1)) == len(held_out_tasks(["a", "b"], 1.0)) == 1
    )  # one on each side
    assert held_out_tasks(["a", "b"], 0.0) == set() and held_out_tasks(["a"], 0.5) == set()


def test_optimisation_rows_form_kernel_to_kernel_configs_of_their_own(tmp_path: Path) -> None:
    """Rows of optimisation tasks (a baseline) go to `triton2triton`, the others stay in `triton`; both load with
    `datasets`, the card names both, and the SFT rows mark the kernel-to-kernel ones."""
    from corpus_rows import row_for as plain_row

    from kernelvault.corpus.card import release_configs
    from kernelvault.toolchain.tasks import load_tasks

    optimisation = next(
        task for task in load_tasks("bundled:optimise").tasks if task.name == "relu__uncoalesced"
    )
    k2k = plain_row("relu", example_code("relu"), True, 0)
    k2k |= {"task_id": optimisation.task_id, "task_name": optimisation.name, "task_source": optimisation.source,
            "attempt_id": f"run1/{optimisation.task_id}/0/0", "baseline_hash": "0123456789abcdef",
            "speedup_over_baseline": 3.2, "baseline_timings": []}  # fmt: skip
    with ShardWriter(tmp_path / "corpus", "triton", "run1", max_rows=4) as writer:
        writer.write(plain_row("silu", example_code("silu"), True, 0))
        writer.write(k2k)
    report = build_release(tmp_path / "corpus", tmp_path / "release")
    assert report.rows["triton"] == 1 and report.rows["triton2triton"] == 1
    assert release_configs(tmp_path / "release")[:2] == ["triton", "triton2triton"]
    loaded = datasets.load_dataset(
        "parquet", data_dir=str(tmp_path / "release" / "triton2triton"), split="train"
    )
    assert loaded[0]["task_name"] == "relu__uncoalesced" and loaded[0]["speedup_over_baseline"] == 3.2
    sft = datasets.load_dataset("parquet", data_dir=str(tmp_path / "release" / "sft"), split="train+test")
    assert sorted((row["task_name"], row["kernel_to_kernel"]) for row in sft) == [
        ("relu__uncoalesced", True), ("silu", False)
    ]  # fmt: skip


def test_a_release_folder_loads_by_config_name_with_datasets(corpus_dir: Path, tmp_path: Path,
                                                            capsys: pytest.CaptureFixture) -> None:  # fmt: skip
    """`kernelvault release` writes the same dataset card as `publish`: `datasets` finds each config by name."""
    from kernelvault.cli import main

    release = tmp_path / "release"
    assert main(["release", "--dataset", str(corpus_dir), "--out", str(release)]) == 0
    assert f'datasets.load_dataset("{release}", "sft")' in capsys.readouterr().out
    card = (release / "README.md").read_text()
    assert "config_name: sft" in card and "path/to/release" in card and "revision=" not in card
    cache = str(tmp_path / "cache")
    expected = {"triton": 6, "sft": 3, "rl": 3, "rl_verl": 3}
    for config, rows in expected.items():
        splits = datasets.load_dataset(str(release), config, cache_dir=cache)
        assert sum(split.num_rows for split in splits.values()) == rows, config
    assert (
        datasets.load_dataset(str(release), split="train", cache_dir=cache).num_rows == 6
    )  # the default: triton
    assert any((release / "plots").glob("*.png"))  # the card's plots are in the folder it describes


def test_sft_and_rl_rows_open_with_the_agents_prompt_for_the_platform_they_were_verified_on(
    tmp_path: Path,
) -> None:
    """One prompt builder: an `sft` row of a candidate without a conversation opens as the task's `rl` prompt does,
    and both name where the rows were verified: a corpus built without a GPU does not claim a GPU's verdict."""
    rows = [row_for("relu", example_code("relu"), True, 0), row_for("silu", example_code("silu"), True, 0)]
    rows += [row_for("softmax", example_code("softmax"), True, 0, speedup=2.0, platform="rocm")]
    with ShardWriter(tmp_path / "corpus", "triton", "run1") as writer:
        writer.write_many(rows)
    build_release(tmp_path / "corpus", tmp_path / "release")
    sft = datasets.load_dataset(str(tmp_path / "release"), data_dir="sft", split="train+test")
    rl = datasets.load_dataset(str(tmp_path / "release"), data_dir="rl", split="train+validation")
    prompts = {row["task_name"]: row["prompt"] for row in rl}
    for row in sft:
        opening = [{"role": m["role"], "content": m["content"]} for m in row["messages"][:-1]]
        assert opening == prompts[row["task_name"]], row["task_name"]
        assert row["messages"][-1]["role"] == "assistant" and "ModelNew" in row["messages"][-1]["content"]
    system = {row["task_name"]: row["messages"][0]["content"] for row in sft}
    for name in ("relu", "silu"):  # verified on cpu: the interpreter, nothing timed
        assert "without a GPU" in system[name] and "nothing is timed" in system[name]
        assert "timed there" not in system[name]
    assert (
        "on an AMD Instinct GPU under ROCm" in system["softmax"] and "without a GPU" not in system["softmax"]
    )

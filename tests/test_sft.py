"""SFT on a corpus built by the main job and published to the local hub, loaded back by tag.

A tiny Qwen3 (random weights, `Qwen3Config` with explicit sizes and head_dim) and a byte-level BPE tokenizer
trained on the spot with `tokenizers` are saved to a temporary folder and loaded by path, as a downloaded
checkpoint would be. Nothing is downloaded. Covered: the split by task and the filters, the HIP/Triton mix,
which tokens of a rendered multi-turn trajectory carry loss, the loss falling on a repeated batch, resuming
from a checkpoint (same weights as an uninterrupted run), and the pass rate measured by the agents and the
verifier through an in-process OpenAI-compatible server.
"""

from __future__ import annotations

import contextlib
import io
import json
import shutil
import urllib.request
from collections.abc import Iterator
from pathlib import Path

import pytest

pytest.importorskip("trl")
pytest.importorskip("peft")

import datasets  # noqa: E402
import torch  # noqa: E402
from safetensors.torch import load_file  # noqa: E402

from kernelvault.cli import main as kernelvault_main  # noqa: E402
from kernelvault.cli.sft import main as sft_main  # noqa: E402
from kernelvault.sft.config import load_config  # noqa: E402
from kernelvault.sft.data import (  # noqa: E402
    DatasetSource,
    SFTData,
    load_sft_data,
    mix_targets,
    train_and_test,
    training_example,
)

ROOT = Path(__file__).resolve().parents[1]
TINY_YAML = ROOT / "sft" / "configs" / "tiny.yaml"
CORPUS_TASKS = ("leaky_relu", "cumsum", "mse_loss")  # three bundled tasks with honest example kernels
REPO = "acme/kernels"


def quiet(function, *args):  # noqa: ANN001, ANN202 - a CLI entry point and its arguments
    stdout, stderr = io.StringIO(), io.StringIO()
    with contextlib.redirect_stdout(stdout), contextlib.redirect_stderr(stderr):
        code = function(*args)
    return code, stdout.getvalue(), stderr.getvalue()


@pytest.fixture(scope="module")
def hub(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Path]:
    """The main job over three tasks (bundled example kernels, verified on cpu), published as v0.1.0."""
    root = tmp_path_factory.mktemp("sft-hub")
    tasks = root / "tasks"
    tasks.mkdir()
    for name in CORPUS_TASKS:
        shutil.copy(ROOT / "tasks" / f"{name}.py", tasks / f"{name}.py")
    with pytest.MonkeyPatch.context() as patch:
        patch.setenv("KV_HUB_DIR", str(root / "hub"))
        patch.delenv("KV_HUB", raising=False)
        code, printed, _ = quiet(kernelvault_main, ["corpus", "--tasks", str(tasks), "--out", str(root / "corpus"),
                                                    "--platform", "cpu", "--timeout", "60", "--no-progress"])  # fmt: skip
        assert code == 0, printed
        code, printed, _ = quiet(kernelvault_main, ["publish", "--dataset", str(root / "corpus"), "--repo", REPO,
                                                    "--version", "0.1.0"])  # fmt: skip
        assert code == 0, printed
        yield root


@pytest.fixture(scope="module")
def tiny_model(hub: Path, tmp_path_factory: pytest.TempPathFactory) -> Path:
    """A 2-layer Qwen3 and a BPE tokenizer trained on the corpus text, saved like a downloaded checkpoint."""
    from transformers import Qwen3Config, Qwen3ForCausalLM

    from kernelvault.sft.models import train_tokenizer

    rows = datasets.load_dataset("parquet", data_dir=str(hub / "corpus" / "data" / "triton"), split="train")
    prompts = [path.read_text() for path in (ROOT / "agents" / "prompt_files").glob("*.md")]
    tokenizer = train_tokenizer(
        [*rows["task_source"], *(code or "" for code in rows["code"]), *prompts], 1024
    )
    config = Qwen3Config(
        vocab_size=len(tokenizer), hidden_size=64, intermediate_size=128, num_hidden_layers=2,
        num_attention_heads=4, num_key_value_heads=2, head_dim=16, max_position_embeddings=8192,
        tie_word_embeddings=True, eos_token_id=tokenizer.eos_token_id, pad_token_id=tokenizer.pad_token_id,
    )  # fmt: skip
    torch.manual_seed(0)
    path = tmp_path_factory.mktemp("tiny-qwen3")
    Qwen3ForCausalLM(config).save_pretrained(path)
    tokenizer.save_pretrained(path)
    return path


def tiny_settings(model: Path, output_dir: Path, **overrides: object) -> list[str]:
    """Command-line options for a short run of the tiny config on the published dataset."""
    settings: dict[str, object] = {
        "dataset": REPO, "revision": "v0.1.0", "model": model, "output-dir": output_dir, "max-steps": 6,
        "save-steps": 3, "eval-steps": 3, "max-length": 8192, "evaluate": "off",
    }  # fmt: skip
    settings.update(overrides)
    return [
        "--config",
        str(TINY_YAML),
        *(part for key, value in settings.items() for part in (f"--{key}", str(value))),
    ]


def multi_turn_row(attempt_turn: int = 1, legacy: bool = False) -> dict:
    """An sft row as the agents leave it: system, few-shot pair, task, a failed turn, feedback, the fix.

    `legacy`: as releases built before December 2026 stored it, the reasoning in a column of its own."""
    messages = [
        ("system", "You write Triton kernels.", None),
        ("user", "Reference: FEWSHOT_REFERENCE", None),
        ("assistant", "```python\nFEWSHOT_ANSWER\n```", None),
        ("user", "Reference: THE_TASK", None),
        ("assistant", "```python\nFIRST_TRY\n```", "thinking once"),
        ("user", "compile_error: FEEDBACK", None),
        ("assistant", "```python\nFIXED\n```", "thinking twice"),
    ]
    reasoning: dict = {"reasoning": ["", "thinking once", "thinking twice"]} if legacy else {}
    return {
        "messages": [{"role": role, "content": content, **({} if legacy else {"reasoning_content": thought})}
                     for role, content, thought in messages],  # fmt: skip
        **reasoning,
        "task_id": "t1", "task_name": "relu", "task_category": None, "target": "triton", "platform": "cpu",
        "reward": 1.4, "speedup": None, "model": "m", "attempt_id": f"run/t1/0/{attempt_turn}",
    }  # fmt: skip


def trained_spans(tiny_model: Path, tmp_path: Path, final_answer_only: bool, chat_template: str = "kernelvault",
                  row: dict | None = None) -> tuple[list[str], str]:  # fmt: skip
    """The loss-carrying text of the rendered sample, as SFTTrainer prepared it, and the whole text."""
    from kernelvault.sft.chat_template import loss_spans
    from kernelvault.sft.train import build_trainer, load_model_and_tokenizer

    config = load_config(TINY_YAML, {"model": str(tiny_model), "output_dir": str(tmp_path), "packing": False,
                                     "chat_template": chat_template})  # fmt: skip
    example = training_example(row or multi_turn_row(), final_answer_only)
    data = SFTData(DatasetSource("release", "test"), datasets.Dataset.from_list([example]), None, {}, {})
    model, tokenizer = load_model_and_tokenizer(config, data)
    prepared = build_trainer(config, data, model, tokenizer).train_dataset[0]
    spans = loss_spans(tokenizer, prepared["input_ids"], prepared["labels"])
    return [text for text, trained in spans if trained], "".join(text for text, _ in spans)


def test_assistant_only_loss_covers_the_agents_turns_of_a_multi_turn_trajectory(tiny_model: Path,
                                                                                  tmp_path: Path) -> None:  # fmt: skip
    trained, whole = trained_spans(tiny_model, tmp_path, final_answer_only=False)
    # Both turns the agent wrote, each with its own reasoning and the end-of-turn token (so it learns to stop).
    assert trained == [
        "<think>\nthinking once\n</think>\n\n```python\nFIRST_TRY\n```<|im_end|>\n",
        "<think>\nthinking twice\n</think>\n\n```python\nFIXED\n```<|im_end|>\n",
    ]
    # The system prompt, the few-shot pair, the task and the feedback are context only.
    for context in ("You write Triton kernels.", "FEWSHOT_ANSWER", "THE_TASK", "FEEDBACK"):
        assert context in whole and not any(context in span for span in trained)


def test_releases_that_kept_reasoning_in_a_column_of_its_own_still_train_the_same(tiny_model: Path,
                                                                                     tmp_path: Path) -> None:  # fmt: skip
    assert trained_spans(tiny_model, tmp_path, False, row=multi_turn_row(legacy=True)) == trained_spans(
        tiny_model, tmp_path, False
    )


def test_the_tokenizers_own_template_trains_on_the_rows_reasoning_through_trl(tiny_model: Path,
                                                                               tmp_path: Path) -> None:  # fmt: skip
    """`chat_template: model` (the default): the tokenizer's stock Qwen3 template, which TRL swaps for its own
    training variant, reads each assistant message's `reasoning_content` as the release stores it."""
    trained, whole = trained_spans(tiny_model, tmp_path, False, chat_template="model")
    assert any("thinking twice" in span and "FIXED" in span for span in trained)
    assert "thinking once" in whole  # the earlier turn's reasoning is kept, not dropped by the template
    assert not any(context in span for span in trained for context in ("THE_TASK", "FEEDBACK"))


def test_a_template_trl_cannot_train_with_is_one_clear_error(tiny_model: Path) -> None:
    from kernelvault.sft.chat_template import apply_training_template
    from kernelvault.sft.models import load_tokenizer

    tokenizer = load_tokenizer(str(tiny_model))
    tokenizer.chat_template = "{% for m in messages %}{{ m['content'] }}{% endfor %}"  # no generation markers
    with pytest.raises(ValueError, match="no {% generation %} markers") as error:
        apply_training_template(tokenizer, "model")
    assert "\n" not in str(error.value)
    apply_training_template(tokenizer, "kernelvault")  # the way out the message names
    assert "generation" in tokenizer.chat_template


def test_final_answer_only_trains_on_the_prompt_and_the_answer_that_passed(tiny_model: Path,
                                                                          tmp_path: Path) -> None:  # fmt: skip
    trained, whole = trained_spans(tiny_model, tmp_path, final_answer_only=True)
    assert trained == ["<think>\nthinking twice\n</think>\n\n```python\nFIXED\n```<|im_end|>\n"]
    assert "FIRST_TRY" not in whole and "FEEDBACK" not in whole
    assert "FEWSHOT_ANSWER" in whole and "THE_TASK" in whole  # the prompt the agent saw is kept whole


def published_split(hub: Path) -> tuple[set[str], set[str]]:
    """The task names of the published version's `sft` train and test splits, as a plain `datasets` user sees them."""
    from kernelvault.hub import LocalHub

    splits = datasets.load_dataset(str(LocalHub(hub / "hub").checkout(REPO, "v0.1.0")), "sft",
                                   cache_dir=str(hub / "hf-cache"))  # fmt: skip
    assert set(splits) == {"train", "test"}
    return set(splits["train"]["task_name"]), set(splits["test"]["task_name"])


def test_data_comes_from_the_tag_with_the_published_split_and_filtered(hub: Path) -> None:
    """`kernelvault sft` trains and evaluates on the version's own split (its test split), not one of its own."""
    train_names, test_names = published_split(hub)
    assert len(test_names) == 1 and not train_names & test_names
    assert train_names | test_names == set(CORPUS_TASKS)
    data = load_sft_data(load_config(None, {"dataset": REPO, "revision": "v0.1.0"}))
    assert data.source.kind == "local-hub" and data.source.revision == "v0.1.0"
    assert set(data.train_tasks.values()) == set(data.train["task_name"]) == train_names
    assert data.eval is not None and set(data.eval["task_name"]) == test_names  # all its rows, none in train
    assert [(target, task.name) for target, task in data.eval_prompts] == [("triton", *test_names)]
    assert data.eval_prompts[0][1].task_id == data.eval["task_id"][0]  # the reference the rows were made for
    sample = data.train[0]
    assert sample["messages"][-1]["role"] == "assistant" and "ModelNew" in sample["messages"][-1]["content"]
    assert sample["chat_template_kwargs"] == {"loss_from_message": len(sample["messages"]) - 1}

    # cpu rows are never timed: a speedup filter leaves nothing, and says so in one line
    with pytest.raises(ValueError, match="no SFT rows left"):
        load_sft_data(load_config(None, {"dataset": REPO, "min_speedup": 1.0}))
    with pytest.raises(ValueError, match="no dataset acme/missing in the local hub"):
        load_sft_data(load_config(None, {"dataset": "acme/missing"}))


def test_a_release_without_a_test_split_is_split_on_load_by_the_releases_rule() -> None:
    from kernelvault.corpus.split import held_out_tasks

    rows = [{"task_id": f"id{i:02d}", "task_name": f"task{i}", "target": "triton", "n": n}
            for i in range(30) for n in range(2)]  # fmt: skip
    train, test = train_and_test(datasets.DatasetDict({"train": datasets.Dataset.from_list(rows)}))
    assert set(test["task_id"]) == held_out_tasks({row["task_id"] for row in rows}) != set()
    assert not set(train["task_id"]) & set(test["task_id"]) and train.num_rows + test.num_rows == len(rows)
    with pytest.raises(ValueError, match="eval_task_fraction: no longer a setting; the held-out tasks are"):
        load_config(None, {"eval_task_fraction": 0.2})


def test_hip_and_triton_are_mixed_by_ratio() -> None:
    rows = [{"target": "triton", "i": i} for i in range(200)] + [{"target": "hip", "i": i} for i in range(40)]
    train = datasets.Dataset.from_list(rows)
    mixed = mix_targets(train, 0.5, seed=0)
    share = mixed["target"].count("hip") / mixed.num_rows
    assert 0.4 < share < 0.6 and mixed["target"].count("hip") <= 40  # the larger side is subsampled
    assert set(mix_targets(train, 0.0, seed=0)["target"]) == {"triton"}
    assert mix_targets(train, None, seed=0).num_rows == 240
    with pytest.raises(ValueError, match="needs HIP and Triton"):
        mix_targets(datasets.Dataset.from_list(rows[:5]), 0.3, seed=0)


def test_loss_falls_on_a_repeated_batch(hub: Path, tiny_model: Path, tmp_path: Path) -> None:
    from kernelvault.sft.train import run_sft

    config = load_config(TINY_YAML, {
        "dataset": REPO, "revision": "v0.1.0", "model": str(tiny_model), "output_dir": str(tmp_path),
        "max_train_samples": 1, "packing": False, "max_steps": 24, "learning_rate": 1e-2,
        "evaluate": "off", "save_steps": 100, "eval_steps": 0,
    })  # fmt: skip
    result = run_sft(config)
    losses = [entry["loss"] for entry in result.log_history if "loss" in entry]
    assert len(losses) == 24
    # One sample, seen every step: it is being memorised. The last steps are averaged because single steps
    # at this learning rate jump around, and the tokenizer (trained on the tree's own text) shifts the curve.
    assert sum(losses[-3:]) / 3 < 0.5 * losses[0], losses


def test_tiny_sft_from_the_local_hub_by_tag_resumes_and_measures_pass_rate(hub: Path, tiny_model: Path,
                                                                           tmp_path: Path) -> None:  # fmt: skip
    interrupted, straight = tmp_path / "interrupted", tmp_path / "straight"
    code, printed, errors = quiet(sft_main, tiny_settings(tiny_model, interrupted, **{"max-steps": 3}))
    assert code == 0, errors
    assert (interrupted / "checkpoint-3").is_dir() and "trained 3 steps" in printed

    # The same command with a larger budget continues from the checkpoint, then measures the pass rate.
    code, printed, errors = quiet(
        sft_main, tiny_settings(tiny_model, interrupted, evaluate="after", **{"eval-turns": 1})
    )
    assert code == 0, errors
    assert f"resuming from {interrupted / 'checkpoint-3'}" in printed and "trained 6 steps" in printed
    metrics = json.loads((interrupted / "sft_metrics.json").read_text())
    _, test_names = published_split(hub)
    assert metrics["split"]["revision"] == "v0.1.0" and metrics["split"]["eval_tasks"] == sorted(test_names)
    assert metrics["metrics"]["eval_loss"] > 0 and metrics["metrics"]["tokens_per_second"] > 0
    assert 0 < metrics["metrics"]["sequence_fill"] <= 1  # tiny.yaml packs
    # the first invocation's history came back with the checkpoint
    logged_steps = [entry["step"] for entry in metrics["log_history"] if "loss" in entry]
    assert logged_steps == [1, 2, 3, 4, 5, 6]
    assert (interrupted / "loss.png").read_bytes()[:8] == b"\x89PNG\r\n\x1a\n"

    # A random model writes no kernel; what matters is that the agents asked it and the verifier judged it.
    [rate] = metrics["pass_rate"]
    assert (rate["target"], rate["tasks"], rate["measured"], rate["solved"]) == ("triton", 1, 1, 0)
    assert "pass rate triton: 0/1 = 0.0%" in printed
    rows = datasets.load_dataset("parquet", data_dir=rate["rows"], split="train")
    assert rows["task_name"] == sorted(test_names) and rows["model"][0].startswith("kernelvault-sft/")
    assert rows["failure_kind"][0] is not None  # a verdict from the toolchain, e.g. parse_error

    # Resuming gives the weights an uninterrupted run gives.
    code, _, errors = quiet(sft_main, tiny_settings(tiny_model, straight))
    assert code == 0, errors
    resumed = load_file(interrupted / "final" / "model.safetensors")
    uninterrupted = load_file(straight / "final" / "model.safetensors")
    assert resumed.keys() == uninterrupted.keys()
    for name, weight in resumed.items():
        torch.testing.assert_close(weight, uninterrupted[name], msg=name)


def test_lora_adapter_is_saved_merged_and_measured_on_its_own(
    hub: Path, tiny_model: Path, tmp_path: Path
) -> None:
    lora = {"lora": True, "lora-r": 4, "lora-alpha": 8, "max-steps": 2, "save-merged": True}
    code, _, errors = quiet(sft_main, tiny_settings(tiny_model, tmp_path, **lora))
    assert code == 0, errors
    adapter = json.loads((tmp_path / "final" / "adapter_config.json").read_text())
    assert adapter["r"] == 4 and "q_proj" in adapter["target_modules"]
    assert (tmp_path / "merged" / "model.safetensors").is_file()

    # `evaluate: only` loads the adapter with its base model and measures it without training.
    code, printed, errors = quiet(
        sft_main, tiny_settings(tiny_model, tmp_path, evaluate="only", **{"eval-turns": 1})
    )
    assert code == 0, errors
    assert "trained" not in printed and "pass rate triton: 0/1" in printed
    assert json.loads((tmp_path / "pass_rate.json").read_text())["pass_rate"][0]["measured"] == 1


def test_the_served_model_answers_chat_completions(tiny_model: Path) -> None:
    import openai
    from transformers import AutoModelForCausalLM, AutoTokenizer

    from kernelvault.sft.serve import ChatCompletionServer, split_reasoning

    model = AutoModelForCausalLM.from_pretrained(tiny_model).eval()
    tokenizer = AutoTokenizer.from_pretrained(tiny_model)
    with ChatCompletionServer(model, tokenizer, "tiny") as base_url:
        client = openai.OpenAI(base_url=base_url, api_key="none", max_retries=0)
        reply = client.chat.completions.create(model="tiny", messages=[{"role": "user", "content": "relu"}],
                                               max_tokens=8, temperature=0)  # fmt: skip
        listed = [model.id for model in client.models.list()]
        with pytest.raises(openai.BadRequestError) as refused:  # checked before any generation
            client.chat.completions.create(model="tiny", messages=[{"content": "relu"}], max_tokens=8)  # type: ignore[list-item]
        with urllib.request.urlopen(base_url.removesuffix("/v1") + "/openapi.json", timeout=10) as response:
            routes = json.loads(response.read())["paths"]
    assert reply.choices[0].finish_reason in ("stop", "length") and reply.usage.completion_tokens <= 8
    assert isinstance(reply.choices[0].message.content, str)
    assert listed == ["tiny"] and set(routes) == {"/v1/models", "/v1/chat/completions"}
    assert refused.value.body == {
        "message": "messages.0.role: Field required",
        "type": "invalid_request_error",
    }
    assert split_reasoning("<think>\nplan\n</think>\n\nanswer") == ("plan", "answer")
    assert split_reasoning("plan</think>answer") == ("plan", "answer")
    assert split_reasoning("no thinking") == (None, "no thinking")


def test_sequence_fill_counts_the_packed_sequences_not_the_steps() -> None:
    from kernelvault.sft.throughput import sequence_fill

    # wrapped packing of 10 tokens at length 4: two full sequences and a partial one; after a shuffle
    packed = datasets.Dataset.from_dict({"input_ids": [[1, 2, 3, 4], [5, 6, 7, 8], [9, 10]]}).shuffle(seed=0)
    fill = sequence_fill(packed, 4)
    assert fill["train_sequences"] == 3 and fill["tokens_per_sequence"] == pytest.approx(10 / 3)
    assert fill["sequence_fill"] == pytest.approx(10 / 12)
    assert sequence_fill(datasets.Dataset.from_dict({"text": ["a"]}), 4) == {}


def test_bad_configuration_is_one_line_and_exit_2(tmp_path: Path) -> None:
    bad = tmp_path / "bad.yaml"
    bad.write_text("modle: random:tiny\n")
    code, _, errors = quiet(sft_main, ["--config", str(bad), "--dataset", str(tmp_path)])
    assert code == 2 and "unknown setting(s) modle" in errors and errors.count("\n") == 1
    code, _, errors = quiet(sft_main, ["--dataset", str(tmp_path)])
    assert code == 2 and "neither a corpus folder" in errors
    code, _, errors = quiet(sft_main, ["--dataset", "ds", "--evaluate", "sometimes"])
    assert code == 2 and "evaluate must be one of" in errors


def test_liger_reaches_trl_and_where_it_cannot_run_is_one_line(tmp_path: Path) -> None:
    """The shipped 8B config asks for Liger's kernels (bench/results/2026-12-03-h200-sft-mfu-liger.md); on a machine
    without a GPU that is one line before any data or model is loaded, never a Triton traceback mid-run."""
    from kernelvault.sft.config import load_config
    from kernelvault.sft.train import trainer_arguments

    shipped = load_config(ROOT / "sft" / "configs" / "qwen3-8b-lora.yaml", {"output_dir": str(tmp_path / "out"),
                                                                           "bf16": False})  # fmt: skip
    assert shipped.liger is True and trainer_arguments(shipped, has_eval=False).use_liger_kernel is True
    # A dataset that is no folder is refused before the training stack loads; a version that is not on the hub
    # would only be found when the data is loaded, after the liger check.
    code, _, errors = quiet(sft_main, ["--config", str(ROOT / "sft" / "configs" / "qwen3-8b-lora.yaml"),
                                       "--dataset", "hub:acme/nowhere@v0.1.0"])  # fmt: skip
    assert code == 2 and errors.count("\n") == 1
    assert "liger: true needs a GPU" in errors and "--liger false" in errors

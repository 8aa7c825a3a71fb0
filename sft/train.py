"""One SFT run: data → model → TRL SFTTrainer (full or LoRA) → final model → pass rate on held-out tasks.

Everything lands in `output_dir`:

    checkpoint-N/         Trainer checkpoints (model or adapter, optimizer, scheduler, RNG): a rerun of the
                          same command resumes from the last one (`resume: false` starts over)
    tokenizer/            the tokenizer trained on the spot for a random model (reused on resume)
    final/                the trained model (the LoRA adapter under LoRA) with its tokenizer and template
    merged/               base + adapter merged, for vLLM (`save_merged`, LoRA only)
    split.json            which tasks trained and which were held out, and the dataset version
    sample_loss_view.txt  the first training sequence as rendered, loss-carrying text between ⟦ ⟧
    sft_metrics.json      train and eval loss, tokens/s, MFU, pass rate, the log history
    loss.png              training (and evaluation) loss per step
    pass_rate/            the agents' rows on the held-out tasks (a corpus folder)

Under `accelerate launch` (FSDP) every process trains; only the main one writes the summaries, and the
in-process pass-rate measurement is skipped (serve `final/` with vLLM and run `evaluate: only` with
`eval_base_url`).
"""

from __future__ import annotations

import dataclasses
import importlib.util
import json
import os
from collections.abc import Iterator
from dataclasses import dataclass, field
from pathlib import Path
from typing import TYPE_CHECKING, Any

import torch
from transformers import PreTrainedModel, PreTrainedTokenizerBase
from trl import SFTConfig, SFTTrainer

from kernelvault.agents.prompting import PROMPT_FILES
from kernelvault.sft.chat_template import apply_training_template, loss_view
from kernelvault.sft.config import SFTRunConfig
from kernelvault.sft.data import SFTData, drop_overlong, load_sft_data
from kernelvault.sft.evaluate import PassRate, measure_pass_rate
from kernelvault.sft.models import (
    is_random,
    load_pretrained,
    load_tokenizer,
    parameter_count,
    random_model,
    train_tokenizer,
    world_size,
)
from kernelvault.sft.throughput import (
    ThroughputCallback,
    measured_matmul_tflops,
    sequence_fill,
    training_flops_per_token,
)

if TYPE_CHECKING:
    from peft import LoraConfig


@dataclass
class SFTResult:
    output_dir: Path
    final_dir: Path | None = None
    global_step: int = 0
    resumed_from: str | None = None
    metrics: dict[str, float] = field(default_factory=dict)
    log_history: list[dict[str, Any]] = field(default_factory=list)
    pass_rates: list[PassRate] = field(default_factory=list)
    loss_plot: Path | None = None


def _say(line: str) -> None:
    if int(os.environ.get("RANK", "0")) == 0:
        print(line, flush=True)


def tokenizer_texts(data: SFTData) -> Iterator[str]:
    """What a random model's tokenizer learns from: the training samples and the agents' prompt files."""
    for row in data.train:
        for message in row["messages"]:
            yield message["content"]
            if message["reasoning_content"]:
                yield message["reasoning_content"]
    for path in sorted(PROMPT_FILES.glob("*.md")):
        yield path.read_text(encoding="utf-8")


def load_model_and_tokenizer(
    config: SFTRunConfig, data: SFTData | None
) -> tuple[PreTrainedModel, PreTrainedTokenizerBase]:
    output_dir = Path(config.output_dir)
    if is_random(config.model):
        saved = output_dir / "tokenizer"
        if config.tokenizer:
            tokenizer = load_tokenizer(config.tokenizer)
        elif saved.is_dir():  # a resumed run must keep the vocabulary its checkpoints were trained with
            tokenizer = load_tokenizer(str(saved))
        else:
            if data is None:
                raise ValueError(
                    f"{config.model} needs training data (or `tokenizer`) to build its tokenizer"
                )
            tokenizer = train_tokenizer(tokenizer_texts(data), config.tokenizer_vocab_size)
            if int(os.environ.get("RANK", "0")) == 0:
                staging = output_dir / ".tokenizer.tmp"
                tokenizer.save_pretrained(staging)
                staging.rename(saved)
        model = random_model(config.model, tokenizer, config.dtype, config.seed)
    else:
        tokenizer = load_tokenizer(config.tokenizer or config.model)
        model = load_pretrained(config.model, config.dtype, config.attn_implementation)
    apply_training_template(tokenizer, config.chat_template)
    return model, tokenizer


def trainer_arguments(config: SFTRunConfig, has_eval: bool) -> SFTConfig:
    """TRL's SFTConfig from the run's configuration; `trainer` settings are applied last."""
    evaluate_during = has_eval and config.eval_steps > 0
    settings: dict[str, Any] = dict(
        output_dir=config.output_dir, max_length=config.max_length, packing=config.packing,
        assistant_only_loss=True, learning_rate=config.learning_rate, lr_scheduler_type=config.lr_scheduler_type,
        warmup_steps=config.warmup_steps, weight_decay=config.weight_decay, num_train_epochs=config.num_train_epochs,
        max_steps=config.max_steps, per_device_train_batch_size=config.per_device_train_batch_size,
        per_device_eval_batch_size=config.per_device_eval_batch_size,
        gradient_accumulation_steps=config.gradient_accumulation_steps,
        bf16=config.bf16, logging_steps=config.logging_steps,
        logging_first_step=True, eval_strategy="steps" if evaluate_during else "no",
        eval_steps=config.eval_steps if evaluate_during else None, save_strategy="steps", save_steps=config.save_steps,
        save_total_limit=config.save_total_limit, seed=config.seed, report_to="none",
        include_num_input_tokens_seen="non_padding", disable_tqdm=True,
        dataloader_pin_memory=torch.cuda.is_available(),
    )  # fmt: skip
    # transformers 5 renamed gradient_checkpointing to activation_checkpointing (the old name warns).
    renamed = "activation_checkpointing" in {item.name for item in dataclasses.fields(SFTConfig)}
    settings["activation_checkpointing" if renamed else "gradient_checkpointing"] = (
        config.gradient_checkpointing
    )
    settings["use_liger_kernel"] = config.liger
    settings.update(config.trainer)
    try:
        return SFTConfig(**settings)
    except TypeError as error:  # an unknown key under `trainer:`
        raise ValueError(f"trainer settings: {error}") from None


def lora_config(config: SFTRunConfig) -> LoraConfig:
    from peft import LoraConfig

    return LoraConfig(r=config.lora_r, lora_alpha=config.lora_alpha, lora_dropout=config.lora_dropout,
                      target_modules=config.lora_target_modules, task_type="CAUSAL_LM")  # fmt: skip


def build_trainer(config: SFTRunConfig, data: SFTData, model: PreTrainedModel,
                  tokenizer: PreTrainedTokenizerBase) -> SFTTrainer:  # fmt: skip
    """TRL's SFTTrainer for the run; the datasets are tokenized, loss-masked and packed here."""
    if config.lora:
        try:
            import peft  # noqa: F401
        except ImportError:
            raise ValueError("lora: true needs peft: pip install 'kernelvault[train]'") from None
    return SFTTrainer(model=model, args=trainer_arguments(config, has_eval=data.eval is not None),
                      train_dataset=data.train, eval_dataset=data.eval, processing_class=tokenizer,
                      peft_config=lora_config(config) if config.lora else None)  # fmt: skip


def throughput_callback(config: SFTRunConfig, trainer: SFTTrainer) -> ThroughputCallback:
    device = trainer.args.device
    peak = measured_matmul_tflops(device) if device.type == "cuda" else None  # MFU on GPUs only
    flops = training_flops_per_token(trainer.model.config, config.max_length, config.lora)
    return ThroughputCallback(flops, peak, world_size=trainer.accelerator.num_processes)


def last_checkpoint(output_dir: Path) -> str | None:
    from transformers.trainer_utils import get_last_checkpoint

    return get_last_checkpoint(str(output_dir)) if output_dir.is_dir() else None


def plot_loss(log_history: list[dict[str, Any]], path: Path, title: str) -> Path | None:
    train = [(entry["step"], entry["loss"]) for entry in log_history if "loss" in entry]
    evaluation = [(entry["step"], entry["eval_loss"]) for entry in log_history if "eval_loss" in entry]
    if not train:
        return None
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    figure, axes = plt.subplots(figsize=(7, 4))
    axes.plot(*zip(*train, strict=True), label="train loss (assistant tokens)")
    if evaluation:
        axes.plot(*zip(*evaluation, strict=True), marker="o", label="eval loss (held-out tasks)")
    axes.set_xlabel("optimizer step")
    axes.set_ylabel("cross-entropy (nats / token)")
    axes.set_title(title)
    axes.grid(alpha=0.3)
    axes.legend()
    figure.tight_layout()
    figure.savefig(path, dpi=120)
    plt.close(figure)
    return path


def check_liger(config: SFTRunConfig) -> None:
    """`liger: true` where it cannot run is a one-line error before any model is loaded: Liger's kernels are
    Triton kernels for a GPU (Triton's CPU interpreter cannot run them), and TRL imports them at start."""
    if not config.liger:
        return
    if not torch.cuda.is_available():
        raise ValueError("liger: true needs a GPU (Liger's kernels are Triton kernels); set liger: false "
                         "(--liger false) on this machine")  # fmt: skip
    if importlib.util.find_spec("liger_kernel") is None:
        raise ValueError("liger: true needs the liger-kernel package: pip install 'kernelvault[train]'")


def train(config: SFTRunConfig, data: SFTData) -> tuple[SFTResult, PreTrainedModel, PreTrainedTokenizerBase]:
    """Train (resuming when a checkpoint exists) and save; returns the result, the model and the tokenizer."""
    output_dir = Path(config.output_dir)
    output_dir.mkdir(parents=True, exist_ok=True)
    resume = last_checkpoint(output_dir) if config.resume else None
    model, tokenizer = load_model_and_tokenizer(config, data)
    data.train, dropped = drop_overlong(data.train, tokenizer, config.max_length)
    if data.eval is not None:
        data.eval, dropped_eval = drop_overlong(data.eval, tokenizer, config.max_length)
        dropped += dropped_eval
        data.eval = data.eval if data.eval.num_rows else None
    if dropped:
        _say(f"dropped {dropped} sample(s) longer than max_length={config.max_length} tokens")
    if data.train.num_rows == 0:
        raise ValueError(f"no training sample fits in max_length={config.max_length} tokens")
    _say(f"model: {config.model} ({parameter_count(model) / 1e6:.1f} M parameters, {config.dtype}), "
         f"{'LoRA r=' + str(config.lora_r) if config.lora else 'full fine-tuning'}")  # fmt: skip
    trainer = build_trainer(config, data, model, tokenizer)
    throughput = throughput_callback(config, trainer)
    trainer.add_callback(throughput)
    main = trainer.accelerator.is_main_process
    if main:
        (output_dir / "split.json").write_text(json.dumps(data.split_record(), indent=2))
        first = trainer.train_dataset[0]
        (output_dir / "sample_loss_view.txt").write_text(
            loss_view(tokenizer, first["input_ids"], first["labels"])
        )
    if resume:
        _say(f"resuming from {resume}")
    output = trainer.train(resume_from_checkpoint=resume)
    metrics: dict[str, float] = {
        "train_loss": output.training_loss,
        **output.metrics,
        **throughput.metrics(),
        **sequence_fill(trainer.train_dataset, config.max_length),
    }
    if data.eval is not None:
        metrics.update(trainer.evaluate())
    final_dir = output_dir / "final"
    trainer.save_model(str(final_dir))  # the adapter under LoRA; processing_class (with the template) too
    model = trainer.model
    if config.lora and config.save_merged:
        model = model.merge_and_unload()
        if main:
            model.save_pretrained(output_dir / "merged")
            tokenizer.save_pretrained(output_dir / "merged")
    result = SFTResult(output_dir, final_dir, output.global_step, resume, metrics, trainer.state.log_history)
    if main:
        result.loss_plot = plot_loss(result.log_history, output_dir / "loss.png",
                                     f"SFT {config.model} on {data.source.describe()}")  # fmt: skip
    return result, model, tokenizer


def pass_rates(config: SFTRunConfig, data: SFTData, model: PreTrainedModel | None,
               tokenizer: PreTrainedTokenizerBase | None) -> list[PassRate]:  # fmt: skip
    """Serve the model (or use `eval_base_url`) and let the agents attempt the held-out tasks."""
    if not data.eval_prompts:
        _say("pass rate: no held-out task to measure")
        return []
    out_dir = Path(config.output_dir) / "pass_rate"
    name = config.eval_model_name or f"kernelvault-sft/{Path(config.output_dir).name}"
    if config.eval_base_url:
        return measure_pass_rate(data.eval_prompts, config.eval_base_url, name, config, out_dir)
    if world_size() > 1:
        _say("pass rate: skipped under a distributed launch; serve final/ with vLLM and rerun with "
             "evaluate: only and eval_base_url")  # fmt: skip
        return []
    from kernelvault.sft.serve import ChatCompletionServer

    assert model is not None and tokenizer is not None  # only an eval_base_url run has neither
    model.eval()
    with ChatCompletionServer(model, tokenizer, name) as base_url:
        return measure_pass_rate(data.eval_prompts, base_url, name, config, out_dir)


def run_sft(config: SFTRunConfig) -> SFTResult:
    if config.evaluate != "only":
        check_liger(config)
    data = load_sft_data(config)
    for line in data.summary_lines():
        _say(line)
    if data.train.num_rows == 0:
        raise ValueError("no training samples: every task is held out")
    if config.evaluate == "only":
        result = SFTResult(Path(config.output_dir))
        if config.eval_base_url:
            model = tokenizer = None
        else:
            path = config.eval_model or str(Path(config.output_dir) / "final")
            if not Path(path).exists() and not is_random(path):
                raise ValueError(f"no model to measure at {path} (train first, or set eval_model)")
            model, tokenizer = (
                load_pretrained(path, config.dtype, config.attn_implementation),
                load_tokenizer(path),
            )
    else:
        result, model, tokenizer = train(config, data)
    if int(os.environ.get("RANK", "0")) != 0:
        return result
    if config.evaluate != "off":
        result.pass_rates = pass_rates(config, data, model, tokenizer)
    write_metrics(result, data, "pass_rate.json" if config.evaluate == "only" else "sft_metrics.json")
    return result


def write_metrics(result: SFTResult, data: SFTData, name: str) -> Path:
    result.output_dir.mkdir(parents=True, exist_ok=True)
    path = result.output_dir / name
    path.write_text(json.dumps({
        "global_step": result.global_step, "resumed_from": result.resumed_from, "metrics": result.metrics,
        "pass_rate": [rate.as_dict() for rate in result.pass_rates], "split": data.split_record(),
        "log_history": result.log_history,
    }, indent=2, default=str))  # fmt: skip
    return path


def report_lines(result: SFTResult) -> list[str]:
    metrics = result.metrics
    lines = []
    if result.final_dir is not None:
        lines.append(f"trained {result.global_step} steps" + (f" (resumed from {result.resumed_from})"
                                                               if result.resumed_from else ""))  # fmt: skip
        losses = [entry["loss"] for entry in result.log_history if "loss" in entry]
        if losses:
            lines.append(f"train loss: {losses[0]:.4f} at the first logged step, {losses[-1]:.4f} at the last "
                         f"(mean over the run {metrics.get('train_loss', float('nan')):.4f})")  # fmt: skip
        if "eval_loss" in metrics:
            lines.append(f"eval loss (held-out tasks): {metrics['eval_loss']:.4f}")
        if "tokens_per_second" in metrics:
            line = f"throughput: {metrics['tokens_per_second']:.0f} tokens/s"
            if "mfu" in metrics:
                line += (f", {metrics['model_tflops_per_device']:.1f} model TFLOP/s per device, MFU "
                         f"{metrics['mfu']:.1%} of a measured {metrics['peak_bf16_tflops']:.0f} TFLOP/s bf16 peak")  # fmt: skip
            lines.append(line)
        lines.append(f"model saved to {result.final_dir}")
        if result.loss_plot:
            lines.append(f"loss curve: {result.loss_plot}")
    lines += [rate.line() for rate in result.pass_rates]
    return lines

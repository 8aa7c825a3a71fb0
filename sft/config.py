"""The SFT run's configuration: one dataclass, filled from a YAML file and then the command line.

Precedence: field defaults, then the YAML file (`--config`), then options given on the command line.
Every field is an option (`max_steps` is `--max-steps`); its help text is the field's `help` metadata.
Settings of TRL's `SFTConfig` (transformers' `TrainingArguments`) that have no field here go in the
`trainer` mapping and are passed through unchanged (`trainer: {optim: adamw_torch_fused}`).
"""

from __future__ import annotations

import argparse
import dataclasses
import json
import types
import typing
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from kernelvault.config_file import bundled_configs, field_help, read_config
from kernelvault.contracts import TARGETS

SFT_TARGETS: tuple[str, ...] = (*TARGETS, "qa")  # qa: the release's verified ROCm QA entries, as chat turns

EVALUATE_MODES = ("after", "only", "off")
CHAT_TEMPLATES = ("kernelvault", "model")


def _help(text: str, path: bool | str = False, **kwargs: Any) -> Any:
    """A field with its help text; `path`: an input path (or one with this suffix), which a config file names
    relative to itself (`kernelvault.config_file`)."""
    return field(metadata={"help": text, "path": path}, **kwargs)


@dataclass
class SFTRunConfig:
    # Data: a version of the corpus, filtered, mixed and split by task.
    dataset: str = _help(
        "corpus folder (`kernelvault corpus --out`), release folder, or dataset repo ORG/NAME (the local hub "
        "in KV_HUB_DIR; the Hugging Face Hub when KV_HUB=hf)", default="", path=True)  # fmt: skip
    revision: str | None = _help("version tag of a repo (default: its latest vX.Y.Z)", default=None)
    targets: list[str] = _help(
        "languages to train on (triton, hip), and qa for the release's verified ROCm QA entries (chat turns)",
        default_factory=lambda: list(TARGETS),
    )
    platforms: list[str] = _help(
        "keep rows verified on these platforms (cpu, cuda, rocm); empty: any", default_factory=list
    )
    min_reward: float = _help("keep rows whose reward is at least this", default=0.0)
    min_speedup: float | None = _help(
        "keep rows whose measured speedup is at least this (drops untimed rows, e.g. every cpu row)",
        default=None,
    )
    hip_fraction: float | None = _help(
        "share of HIP samples in the training mix (the larger side is subsampled); unset: as in the corpus",
        default=None,
    )
    final_answer_only: bool = _help(
        "train on prompt + final answer only, dropping a trajectory's earlier turns", default=False
    )
    max_train_samples: int | None = _help("cap on training samples (after mixing)", default=None)

    # Model.
    model: str = _help(
        "path or Hub id of the model, or random:tiny / random:small / random:qwen3-8b for a Qwen3 with "
        "random weights and a tokenizer trained on the spot", default="Qwen/Qwen3-8B", path=True)  # fmt: skip
    tokenizer: str | None = _help("tokenizer path or id (default: the model's)", default=None, path=True)
    tokenizer_vocab_size: int = _help("BPE vocabulary of a random model's tokenizer", default=4096)
    chat_template: str = _help(
        "model (the tokenizer's own, default; TRL swaps in its training variant where the template has no "
        "generation markers), kernelvault (Qwen3 format, generation-marked, every turn's reasoning kept, "
        "few-shot turns unmasked) or a .jinja file", default="model", path=".jinja")  # fmt: skip
    dtype: str = _help("weights dtype when loading: bfloat16, float32, float16 or auto", default="bfloat16")
    attn_implementation: str | None = _help("sdpa, flash_attention_2, eager (default: transformers')",
                                            default=None)  # fmt: skip

    # LoRA (peft); full fine-tuning when off.
    lora: bool = _help("train a LoRA adapter instead of every weight", default=False)
    lora_r: int = _help("LoRA rank", default=64)
    lora_alpha: int = _help("LoRA scale numerator (scale = alpha / r)", default=128)
    lora_dropout: float = _help("dropout on the LoRA path", default=0.05)
    lora_target_modules: list[str] = _help(
        "modules that get adapters", default_factory=lambda: ["q_proj", "k_proj", "v_proj", "o_proj",
                                                              "gate_proj", "up_proj", "down_proj"])  # fmt: skip
    save_merged: bool = _help("also save the base model with the adapter merged in (for vLLM)", default=False)

    # Training (TRL SFTTrainer).
    output_dir: str = _help("checkpoints, the final model, metrics and plots", default="out/sft")
    max_length: int = _help("sequence length (tokens); packed sequences are this long", default=8192)
    packing: bool = _help("pack samples into max_length sequences (best-fit decreasing, padding-free)",
                          default=True)  # fmt: skip
    learning_rate: float = _help("peak learning rate", default=1e-5)
    lr_scheduler_type: str = _help("transformers scheduler name", default="cosine")
    warmup_steps: float = _help("warm-up steps, or a fraction of all steps when below 1", default=0.03)
    weight_decay: float = _help("AdamW weight decay", default=0.0)
    num_train_epochs: float = _help("epochs over the training split", default=2.0)
    max_steps: int = _help("optimizer steps (overrides num_train_epochs when positive)", default=-1)
    per_device_train_batch_size: int = _help("sequences per device per micro-batch", default=1)
    per_device_eval_batch_size: int = _help("sequences per device per evaluation batch", default=1)
    gradient_accumulation_steps: int = _help("micro-batches per optimizer step", default=8)
    gradient_checkpointing: bool = _help("recompute activations in the backward pass", default=True)
    liger: bool = _help(
        "Liger's Triton kernels for the model (RMSNorm, SwiGLU, RoPE, and a cross-entropy fused with the LM head "
        "that never materialises the logits: 151,936 per token for Qwen3); needs a GPU and liger-kernel",
        default=False,
    )
    bf16: bool = _help("bf16 mixed precision (needs a GPU)", default=True)
    logging_steps: int = _help("log the loss every N steps", default=10)
    eval_steps: int = _help("evaluation loss on the held-out tasks every N steps (0: at the end only)",
                            default=100)  # fmt: skip
    save_steps: int = _help("checkpoint every N steps", default=200)
    save_total_limit: int | None = _help("keep at most N checkpoints", default=3)
    resume: bool = _help("continue from the last checkpoint in output_dir when there is one", default=True)
    seed: int = _help("seed for the mix, shuffling and random weights", default=0)
    trainer: dict[str, Any] = _help("other SFTConfig / TrainingArguments settings, passed through "
                                    "(a JSON object on the command line)", default_factory=dict)  # fmt: skip

    # Pass rate on the held-out tasks, measured by the agents and the toolchain.
    evaluate: str = _help(
        "after: train, then measure the pass rate; only: measure eval_model without training; off",
        default="after",
    )
    eval_model: str | None = _help("model to measure with evaluate=only (default: output_dir/final)",
                                   default=None, path=True)  # fmt: skip
    eval_base_url: str | None = _help(
        "an OpenAI-compatible endpoint already serving the model (vLLM, SGLang); default: serve it in "
        "this process with transformers (small models)", default=None)  # fmt: skip
    eval_model_name: str | None = _help(
        "model name at eval_base_url (vLLM's --served-model-name); default: kernelvault-sft/<output_dir name>",
        default=None,
    )
    eval_samples: int = _help("trajectories per held-out task", default=1)
    eval_turns: int = _help("turn budget of each trajectory", default=3)
    eval_max_tasks: int | None = _help("cap on held-out tasks measured", default=None)
    eval_max_new_tokens: int = _help("max tokens per answer", default=4096)
    eval_temperature: float = _help("sampling temperature (0: greedy)", default=0.6)
    eval_top_p: float = _help("nucleus sampling", default=0.95)
    eval_platform: str | None = _help("verification platform (default: detect a GPU, else cpu)", default=None)
    eval_timeout: float = _help("wall-clock seconds per verification", default=60.0)

    def __post_init__(self) -> None:
        if self.evaluate is False:  # YAML 1.1 reads a bare `off` as false
            self.evaluate = "off"
        if unknown := set(self.targets) - set(SFT_TARGETS):
            raise ValueError(f"targets must be among {', '.join(SFT_TARGETS)}, got {sorted(unknown)}")
        if self.evaluate not in EVALUATE_MODES:
            raise ValueError(f"evaluate must be one of {', '.join(EVALUATE_MODES)}, got {self.evaluate!r}")
        if self.chat_template not in CHAT_TEMPLATES and not self.chat_template.endswith(".jinja"):
            raise ValueError(
                f"chat_template must be kernelvault, model or a .jinja file, got {self.chat_template!r}"
            )
        if self.dtype not in ("bfloat16", "float32", "float16", "auto"):
            raise ValueError(f"dtype must be bfloat16, float32, float16 or auto, got {self.dtype!r}")
        if self.hip_fraction is not None and not 0.0 <= self.hip_fraction <= 1.0:
            raise ValueError(f"hip_fraction must be between 0 and 1, got {self.hip_fraction}")
        if not isinstance(self.trainer, dict):
            raise ValueError(f"trainer must be a mapping of SFTConfig settings, got {self.trainer!r}")


FIELDS = {item.name: item for item in dataclasses.fields(SFTRunConfig)}
# Settings that no longer exist, with what took their place.
RETIRED = {
    name: "the held-out tasks are the dataset's own: the sft config's test split, chosen when the release is built"
    for name in ("eval_task_fraction", "eval_tasks")
}


def load_config(yaml_path: str | Path | None = None, overrides: dict[str, Any] | None = None) -> SFTRunConfig:
    """Defaults, then the YAML file (a file, or a bundled config's name: `tiny`; its relative input paths are
    relative to it, `kernelvault.config_file`), then `overrides`; unknown keys and bad values raise one-line
    ValueErrors."""
    values: dict[str, Any] = {}
    if yaml_path is not None:
        values.update(read_config(yaml_path, bundled_configs("kernelvault.sft"), SFTRunConfig)[1])
    values.update(overrides or {})
    if retired := sorted(set(values) & set(RETIRED)):
        raise ValueError(f"{', '.join(retired)}: no longer a setting; {RETIRED[retired[0]]}")
    if unknown := sorted(set(values) - set(FIELDS)):
        raise ValueError(
            f"unknown setting(s) {', '.join(unknown)}; settings of SFTConfig go under `trainer:`"
        )
    try:
        return SFTRunConfig(**values)
    except TypeError as error:
        raise ValueError(str(error)) from None


def _parse_bool(text: str) -> bool:
    lowered = text.strip().lower()
    if lowered in ("1", "true", "yes", "on"):
        return True
    if lowered in ("0", "false", "no", "off"):
        return False
    raise argparse.ArgumentTypeError(f"expected true or false, got {text!r}")


def _parse_json_object(text: str) -> dict[str, Any]:
    try:
        value = json.loads(text)
    except json.JSONDecodeError as error:
        raise argparse.ArgumentTypeError(f"expected a JSON object: {error}") from None
    if not isinstance(value, dict):
        raise argparse.ArgumentTypeError("expected a JSON object")
    return value


def _optional(parse: Any) -> Any:
    def convert(text: str) -> Any:
        return None if text.strip().lower() in ("none", "null") else parse(text)

    convert.__name__ = getattr(parse, "__name__", "value")
    return convert


def add_config_arguments(parser: argparse.ArgumentParser) -> None:
    """One option per field. Defaults are left out of the namespace, so only options given win over YAML."""
    hints = typing.get_type_hints(SFTRunConfig)
    for name, item in FIELDS.items():
        hint = hints[name]
        optional = isinstance(hint, types.UnionType) and type(None) in hint.__args__
        base = next(arg for arg in hint.__args__ if arg is not type(None)) if optional else hint
        origin = typing.get_origin(base) or base
        kwargs: dict[str, Any] = {"default": argparse.SUPPRESS, "help": field_help(item)}
        if origin is bool:
            kwargs.update(type=_parse_bool, nargs="?", const=True, metavar="BOOL")
        elif origin is list:
            kwargs.update(nargs="*", metavar=name.upper().removesuffix("S"))
        elif origin is dict:
            kwargs.update(type=_parse_json_object, metavar="JSON")
        else:
            kwargs.update(type=_optional(origin) if optional else origin, metavar=name.upper())
        parser.add_argument(f"--{name.replace('_', '-')}", dest=name, **kwargs)

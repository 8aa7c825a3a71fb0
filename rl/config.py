"""The RL run's configuration: one dataclass, filled from a YAML file and then from command-line flags.

Every field carries its help text; `kernelvault rl --help` lists them all, and any field can be set as
`--field-name VALUE` on top of the YAML (`--max-steps 2`, `--chat-template-kwargs '{enable_thinking: false}'`).
GRPO's knobs (group size, loss type, KL, clipping, reward scaling) are fields here and are handed to TRL's
`GRPOConfig`; anything else GRPOConfig accepts goes in `grpo:` (a mapping passed through unchanged).
"""

from __future__ import annotations

import dataclasses
import types
import typing
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import yaml

from kernelvault.config_file import ConfigFileError, bundled_configs, read_config
from kernelvault.contracts import TARGETS


def _help(text: str, default: Any = dataclasses.MISSING, factory: Any = dataclasses.MISSING,
          path: bool = False) -> Any:  # fmt: skip
    """A field with its help text; `path`: an input path, which a config file names relative to itself
    (`kernelvault.config_file`)."""
    metadata = {"help": text, "path": path}
    if factory is not dataclasses.MISSING:
        return field(default_factory=factory, metadata=metadata)
    return field(default=default, metadata=metadata)


@dataclass
class RLConfig:
    # What to train, on what
    model: str = _help("the policy to start from: an SFT checkpoint folder (full weights, or a PEFT adapter "
                       "folder, merged on load) or a Hub id", "", path=True)  # fmt: skip
    output_dir: str = _help("where checkpoints, the reward log and trainer logs go", "out/rl")
    dataset: str | None = _help("the RL prompts: a release folder (its rl/ config), a folder of rl parquet files, "
                                "or hub:ORG/NAME@vX.Y.Z (a version on the hub KV_HUB picks: the local hub by "
                                "default, the Hugging Face Hub with KV_HUB=hf; config `dataset_config`)", None,
                                path=True)  # fmt: skip
    dataset_config: str = _help("the dataset config to read (the release's prompts are `rl`)", "rl")
    dataset_revision: str | None = _help("the version tag (e.g. v1.0.0) of a hub:ORG/NAME without @vX.Y.Z "
                                         "(the older form; default: the latest version)", None)  # fmt: skip
    tasks: str | None = _help(
        "instead of a dataset: a task file or folder; prompts are built from it on the spot", None, path=True
    )
    max_tasks: int | None = _help("use only the first N tasks (after filtering by target)", None)
    target: str = _help(
        "kernel language, triton or hip: the toolchain verifies it as it verifies the corpus", "triton"
    )
    # Rollouts
    multi_turn: bool = _help(
        "multi-turn rollouts (the agents' draft → verify → reflect loop) instead of one answer", False
    )
    max_turns: int = _help("turn budget of a multi-turn rollout", 3)
    discount: float = _help("per-turn discount of the trajectory return G = r1 + d·r2 + d²·r3", 0.6)
    stop_on_correct: bool = _help(
        "end a trajectory at its first correct kernel (False: keep optimising)", True
    )
    turn_max_tokens: int = _help("new tokens per answer in multi-turn rollouts", 2048)
    # Verification
    verify_platform: str | None = _help("cpu, cuda or rocm (default: detect); ignored with reward_url", None)
    verify_timeout_s: float = _help("wall-clock seconds per candidate", 60.0)
    verify_concurrency: int = _help("verifications in flight (default: twice the lanes)", 0)
    verify_devices: str | None = _help(
        "GPU ids the verification lanes go on, like 0,1 (default: every visible GPU)", None
    )
    verify_lanes_per_gpu: int = _help("persistent verification lanes per GPU", 1)
    reward_url: str | None = _help(
        "a reward service (kernelvault rl serve) to verify on instead of this process", None
    )
    reward_log: bool = _help(
        "write every scored sample to OUTPUT_DIR/rewards-rank*.jsonl (for rl diagnose)", True
    )
    usable_threshold: float = _help(
        "|advantage| in reward units above which a sample counts as usable signal", 0.05
    )
    # GRPO
    num_generations: int = _help("group size G: completions per prompt", 8)
    per_device_train_batch_size: int = _help(
        "completions per device per micro-batch (a multiple of G is simplest)", 8
    )
    gradient_accumulation_steps: int = _help("micro-batches per optimiser step", 1)
    max_steps: int = _help("optimiser steps", 100)
    learning_rate: float = _help("AdamW learning rate", 1e-6)
    loss_type: str = _help("grpo, dr_grpo, dapo, bnpo, cispo, … (TRL's loss_type); dapo normalises by the "
                           "tokens of the whole batch, so long answers are not favoured", "dapo")  # fmt: skip
    beta: float = _help("KL coefficient to the starting policy (0: no reference model kept)", 0.0)
    epsilon: float = _help("lower clipping bound of the importance ratio", 0.2)
    epsilon_high: float | None = _help("upper clipping bound (DAPO's clip-higher; None: epsilon)", 0.28)
    scale_rewards: str = _help("group, batch or none: what the advantage is divided by. batch (default): "
                               "one std for the whole batch, so a group whose spread is only timing noise "
                               "keeps a noise-sized advantage (see docs/rl.md)", "batch")  # fmt: skip
    mask_truncated_completions: bool = _help(
        "leave answers cut off at the token limit out of the loss", False
    )
    max_completion_length: int = _help("new tokens per completion (single turn); the whole multi-turn "
                                       "completion, feedback included (multi-turn)", 2048)  # fmt: skip
    temperature: float = _help("sampling temperature", 1.0)
    top_p: float = _help("nucleus sampling", 1.0)
    chat_template_kwargs: dict[str, Any] = _help(
        "passed to the chat template (Qwen3: {enable_thinking: false})", factory=dict
    )
    use_vllm: bool = _help("generate with vLLM (TRL's colocate or server mode; single turn only here)", False)
    bf16: bool = _help("bfloat16 weights and autocast", True)
    gradient_checkpointing: bool = _help("recompute activations in the backward pass (memory for time)", True)
    # LoRA
    use_peft: bool = _help(
        "train a LoRA adapter instead of all weights (the KL reference is then free)", False
    )
    lora_r: int = _help("LoRA rank", 64)
    lora_alpha: int = _help("LoRA alpha", 128)
    lora_dropout: float = _help("LoRA dropout", 0.0)
    lora_target_modules: list[str] = _help("modules that get adapters", factory=lambda: ["q_proj", "k_proj", "v_proj",
                                           "o_proj", "gate_proj", "up_proj", "down_proj"])  # fmt: skip
    # Bookkeeping
    logging_steps: int = _help("log every N steps", 1)
    save_steps: int = _help("checkpoint every N steps", 50)
    seed: int = _help("random seed", 0)
    report_to: str = _help("none, wandb, tensorboard, trackio", "none")
    log_completions: bool = _help("print a sample of completions with their rewards at each log", False)
    grpo: dict[str, Any] = _help("any other GRPOConfig field, passed through unchanged", factory=dict)


FIELDS = {f.name: f for f in dataclasses.fields(RLConfig)}


class ConfigError(ValueError):
    """A configuration value that cannot be used (one-line message)."""


def field_types(name: str) -> tuple[Any, ...]:
    """The types a field's value may have (`int | None`: int and NoneType)."""
    hint = typing.get_type_hints(RLConfig)[name]
    return typing.get_args(hint) if isinstance(hint, types.UnionType) else (hint,)


def _accepts(name: str, value: Any) -> bool:
    for option in field_types(name):
        origin = typing.get_origin(option) or option
        if option is type(None) and value is None:
            return True
        if origin in (int, float) and isinstance(value, origin) and not isinstance(value, bool):
            return True
        if origin in (str, bool, list, dict) and isinstance(value, origin):
            return True
    return False


def coerce(name: str, value: Any) -> Any:
    """Check a value against the field's type; strings from the command line are read as YAML scalars."""
    if name not in FIELDS:
        raise ConfigError(f"unknown setting {name!r}; see kernelvault rl --help")
    if isinstance(value, str) and not _accepts(name, value):
        try:
            value = yaml.safe_load(value)
        except yaml.YAMLError:
            pass
    floats = float in field_types(name) and int not in field_types(name)
    if floats and isinstance(value, (str, int)) and not isinstance(value, bool):
        try:
            value = float(value)  # YAML reads 1e-6 as a string and 2 as an int; both are fine as floats
        except ValueError:
            pass
    if not _accepts(name, value):
        raise ConfigError(f"{name}: {value!r} is not a valid {RLConfig.__annotations__[name]}")
    return value


def load_config(path: str | Path | None, overrides: dict[str, Any] | None = None) -> RLConfig:
    """Defaults, then the config file `path` (a file, or a bundled config's name: `tiny`), then `overrides`
    (the command line's flags). The file's relative input paths are relative to it (`kernelvault.config_file`)."""
    values: dict[str, Any] = {}
    if path is not None:
        try:
            _, loaded = read_config(path, bundled_configs("kernelvault.rl"), RLConfig)
        except ConfigFileError as error:
            raise ConfigError(str(error)) from None
        values.update({key: coerce(key, value) for key, value in loaded.items()})
    values.update({key: coerce(key, value) for key, value in (overrides or {}).items()})
    config = RLConfig(**values)
    if not config.model:
        raise ConfigError("no model: set `model:` in the config or pass --model")
    if config.dataset is None and config.tasks is None:
        raise ConfigError(
            "no prompts: set `dataset:` (a release or hub:ORG/NAME@vX.Y.Z) or `tasks:` (task files)"
        )
    if config.scale_rewards not in ("group", "batch", "none"):
        raise ConfigError("scale_rewards must be group, batch or none")
    if config.target not in TARGETS:
        raise ConfigError(f"target must be one of {', '.join(TARGETS)} (got {config.target!r})")
    if config.per_device_train_batch_size * config.gradient_accumulation_steps % config.num_generations:
        raise ConfigError(
            "per_device_train_batch_size × gradient_accumulation_steps must be a multiple of num_generations"
        )
    return config

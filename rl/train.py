"""`kernelvault rl`: GRPO on one GPU with TRL's GRPOTrainer, from an SFT checkpoint, rewarded by the toolchain.

    prompts (release `rl` config, hub, or task files) ─► GRPOTrainer ─► G completions per prompt
        single turn: transformers `generate` (or vLLM) ─► ExecutionReward: verify each, graded reward
        multi-turn:  rl.rollout (KernelAgent, policy in the loop) ─► TrajectoryReward: discounted return
    ─► advantages ─► clipped policy-gradient step (LoRA or full weights)

How this departs from textbook GRPO (DeepSeekMath, 2402.03300), all through configuration:
- Loss `dapo` by default: token losses are averaged over all tokens of the batch, not per sequence first
  (per-sequence averaging favours short correct and long wrong answers).
- Advantages are scaled by the batch's reward std (`scale_rewards: batch`), not each group's: the speed
  term is measured and noisy, and a per-group std would turn a group of equally good kernels that differ
  only by timing noise into ±1 advantages. See docs/rl.md.
- No KL penalty by default (`beta: 0`), and clip-higher (`epsilon_high: 0.28`) as in DAPO, so rare correct
  kernels can gain probability faster than the symmetric clip allows.
- One optimisation pass per batch of rollouts (TRL's `num_iterations: 1`), so the importance ratio is 1
  at the first step and the clip acts only through `steps_per_generation`.
- Multi-turn: one scalar return per trajectory, feedback tokens masked (see rl.rollout).

Each step logs where its time went: `timing/generation_s`, `timing/verification_s` and
`timing/optimisation_s` (the rest of the step: log-probs, backward, optimiser), beside TRL's metrics,
the reward components and the per-group signal shares from rl.rewards.
"""

from __future__ import annotations

import math
import time
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from kernelvault import progress as kv_progress
from kernelvault.contracts import Task
from kernelvault.rl.config import ConfigError, RLConfig
from kernelvault.rl.data import load_rl_dataset
from kernelvault.rl.rewards import ExecutionReward, TrajectoryReward
from kernelvault.rl.rollout import RolloutConfig, prompt_key, trl_rollout_func
from kernelvault.rl.verifiers import VerdictSource, verdict_source
from kernelvault.toolchain.tasks import TaskFormatError, parse_task


def _dataset_rows(config: RLConfig, platform: str = "cpu") -> list[dict[str, Any]]:
    """Rows with the `rl` config's columns: prompt, task_id, task_name, task_source, target.

    From task files, the prompt is built as the release builds it (corpus.release.rl_rows): the agents'
    opening messages for the GPU family of `platform`, where verdicts come from."""
    if config.tasks is not None:
        from kernelvault.agents.prompting import initial_messages
        from kernelvault.toolchain.tasks import load_tasks

        try:
            loaded = load_tasks(config.tasks)
        except TaskFormatError as error:
            raise ConfigError(str(error)) from None
        return [{"prompt": initial_messages(task.source, config.target, platform),
                 "task_id": task.task_id, "task_name": task.name, "task_source": task.source,
                 "target": config.target} for task in loaded.tasks]  # fmt: skip
    try:  # a release folder or a version on the hub KV_HUB picks (the local hub by default), as everywhere
        table = load_rl_dataset(str(config.dataset), config.dataset_revision, config.dataset_config)["train"]
    except ValueError as error:
        raise ConfigError(str(error)) from None
    keep = [c for c in ("prompt", "task_id", "task_name", "task_source", "target") if c in table.column_names]
    return table.select_columns(keep).to_list()


def build_dataset(config: RLConfig, platform: str = "cpu") -> tuple[Any, dict[str, Task]]:
    """The training prompts (a datasets.Dataset) and the task behind each prompt (for multi-turn rollouts)."""
    import datasets

    rows = [
        row for row in _dataset_rows(config, platform) if row.get("target", config.target) == config.target
    ]
    if config.max_tasks is not None:
        rows = rows[: config.max_tasks]
    if not rows:
        raise ConfigError(f"no {config.target} prompts in the dataset")
    tasks = {}
    for row in rows:
        try:
            task = parse_task(row["task_source"], row.get("task_name") or "task", "rl")
        except TaskFormatError as error:
            raise ConfigError(f"task {row.get('task_name')}: {error}") from None
        row.setdefault("task_id", task.task_id)
        row.setdefault("task_name", task.name)
        tasks[prompt_key(row["prompt"])] = task
    return datasets.Dataset.from_list(rows), tasks


def load_policy(config: RLConfig) -> tuple[Any, Any]:
    """The SFT checkpoint and its tokenizer; a PEFT adapter folder is merged into its base model."""
    import torch
    from transformers import AutoModelForCausalLM, AutoTokenizer

    dtype = torch.bfloat16 if config.bf16 else torch.float32
    path = Path(config.model)
    try:
        if (path / "adapter_config.json").exists():
            from peft import AutoPeftModelForCausalLM

            model = AutoPeftModelForCausalLM.from_pretrained(path, dtype=dtype).merge_and_unload()
        else:
            model = AutoModelForCausalLM.from_pretrained(config.model, dtype=dtype)
        tokenizer = AutoTokenizer.from_pretrained(config.model)
    except OSError as error:  # no such folder or Hub repo (transformers says which, on its first line)
        first_line = str(error).strip().splitlines()[0] if str(error).strip() else type(error).__name__
        where = "" if path.exists() or "/" not in config.model else f" (no folder {path.resolve()})"
        raise ConfigError(f"cannot load the model {config.model!r}{where}: {first_line}") from None
    tokenizer.padding_side = "left"  # GRPOTrainer generates from left-padded prompts
    if tokenizer.pad_token is None:
        tokenizer.pad_token = tokenizer.eos_token
    return model, tokenizer


def grpo_arguments(config: RLConfig) -> Any:
    from trl import GRPOConfig

    fields = dict(
        output_dir=config.output_dir, num_generations=config.num_generations,
        per_device_train_batch_size=config.per_device_train_batch_size,
        gradient_accumulation_steps=config.gradient_accumulation_steps, max_steps=config.max_steps,
        learning_rate=config.learning_rate, loss_type=config.loss_type, beta=config.beta, epsilon=config.epsilon,
        epsilon_high=config.epsilon_high, scale_rewards=config.scale_rewards,
        mask_truncated_completions=config.mask_truncated_completions,
        max_completion_length=config.max_completion_length, temperature=config.temperature, top_p=config.top_p,
        chat_template_kwargs=config.chat_template_kwargs or None, use_vllm=config.use_vllm, bf16=config.bf16,
        gradient_checkpointing=config.gradient_checkpointing, logging_steps=config.logging_steps,
        save_steps=config.save_steps, seed=config.seed, report_to=config.report_to,
        log_completions=config.log_completions, remove_unused_columns=False,  # the reward reads task_source
    )  # fmt: skip
    fields.update(config.grpo)
    try:
        return GRPOConfig(**fields)
    except (TypeError, ValueError) as error:
        raise ConfigError(f"GRPOConfig refused the settings: {str(error).splitlines()[0]}") from None


def _trainer_class() -> type:
    from transformers import TrainerCallback
    from trl import GRPOTrainer

    class TimedGRPOTrainer(GRPOTrainer):
        """GRPOTrainer that also logs each step's generation, verification and optimisation time, and shows
        the phase a step is in under TRL's bar (a line with a moving clock, on the main process): TRL's bar
        moves once per step, and a step takes minutes on a real model."""

        def __init__(self, *args: Any, **kwargs: Any) -> None:
            self.clock = {"generation": 0.0, "verification": 0.0}
            self.step_status: kv_progress.TickingBar | None = None  # open from a step's begin to its end
            super().__init__(*args, **kwargs)
            self.add_callback(_StepTimer(self))

        def _phase(self, what: str) -> None:
            if self.step_status is not None:
                self.step_status.set_description_str(f"step {self.state.global_step + 1}: {what}")

        def _generate(self, prompts: list[Any]) -> Any:
            started = time.perf_counter()
            self._phase(f"generating {len(prompts)} completions")
            output = super()._generate(prompts)
            elapsed = time.perf_counter() - started
            timing = getattr(self.rollout_func, "last_timing", None)
            if timing is not None:  # multi-turn: verification happened inside the rollout
                self.clock["verification"] += timing[1]
                elapsed = max(0.0, elapsed - timing[1])
            self.clock["generation"] += elapsed
            return output

        def _calculate_rewards(self, *args: Any, **kwargs: Any) -> Any:
            started = time.perf_counter()
            self._phase("verifying the completions")
            output = super()._calculate_rewards(*args, **kwargs)
            self.clock["verification"] += time.perf_counter() - started
            self._phase("log-probabilities, loss and the update")
            return output

        def record_step(self, seconds: float) -> None:
            metrics = self._metrics["train"]
            metrics["timing/step_s"].append(seconds)
            metrics["timing/generation_s"].append(self.clock["generation"])
            metrics["timing/verification_s"].append(self.clock["verification"])
            metrics["timing/optimisation_s"].append(max(0.0, seconds - sum(self.clock.values())))
            self.clock = {"generation": 0.0, "verification": 0.0}

    class _StepTimer(TrainerCallback):
        def __init__(self, trainer: TimedGRPOTrainer) -> None:
            self.trainer = trainer
            self.started = 0.0

        def on_step_begin(self, args: Any, state: Any, control: Any, **kwargs: Any) -> None:
            self.started = time.perf_counter()
            self.trainer.step_status = kv_progress.status(
                f"step {state.global_step + 1}: starting", enabled=self.trainer.accelerator.is_main_process
            )

        def on_step_end(self, args: Any, state: Any, control: Any, **kwargs: Any) -> None:
            self.trainer.record_step(time.perf_counter() - self.started)
            if self.trainer.step_status is not None:
                self.trainer.step_status.close()
                self.trainer.step_status = None

    return TimedGRPOTrainer


@dataclass
class TrainResult:
    output_dir: Path
    log_history: list[dict[str, Any]]
    source: str  # where verdicts came from


def _verify_concurrency(config: RLConfig, source: VerdictSource) -> int:
    if config.verify_concurrency > 0:
        return config.verify_concurrency
    return source.slots


def train(config: RLConfig) -> TrainResult:
    try:
        source = verdict_source(
            config.reward_url, platform=config.verify_platform, timeout_s=config.verify_timeout_s,
            devices=config.verify_devices, lanes_per_gpu=config.verify_lanes_per_gpu,
        )  # fmt: skip
    except ValueError as error:
        raise ConfigError(str(error)) from None
    dataset, tasks = build_dataset(config, source.platform)
    model, tokenizer = load_policy(config)
    arguments = grpo_arguments(config)
    concurrency = _verify_concurrency(config, source)
    log_dir = Path(config.output_dir) if config.reward_log else None
    model_name = Path(config.model).name or config.model
    rollout = None
    if config.multi_turn:
        settings = RolloutConfig(
            target=config.target, platform=source.platform, max_turns=config.max_turns, discount=config.discount,
            stop_on_correct=config.stop_on_correct, turn_max_tokens=config.turn_max_tokens,
            max_completion_tokens=config.max_completion_length, verify_concurrency=concurrency,
        )  # fmt: skip
        rollout = trl_rollout_func(tasks, source.verify, settings, model_name)
        reward: Any = TrajectoryReward(config.num_generations, log_dir, config.usable_threshold)
    else:
        reward = ExecutionReward(source.verify, config.target, concurrency, config.num_generations, log_dir,
                                 config.usable_threshold, model_name)  # fmt: skip
    peft_config = None
    if config.use_peft:
        from peft import LoraConfig

        peft_config = LoraConfig(r=config.lora_r, lora_alpha=config.lora_alpha, lora_dropout=config.lora_dropout,
                                 target_modules=list(config.lora_target_modules), task_type="CAUSAL_LM")  # fmt: skip
    trainer = _trainer_class()(
        model=model, reward_funcs=[reward], args=arguments, train_dataset=dataset, processing_class=tokenizer,
        peft_config=peft_config, rollout_func=rollout,
    )  # fmt: skip
    trainer.train()
    trainer.save_model(config.output_dir)
    return TrainResult(Path(config.output_dir), list(trainer.state.log_history), source.description)


SUMMARY_KEYS = (
    "reward", "reward_std", "frac_reward_zero_std", "reward/compile", "reward/correct", "reward/speed",
    "reward/binary", "verify/frac_parsed", "signal/graded_zero_spread", "signal/binary_zero_spread",
    "signal/graded_usable", "signal/binary_usable", "rollout/turns", "rollout/masked_tokens",
    "timing/step_s", "timing/generation_s", "timing/verification_s", "timing/optimisation_s",
)  # fmt: skip


def summary_lines(result: TrainResult) -> list[str]:
    steps = [entry for entry in result.log_history if "reward" in entry or "loss" in entry]
    lines = [f"verdicts from {result.source}; {len(steps)} logged step(s)"]
    for entry in steps:
        values = [f"{key}={entry[key]:.3g}" for key in SUMMARY_KEYS
                  if isinstance(entry.get(key), (int, float)) and not math.isnan(entry[key])]  # fmt: skip
        lines.append(f"step {entry.get('step', '?')}: " + " ".join(values))
    lines.append(f"model and reward log in {result.output_dir.resolve()}")
    return lines

"""Multi-turn rollouts: the agents' draft → verify → reflect loop, run on the policy being trained.

The loop is `kernelvault.agents.graph.KernelAgent`, unchanged: same prompts, same feedback, same turn budget, same
stop-on-correct rule, same per-turn verdicts and discounted return G = r1 + 0.6·r2 + 0.36·r3. Only its client
differs: `PolicyClient` stands in for the HTTP model client and answers from the policy at the token level,
keeping every token the policy conditioned on, so the trainer scores exactly the sequence that was sampled:

    prompt      = chat template of the agent's opening messages + the assistant generation prompt
    completion  = answer₁ │ feedback₁ │ answer₂ │ feedback₂ │ answer₃
    env_mask    =  1 … 1  │  0 … 0    │  1 … 1  │  0 … 0    │  1 … 1     (feedback never enters the loss)

A feedback segment is what the chat template puts between the end of an answer and the start of the next
one (`<|im_end|>` is the answer's own last token; then "\\n<|im_start|>user\\n…<|im_end|>\\n<|im_start|>assistant\\n").
An answer cut off at its token limit gets the end-of-turn token inside the (masked) feedback segment.

How this departs from textbook multi-turn RL, on purpose:
- One scalar per trajectory: every answer token of every turn shares the advantage of the trajectory's
  discounted return. The per-turn rewards are returned and logged, but there is no per-turn credit
  assignment (no critic, no turn-level baseline), as in GRPO with a single outcome reward.
- Later turns see earlier answers' thinking text verbatim (Qwen3's stock template drops it when re-rendering
  the conversation); keeping the sampled tokens is what makes the trained log-probabilities exact.
- The prompt is the agents' (system prompt, few-shot exchange, task), rebuilt from the task's reference;
  the dataset's own `prompt` column only identifies the task.
- Generation is batched in lock-step: turn k of every live trajectory is generated in one `generate` call
  once all of them have been verified; a trajectory that stops early leaves the batch.

`trl_rollout_func` adapts this to GRPOTrainer's `rollout_func` (TRL 1.16: `(prompts, trainer) -> dict` with
`prompt_ids`, `completion_ids`, `logprobs`, an `env_mask`, and extra fields handed to the reward functions);
`kernelvault.rl.verl_agent` adapts it to a verl agent loop.
"""

from __future__ import annotations

import asyncio
import dataclasses
import threading
import time
from collections.abc import Awaitable, Callable, Sequence
from dataclasses import dataclass, field
from typing import Any

from kernelvault.agents.client import EndpointConfig, ModelReply, SamplingSettings
from kernelvault.agents.graph import KernelAgent, Trajectory
from kernelvault.contracts import Candidate, Task, Verdict, content_hash
from kernelvault.toolchain.reward import DEFAULT_REWARD

VerifyFunction = Callable[[Task, Candidate], Verdict]


@dataclass(frozen=True)
class RolloutConfig:
    target: str = "triton"
    platform: str = "cpu"  # where verdicts come from: picks the agents' prompts (cpu verifies for AMD)
    max_turns: int = 3
    discount: float = 0.6  # G = r1 + d·r2 + d²·r3
    stop_on_correct: bool = True
    turn_max_tokens: int = 2048  # new tokens per answer
    max_completion_tokens: int = 8192  # answers and feedback together, per trajectory
    verify_concurrency: int = 4  # verifications at once, across all trajectories of a rollout


@dataclass(frozen=True)
class GeneratedTokens:
    token_ids: list[int]
    logprobs: list[float] | None = None
    finish_reason: str = "stop"  # "stop": ended with an end-of-turn token; "length": cut off


GenerateFunction = Callable[[list[int], int], Awaitable[GeneratedTokens]]  # (context ids, max new tokens)


class ChatTokens:
    """The chat template at the token level: opening prompt ids, and the ids of one feedback turn."""

    def __init__(self, tokenizer: Any, template_kwargs: dict[str, Any] | None = None) -> None:
        self.tokenizer = tokenizer
        self.template_kwargs = dict(template_kwargs or {})
        if tokenizer.eos_token is None:
            raise ValueError("the tokenizer has no eos_token: multi-turn rollouts need an end-of-turn token")
        self.eos_text: str = tokenizer.eos_token
        self.eos_id: int = tokenizer.eos_token_id

    def render(self, messages: list[dict[str, Any]], generation_prompt: bool) -> str:
        wire = [{"role": m["role"], "content": m["content"]} for m in messages]
        return self.tokenizer.apply_chat_template(wire, tokenize=False, add_generation_prompt=generation_prompt,
                                                  **self.template_kwargs)  # fmt: skip

    def encode(self, text: str) -> list[int]:
        return list(self.tokenizer.encode(text, add_special_tokens=False))

    def decode(self, ids: Sequence[int]) -> str:
        return self.tokenizer.decode(list(ids), skip_special_tokens=True)

    def prompt_ids(self, messages: list[dict[str, Any]]) -> list[int]:
        return self.encode(self.render(messages, generation_prompt=True))

    def feedback_ids(self, content: str) -> list[int]:
        """Ids after an answer's end-of-turn token up to the next answer: the user turn and the generation prompt.

        Found by rendering a probe conversation with the new user turn and cutting after the end-of-turn text
        that closes the assistant turn before it (the user turn's own content never holds that text).
        """
        probe = [{"role": "user", "content": "?"}, {"role": "assistant", "content": "!"},
                 {"role": "user", "content": content}]  # fmt: skip
        text = self.render(probe, generation_prompt=True)
        start = text.rfind(content)
        cut = text.rfind(self.eos_text, 0, start)
        if start < 0 or cut < 0:
            raise ValueError("the chat template does not close an assistant turn with the eos token; "
                             "cannot find the feedback turn's tokens")  # fmt: skip
        return self.encode(text[cut + len(self.eos_text) :])


@dataclass
class Segment:
    token_ids: list[int]
    generated: bool  # True: the policy's answer (trained on); False: feedback (masked out)
    logprobs: list[float] | None = None


class PolicyClient:
    """Answers KernelAgent's model calls from the policy, at the token level, for one trajectory.

    It has the two things KernelAgent uses of `kernelvault.agents.client.ModelClient`: `endpoint.model` and
    `complete(messages, sampling)`. The first call renders the agent's opening messages; each later call
    appends the feedback turn (the last message) as a masked segment; every answer is one generated segment.
    """

    def __init__(
        self, chat: ChatTokens, generate: GenerateFunction, model_name: str, config: RolloutConfig
    ) -> None:
        self.endpoint = EndpointConfig(base_url="policy://in-process", model=model_name)
        self.chat = chat
        self.generate = generate
        self.config = config
        self.prompt_ids: list[int] = []
        self.segments: list[Segment] = []

    @property
    def completion_length(self) -> int:
        return sum(len(segment.token_ids) for segment in self.segments)

    async def complete(self, messages: list[dict[str, Any]], sampling: SamplingSettings) -> ModelReply:
        if not self.prompt_ids:
            self.prompt_ids = self.chat.prompt_ids(messages)
        else:
            if messages[-1]["role"] != "user":
                raise ValueError("a later turn must follow a user (feedback) message")
            feedback = self.chat.feedback_ids(messages[-1]["content"])
            last = self.segments[-1].token_ids if self.segments else []
            if not last or last[-1] != self.chat.eos_id:
                feedback = [self.chat.eos_id, *feedback]  # close a cut-off answer inside the masked segment
            if self.completion_length + len(feedback) >= self.config.max_completion_tokens:
                # No room for another turn: an empty answer (a parse_error worth 0) ends the trajectory's credit.
                return ModelReply("", None, "length", len(self.prompt_ids) + self.completion_length, 0)
            self.segments.append(Segment(feedback, generated=False))
        room = self.config.max_completion_tokens - self.completion_length
        max_new = min(self.config.turn_max_tokens, sampling.max_tokens, room)
        context = self.prompt_ids + [token for segment in self.segments for token in segment.token_ids]
        output = await self.generate(context, max_new)
        ids = list(output.token_ids[:max_new])
        self.segments.append(
            Segment(ids, generated=True, logprobs=output.logprobs[: len(ids)] if output.logprobs else None)
        )
        finish = "stop" if ids and ids[-1] == self.chat.eos_id else "length"
        return ModelReply(self.chat.decode(ids), None, finish, len(context), len(ids))


@dataclass(frozen=True)
class PolicyTrajectory:
    """A trajectory as the trainer needs it: tokens, loss mask, per-turn rewards and the return."""

    trajectory: Trajectory
    prompt_ids: list[int]
    completion_ids: list[int]
    env_mask: list[int]  # 1: policy token (trained); 0: feedback token (masked)
    logprobs: list[float] | None  # sampling log-probs of policy tokens, 0.0 on feedback; None if not reported
    turn_rewards: list[float] = field(default_factory=list)

    @property
    def trajectory_return(self) -> float:
        return self.trajectory.trajectory_return

    @property
    def feedback_tokens(self) -> int:
        return len(self.env_mask) - sum(self.env_mask)


def bounded(verify: VerifyFunction, slots: int) -> VerifyFunction:
    """One bound on verifications in flight across every trajectory (each agent only bounds its own)."""
    semaphore = threading.BoundedSemaphore(slots)

    def verify_bounded(task: Task, candidate: Candidate) -> Verdict:
        with semaphore:
            return verify(task, candidate)

    return verify_bounded


async def run_trajectory(task: Task, sample_index: int, chat: ChatTokens, generate: GenerateFunction,
                         verify: VerifyFunction, config: RolloutConfig, model_name: str = "policy",
                         opening: list[dict[str, Any]] | None = None) -> PolicyTrajectory:  # fmt: skip
    client = PolicyClient(chat, generate, model_name, config)
    agent = KernelAgent(
        target=config.target, platform=config.platform, client=client, verify=verify,  # type: ignore[arg-type]
        sampling=SamplingSettings(max_tokens=config.turn_max_tokens), max_turns=config.max_turns,
        stop_on_correct=config.stop_on_correct, verify_slots=1,
        reward=dataclasses.replace(DEFAULT_REWARD, discount=config.discount),
    )  # fmt: skip
    trajectory = await agent.run(task, sample_index, opening)
    completion = [token for segment in client.segments for token in segment.token_ids]
    mask = [int(segment.generated) for segment in client.segments for _ in segment.token_ids]
    logprobs = None
    if all(segment.logprobs is not None for segment in client.segments if segment.generated):
        logprobs = [
            p for s in client.segments for p in (s.logprobs if s.generated else [0.0] * len(s.token_ids))
        ]  # type: ignore[union-attr]
    rewards = [turn.verdict.reward.total if turn.verdict.reward else 0.0 for turn in trajectory.turns]
    return PolicyTrajectory(trajectory, client.prompt_ids, completion, mask, logprobs, rewards)


class GenerationBatcher:
    """Gathers the generate calls of trajectories running at once into one batched call.

    A batch is generated when every live trajectory is waiting for its next answer; a trajectory that
    ends calls `leave()`. `generate_batch(contexts, max_new_tokens)` runs in a worker thread.
    """

    def __init__(
        self, generate_batch: Callable[[list[list[int]], list[int]], list[GeneratedTokens]], live: int
    ) -> None:
        self.generate_batch = generate_batch
        self.live = live
        self.pending: list[tuple[list[int], int, asyncio.Future[GeneratedTokens]]] = []
        self.seconds = 0.0
        self.batches = 0

    async def generate(self, context: list[int], max_new_tokens: int) -> GeneratedTokens:
        future: asyncio.Future[GeneratedTokens] = asyncio.get_running_loop().create_future()
        self.pending.append((context, max_new_tokens, future))
        await self._flush_when_complete()
        return await future

    async def leave(self) -> None:
        self.live -= 1
        await self._flush_when_complete()

    async def _flush_when_complete(self) -> None:
        if not self.pending or len(self.pending) < self.live:
            return
        batch, self.pending = self.pending, []
        started = time.perf_counter()
        try:
            outputs = await asyncio.to_thread(
                self.generate_batch, [c for c, _, _ in batch], [m for _, m, _ in batch]
            )
        except Exception as error:  # noqa: BLE001 - every waiting trajectory gets the error
            for _, _, future in batch:
                future.set_exception(error)
            return
        self.seconds += time.perf_counter() - started
        self.batches += 1
        for (_, _, future), output in zip(batch, outputs, strict=True):
            future.set_result(output)


@dataclass(frozen=True)
class RolloutResult:
    trajectories: list[PolicyTrajectory]
    generation_seconds: float
    verification_seconds: float  # wall time with at least one verification running, beside generation


async def run_rollout(tasks: Sequence[Task], chat: ChatTokens, generate_batch: Callable[[list[list[int]], list[int]], list[GeneratedTokens]],
                      verify: VerifyFunction, config: RolloutConfig, model_name: str = "policy") -> RolloutResult:  # fmt: skip
    """One trajectory per entry of `tasks` (a task repeated G times is a GRPO group), generated in lock-step."""
    batcher = GenerationBatcher(generate_batch, live=len(tasks))
    timer = _BusyTimer()
    verify_all = timer.wrap(bounded(verify, config.verify_concurrency))
    seen: dict[str, int] = {}

    async def one(task: Task) -> PolicyTrajectory:
        sample = seen.get(task.task_id, 0)
        seen[task.task_id] = sample + 1
        try:
            return await run_trajectory(task, sample, chat, batcher.generate, verify_all, config, model_name)
        finally:
            await batcher.leave()

    trajectories = await asyncio.gather(*(one(task) for task in tasks))
    return RolloutResult(list(trajectories), batcher.seconds, timer.busy_seconds)


class _BusyTimer:
    """Wall time during which at least one verification was running (overlapping ones count once)."""

    def __init__(self) -> None:
        self.lock = threading.Lock()
        self.running = 0
        self.since = 0.0
        self.busy_seconds = 0.0

    def wrap(self, verify: VerifyFunction) -> VerifyFunction:
        def timed(task: Task, candidate: Candidate) -> Verdict:
            with self.lock:
                if self.running == 0:
                    self.since = time.perf_counter()
                self.running += 1
            try:
                return verify(task, candidate)
            finally:
                with self.lock:
                    self.running -= 1
                    if self.running == 0:
                        self.busy_seconds += time.perf_counter() - self.since

        return timed


def prompt_key(prompt: Any) -> str:
    """Identifies a dataset prompt (TRL hands rollout_func the prompts only, not the other columns)."""
    if isinstance(prompt, str):
        return content_hash(prompt)
    return content_hash("\x00".join(f"{m['role']}\x01{m['content']}" for m in prompt))


def trainer_generate_batch(trainer: Any) -> Callable[[list[list[int]], list[int]], list[GeneratedTokens]]:
    """Batched sampling with the trainer's own model and generation settings (transformers `generate`)."""
    import copy

    import torch
    from trl.models import unwrap_model_for_generation

    eos = set(trainer.eos_token_ids)
    pad = trainer.processing_class.pad_token_id

    def generate_batch(contexts: list[list[int]], max_new_tokens: list[int]) -> list[GeneratedTokens]:
        longest = max(len(ids) for ids in contexts)
        device = trainer.accelerator.device
        input_ids = torch.tensor([[pad] * (longest - len(ids)) + ids for ids in contexts], device=device)
        attention = torch.tensor(
            [[0] * (longest - len(ids)) + [1] * len(ids) for ids in contexts], device=device
        )
        config = copy.deepcopy(trainer.generation_config)
        config.max_new_tokens = max(max_new_tokens)
        with (
            unwrap_model_for_generation(
                trainer.model_wrapped, trainer.accelerator, gather_deepspeed3_params=trainer.args.ds3_gather_for_generation,
                generation_kwargs=trainer.generation_kwargs,
                gradient_checkpointing_kwargs=trainer.args.gradient_checkpointing_kwargs,
            ) as model,
            torch.no_grad(),  # thread-local: it must be entered in this (worker) thread
        ):  # fmt: skip
            output = model.generate(input_ids=input_ids, attention_mask=attention, generation_config=config)
        results = []
        for row, limit in zip(output[:, longest:].tolist(), max_new_tokens, strict=True):
            ids = row[:limit]
            end = next((i for i, token in enumerate(ids) if token in eos), None)
            if end is not None:
                results.append(GeneratedTokens(ids[: end + 1], None, "stop"))
            else:
                results.append(GeneratedTokens(ids, None, "length"))
        return results

    return generate_batch


class TRLRollout:
    """GRPOTrainer's `rollout_func`: one multi-turn trajectory per (already repeated) prompt.

    `last_timing` holds (generation, verification) seconds of the latest call, for the step-time split.
    """

    def __init__(self, tasks_by_prompt: dict[str, Task], verify: VerifyFunction, config: RolloutConfig,
                 model_name: str = "policy") -> None:  # fmt: skip
        self.tasks_by_prompt = tasks_by_prompt
        self.verify = verify
        self.config = config
        self.model_name = model_name
        self.last_timing: tuple[float, float] | None = None

    def __call__(self, prompts: list[Any], trainer: Any) -> dict[str, Any]:
        if getattr(trainer, "use_vllm", False):
            raise ValueError("multi-turn rollouts generate with transformers here; set use_vllm: false "
                             "(or run multi-turn GRPO with verl, see docs/rl.md)")  # fmt: skip
        try:
            tasks = [self.tasks_by_prompt[prompt_key(prompt)] for prompt in prompts]
        except KeyError:
            raise ValueError("a prompt of the batch is not one of the training dataset's prompts") from None
        chat = ChatTokens(trainer.processing_class, trainer.chat_template_kwargs)
        result = asyncio.run(run_rollout(tasks, chat, trainer_generate_batch(trainer), self.verify, self.config,
                                         self.model_name))  # fmt: skip
        self.last_timing = (result.generation_seconds, result.verification_seconds)
        return rollout_fields(result)


def trl_rollout_func(tasks_by_prompt: dict[str, Task], verify: VerifyFunction, config: RolloutConfig,
                     model_name: str = "policy") -> TRLRollout:  # fmt: skip
    return TRLRollout(tasks_by_prompt, verify, config, model_name)


def rollout_fields(result: RolloutResult) -> dict[str, Any]:
    """The rollout as GRPOTrainer takes it: token lists, the feedback mask, and columns for the reward."""
    trajectories = result.trajectories
    verdicts = [[turn.verdict for turn in t.trajectory.turns] for t in trajectories]

    def component(name: str) -> list[list[float]]:
        return [[getattr(v.reward, name) if v.reward else 0.0 for v in turns] for turns in verdicts]

    return {
        "prompt_ids": [t.prompt_ids for t in trajectories],
        "completion_ids": [t.completion_ids for t in trajectories],
        "logprobs": None
        if any(t.logprobs is None for t in trajectories)
        else [t.logprobs for t in trajectories],
        "env_mask": [t.env_mask for t in trajectories],
        "trajectory_return": [t.trajectory_return for t in trajectories],
        "turn_rewards": [t.turn_rewards for t in trajectories],
        "turn_compile": component("compile"),
        "turn_correct": component("correct"),
        "turn_speed": component("speed"),
        "turn_failure_kinds": [[v.failure_kind or "correct" for v in turns] for turns in verdicts],
        "solved": [t.trajectory.solved for t in trajectories],
        "final_speedup": [turns[-1].speedup for turns in verdicts],
        "feedback_tokens": [t.feedback_tokens for t in trajectories],
        "generation_seconds": result.generation_seconds,
        "verification_seconds": result.verification_seconds,
    }

"""The multi-turn rollout as a verl agent loop, for GRPO across many GPUs and nodes.

Same loop, same token layout and masks as the TRL rollout (`kernelvault.rl.rollout.run_trajectory`, which runs
`kernelvault.agents.graph.KernelAgent`); only the generate call differs: verl's `server_manager.generate` (vLLM or
SGLang servers), one request id per trajectory so the server can reuse the prefix cache across turns.
The trajectory's discounted return becomes the agent loop's `reward_score` (verl puts it on the last
response token, and the reward manager then skips `compute_score`); per-turn rewards go to `turn_scores`.

verl is imported only when `KernelVaultAgentLoop` is first looked up (this module's `__getattr__`), so
importing `kernelvault.rl.verl_agent` costs nothing where verl is not installed. Register the loop in the file named
by `actor_rollout_ref.rollout.agent.agent_loop_config_path` (extra keys become constructor arguments):

    - name: kernelvault_agent
      _target_: kernelvault.rl.verl_agent.KernelVaultAgentLoop
      max_turns: 3
      discount: 0.6
      stop_on_correct: true

Verdicts come from `kernelvault.rl.verifiers.verdict_source_from_env()` (KV_REWARD_URL for a reward service).
The opening messages are the dataset's prompt (`raw_prompt`: set data.return_raw_chat=True), which the release
built with the agents' `initial_messages`. Written for verl 0.9.1 (the `verl` extra pins it) and run against
its own classes in tests/verl/ (AgentLoopBase, AgentLoopOutput, the YAML registry, hydra's instantiate).
"""

from __future__ import annotations

import dataclasses
from typing import Any
from uuid import uuid4

from kernelvault.rl.rewards import TaskBook
from kernelvault.rl.rollout import ChatTokens, GeneratedTokens, RolloutConfig, run_trajectory
from kernelvault.rl.verl_score import target_of

_TASKS = TaskBook()


def _build_agent_loop_class() -> type:
    from verl.experimental.agent_loop.agent_loop import AgentLoopBase, AgentLoopOutput, register

    from kernelvault.rl.verifiers import verdict_source_from_env

    @register("kernelvault_agent")
    class KernelVaultAgentLoop(AgentLoopBase):  # type: ignore[misc, valid-type]
        """KernelAgent's draft → verify → reflect loop; feedback tokens carry response_mask 0."""

        def __init__(self, *args: Any, max_turns: int = 3, discount: float = 0.6, stop_on_correct: bool = True,
                     turn_max_tokens: int | None = None, verify_concurrency: int = 4, **kwargs: Any) -> None:  # fmt: skip
            super().__init__(*args, **kwargs)
            rollout = self.config.actor_rollout_ref.rollout
            self.response_length = int(rollout.response_length)
            self.source = verdict_source_from_env()
            self.settings = RolloutConfig(
                target="triton", platform=self.source.platform, max_turns=max_turns, discount=discount,
                stop_on_correct=stop_on_correct, turn_max_tokens=turn_max_tokens or self.response_length,
                max_completion_tokens=self.response_length, verify_concurrency=verify_concurrency,
            )  # fmt: skip
            self.chat = ChatTokens(self.tokenizer, getattr(self, "apply_chat_template_kwargs", None))

        async def run(self, sampling_params: dict[str, Any], **kwargs: Any) -> Any:
            extra_info = kwargs.get("extra_info") or {}
            target = target_of(str(kwargs.get("data_source", "kernelvault/triton")), extra_info)
            settings = dataclasses.replace(self.settings, target=target)
            task = _TASKS.get(kwargs["reward_model"]["ground_truth"], extra_info.get("task_name"))
            request_id = uuid4().hex

            async def generate(context: list[int], max_new_tokens: int) -> GeneratedTokens:
                output = await self.server_manager.generate(
                    request_id=request_id, prompt_ids=context,
                    sampling_params={**sampling_params, "max_tokens": max_new_tokens},
                )  # fmt: skip
                return GeneratedTokens(
                    list(output.token_ids), list(output.log_probs) if output.log_probs else None
                )

            # The dataset's prompt (verl's `raw_prompt`, with data.return_raw_chat=True) is the opening: the
            # release built it once, with the agents' own `initial_messages`, so the prompt verl filtered and
            # padded by length is the one the policy sees.
            opening = [{"role": m["role"], "content": m["content"]} for m in kwargs.get("raw_prompt") or ()]
            result = await run_trajectory(task, 0, self.chat, generate, self.source.verify, settings, "policy",
                                          opening or None)  # fmt: skip
            return AgentLoopOutput(
                prompt_ids=result.prompt_ids,
                response_ids=result.completion_ids[: self.response_length],
                response_mask=result.env_mask[: self.response_length],
                response_logprobs=result.logprobs[: self.response_length] if result.logprobs else None,
                reward_score=result.trajectory_return,
                num_turns=2 * len(result.turn_rewards),  # user and assistant messages, as verl counts turns
                metrics={},
                extra_fields={
                    "turn_scores": result.turn_rewards,
                    "tool_rewards": [],
                    "reward_scores": {"trajectory_return": result.trajectory_return},
                },  # fmt: skip
            )

    return KernelVaultAgentLoop


_CLASS: type | None = None


def __getattr__(name: str) -> Any:
    global _CLASS
    if name == "KernelVaultAgentLoop":
        if _CLASS is None:
            try:
                _CLASS = _build_agent_loop_class()
            except ImportError as error:
                raise ImportError(f"kernelvault.rl.verl_agent.KernelVaultAgentLoop needs verl ({error}); "
                                  "pip install verl on the training cluster") from error  # fmt: skip
        return _CLASS
    raise AttributeError(f"module {__name__!r} has no attribute {name!r}")

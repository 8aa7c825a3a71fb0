"""Multi-turn rollouts: the agents' loop on a token-level policy, feedback masked, per-turn rewards, verl adapter."""

from __future__ import annotations

import asyncio
import functools
import importlib
import sys
import types
from pathlib import Path
from typing import Any

import pytest

from kernelvault.rl.rollout import ChatTokens, GeneratedTokens, RolloutConfig, rollout_fields, run_rollout
from kernelvault.rl.tiny_model import build_tiny_policy
from kernelvault.toolchain.lane_pool import verify_once
from kernelvault.toolchain.tasks import load_task_file
from kernelvault.toolchain.verify import Verifier, VerifyConfig

ROOT = Path(__file__).resolve().parents[1]
RELU = load_task_file(ROOT / "tasks" / "relu.py")
HONEST_RELU = f"Fixed.\n\n```python\n{(ROOT / 'examples' / 'triton' / 'relu.py').read_text()}```"


def tiny_policy_path(factory: pytest.TempPathFactory) -> Path:
    """One tiny Qwen3 per test session (each test module may ask; the first builds it)."""
    path = factory.getbasetemp() / "tiny-qwen3"
    if not (path / "config.json").exists():
        build_tiny_policy(path)
    return path


@pytest.fixture(scope="module")
def chat(tmp_path_factory: pytest.TempPathFactory) -> ChatTokens:
    from transformers import AutoTokenizer

    return ChatTokens(AutoTokenizer.from_pretrained(tiny_policy_path(tmp_path_factory)))


def scripted(chat: ChatTokens, answer_for: Any, calls: list[list[list[int]]]) -> Any:
    """A generate_batch that answers from a script: answer_for(decoded context) -> (text, closed)."""

    def generate_batch(contexts: list[list[int]], max_new_tokens: list[int]) -> list[GeneratedTokens]:
        calls.append(contexts)
        outputs = []
        for context in contexts:
            text, closed = answer_for(chat.tokenizer.decode(context))
            ids = chat.encode(text) + ([chat.eos_id] if closed else [])
            outputs.append(GeneratedTokens(ids, None, "stop" if closed else "length"))
        return outputs

    return generate_batch


def test_feedback_tokens_are_exactly_the_chat_templates(chat: ChatTokens) -> None:
    opening = [{"role": "system", "content": "Be brief."}, {"role": "user", "content": "Write a kernel."}]
    answer = chat.encode("No.") + [chat.eos_id]
    feedback = "Turn 1: no candidate could be read from your answer."
    sequence = chat.prompt_ids(opening) + answer + chat.feedback_ids(feedback)
    conversation = [*opening, {"role": "assistant", "content": "No."}, {"role": "user", "content": feedback}]
    assert sequence == chat.encode(chat.render(conversation, generation_prompt=True))


def test_a_two_turn_trajectory_is_verified_per_turn_and_masks_its_feedback(chat: ChatTokens) -> None:
    def answer_for(context: str) -> tuple[str, bool]:
        fixed = "no candidate could be read" in context  # the parse_error feedback of turn 1
        return (HONEST_RELU, True) if fixed else ("ReLU keeps the positive part.", True)

    calls: list[list[list[int]]] = []
    verifier = Verifier(VerifyConfig(platform="cpu", timeout_s=120))
    config = RolloutConfig(platform="cpu", max_turns=3, turn_max_tokens=4096, max_completion_tokens=16384)
    result = asyncio.run(
        run_rollout(
            [RELU], chat, scripted(chat, answer_for, calls), functools.partial(verify_once, verifier), config
        )
    )
    (trajectory,) = result.trajectories
    kinds = [turn.verdict.failure_kind for turn in trajectory.trajectory.turns]
    assert kinds == ["parse_error", None]  # fixed on turn 2, then stops (stop on first correct)
    assert trajectory.turn_rewards == [0.0, pytest.approx(1.4)]
    assert trajectory.trajectory_return == pytest.approx(0.6 * 1.4)
    # answer₁ (1) │ feedback₁ (0) │ answer₂ (1), and the masked tokens are the agents' feedback text
    mask, ids = trajectory.env_mask, trajectory.completion_ids
    runs = [(mask[0], 1)]
    for bit in mask[1:]:
        runs[-1:] = [(bit, runs[-1][1] + 1)] if bit == runs[-1][0] else [runs[-1], (bit, 1)]
    assert [bit for bit, _ in runs] == [1, 0, 1]
    feedback = chat.tokenizer.decode([t for t, m in zip(ids, mask, strict=True) if m == 0])
    assert "Turn 1: no candidate could be read" in feedback and "<|im_start|>user" in feedback
    answers = chat.tokenizer.decode([t for t, m in zip(ids, mask, strict=True) if m == 1])
    assert (
        "ReLU keeps the positive part." in answers and "class ModelNew" in answers and "Turn 1" not in answers
    )
    assert RELU.source.strip()[:40] in chat.tokenizer.decode(trajectory.prompt_ids)  # the agents' prompt
    fields = rollout_fields(result)
    assert fields["turn_failure_kinds"] == [["parse_error", "correct"]] and fields["solved"] == [True]
    assert fields["feedback_tokens"] == [len(mask) - sum(mask)] and fields["logprobs"] is None
    assert len(calls) == 2


def test_a_group_generates_in_lock_step_and_closes_cut_off_answers(chat: ChatTokens) -> None:
    calls: list[list[list[int]]] = []
    verifier = Verifier(VerifyConfig(platform="cpu"))
    config = RolloutConfig(platform="cpu", max_turns=3, turn_max_tokens=64, max_completion_tokens=16384)
    generate = scripted(chat, lambda context: ("def kernel(", False), calls)  # always cut off: parse errors
    result = asyncio.run(
        run_rollout([RELU] * 3, chat, generate, functools.partial(verify_once, verifier), config)
    )
    assert [len(batch) for batch in calls] == [3, 3, 3]  # turn k of the whole group in one generate call
    for trajectory in result.trajectories:
        assert trajectory.turn_rewards == [0.0, 0.0, 0.0]
        ids, mask = trajectory.completion_ids, trajectory.env_mask
        first_feedback = mask.index(0)
        assert ids[first_feedback] == chat.eos_id  # the end-of-turn token closes the cut-off answer, masked
        assert chat.eos_id not in [t for t, m in zip(ids, mask, strict=True) if m == 1]
    assert [t.trajectory.sample_index for t in result.trajectories] == [0, 1, 2]


def test_a_spent_token_budget_ends_the_trajectorys_credit(chat: ChatTokens) -> None:
    calls: list[list[list[int]]] = []
    config = RolloutConfig(platform="cpu", max_turns=3, turn_max_tokens=64, max_completion_tokens=80)
    generate = scripted(chat, lambda context: ("no code", True), calls)
    result = asyncio.run(
        run_rollout(
            [RELU],
            chat,
            generate,
            functools.partial(verify_once, Verifier(VerifyConfig(platform="cpu"))),
            config,
        )
    )
    (trajectory,) = result.trajectories
    assert len(calls) == 1 and trajectory.env_mask == [1] * len(
        trajectory.completion_ids
    )  # no room for feedback
    assert len(trajectory.turn_rewards) == 3 and trajectory.trajectory_return == 0.0


def fake_verl(monkeypatch: pytest.MonkeyPatch) -> None:
    """The three names rl.verl_agent takes from verl, as small stand-ins."""
    agent_loop = types.ModuleType("verl.experimental.agent_loop.agent_loop")

    class AgentLoopBase:
        def __init__(self, trainer_config: Any, server_manager: Any, tokenizer: Any, **kwargs: Any) -> None:
            self.config, self.server_manager, self.tokenizer = trainer_config, server_manager, tokenizer

    class AgentLoopOutput:
        def __init__(self, **fields: Any) -> None:
            self.__dict__.update(fields)

    agent_loop.AgentLoopBase, agent_loop.AgentLoopOutput = AgentLoopBase, AgentLoopOutput
    agent_loop.register = lambda name: lambda cls: cls
    for name in ("verl", "verl.experimental", "verl.experimental.agent_loop"):
        monkeypatch.setitem(sys.modules, name, types.ModuleType(name))
    monkeypatch.setitem(sys.modules, "verl.experimental.agent_loop.agent_loop", agent_loop)


def test_verl_agent_loop_returns_masked_response_and_the_return(
    chat: ChatTokens, monkeypatch: pytest.MonkeyPatch
) -> None:
    sys.modules.pop("verl", None)
    module = importlib.reload(importlib.import_module("kernelvault.rl.verl_agent"))
    assert "verl" not in sys.modules  # importing the adapter does not import verl
    with pytest.raises(ImportError, match="needs verl"):
        module.KernelVaultAgentLoop  # noqa: B018 - the lookup is what builds the class
    fake_verl(monkeypatch)
    monkeypatch.setenv("KV_PLATFORM", "cpu")
    monkeypatch.delenv("KV_REWARD_URL", raising=False)
    from kernelvault.rl.verifiers import verdict_source_from_env

    verdict_source_from_env.cache_clear()
    requests: list[dict[str, Any]] = []

    class ServerManager:
        async def generate(
            self, request_id: str, prompt_ids: list[int], sampling_params: dict[str, Any]
        ) -> Any:
            requests.append({"id": request_id, "max_tokens": sampling_params["max_tokens"]})
            ids = chat.encode("still no code") + [chat.eos_id]
            return types.SimpleNamespace(token_ids=ids, log_probs=[-0.5] * len(ids))

    config = types.SimpleNamespace(actor_rollout_ref=types.SimpleNamespace(
        rollout=types.SimpleNamespace(response_length=4096)))  # fmt: skip
    loop = module.KernelVaultAgentLoop(
        config, ServerManager(), chat.tokenizer, max_turns=2, turn_max_tokens=512
    )
    output = asyncio.run(loop.run({"temperature": 1.0}, raw_prompt=[], reward_model={"ground_truth": RELU.source},
                                  extra_info={"task_name": "relu"}))  # fmt: skip
    verdict_source_from_env.cache_clear()
    assert len(requests) == 2 and requests[0]["id"] == requests[1]["id"] and requests[0]["max_tokens"] == 512
    assert output.reward_score == 0.0 and output.extra_fields["turn_scores"] == [0.0, 0.0]
    assert 0 in output.response_mask and len(output.response_mask) == len(output.response_ids)
    masked = [p for p, m in zip(output.response_logprobs, output.response_mask, strict=True) if m == 0]
    assert masked and set(masked) == {0.0}  # feedback tokens carry no sampling log-prob

"""HIPKernelGen and TritonKernelGen: one LangGraph shape, draft → verify → decide → reflect → draft.

    START ─► draft ─► verify ─► decide ─┬─► END      (turn budget spent, or correct and stop_on_correct)
               ▲                        │
               └──────── reflect ◄──────┘            (the verdict, trimmed, as the next user turn)

The turn budget (default 3) is a field of the state, counted by `verify`; LangGraph's recursion limit
is only a backstop. The verify node awaits the main job's engine (`submit`: the turn is an attempt of the
same executor as every other candidate), or calls a `verify` function in a thread (at most `verify_slots`
at once: the RL rollout's reward pool); either way candidates run in sandboxed worker processes. A model answer is never trusted to be
well formed: no code, several blocks, thinking text or a cut-off answer become `parse_error` verdicts
with the raw text kept. An endpoint that stays down raises `ProviderError` out of `run`, and the
caller records the trajectory for a later resume.
"""

from __future__ import annotations

import asyncio
import dataclasses
from collections.abc import Awaitable, Callable
from dataclasses import dataclass
from typing import Any, TypedDict

from langgraph.graph import END, START, StateGraph

from kernelvault.agents.client import ModelClient, ModelReply, SamplingSettings
from kernelvault.agents.feedback import feedback_message
from kernelvault.agents.prompting import initial_messages
from kernelvault.contracts import Candidate, Task, Verdict
from kernelvault.toolchain.reward import DEFAULT_REWARD, RewardConfig, trajectory_return

VerifyFunction = Callable[[Task, Candidate], Verdict]
# (task, candidate, sample index, turn) → verdict: the main job's engine, which verifies every turn as an attempt
SubmitFunction = Callable[[Task, Candidate, int, int], Awaitable[Verdict]]


@dataclass(frozen=True)
class TurnRecord:
    turn: int  # 0-based
    reply: ModelReply
    verdict: Verdict
    messages: tuple[dict[str, Any], ...]  # the conversation up to and including this turn's answer


@dataclass(frozen=True)
class Trajectory:
    task: Task
    sample_index: int
    turns: tuple[TurnRecord, ...]
    trajectory_return: float

    @property
    def solved(self) -> bool:
        return any(turn.verdict.correct is True for turn in self.turns)


class AgentState(TypedDict):
    task: Task
    sample_index: int
    messages: list[dict[str, Any]]
    turns: list[TurnRecord]
    max_turns: int
    reply: ModelReply | None


@dataclass
class KernelAgent:
    target: str  # "triton" | "hip"
    platform: str  # the platform verdicts come from: picks the prompts (cpu verifies for AMD)
    client: ModelClient
    verify: VerifyFunction | None = None  # called in a thread, at most `verify_slots` at once
    submit: SubmitFunction | None = None  # or awaited: the caller bounds the work (the main job's engine)
    sampling: SamplingSettings = dataclasses.field(default_factory=SamplingSettings)
    max_turns: int = 3
    stop_on_correct: bool = True  # False: keep optimising for speed until the budget is spent
    verify_slots: int = 2
    reward: RewardConfig = dataclasses.field(default_factory=lambda: DEFAULT_REWARD)

    def __post_init__(self) -> None:
        if (self.verify is None) == (self.submit is None):
            raise ValueError("a KernelAgent verifies through exactly one of verify and submit")
        self._verify_semaphore = asyncio.Semaphore(self.verify_slots)
        graph = StateGraph(AgentState)
        graph.add_node("draft", self._draft)
        graph.add_node("verify", self._verify)
        graph.add_node("reflect", self._reflect)
        graph.add_edge(START, "draft")
        graph.add_edge("draft", "verify")
        graph.add_conditional_edges("verify", self._decide, {"reflect": "reflect", "end": END})
        graph.add_edge("reflect", "draft")
        self.graph = graph.compile()

    @property
    def name(self) -> str:
        return "HIPKernelGen" if self.target == "hip" else "TritonKernelGen"

    async def _draft(self, state: AgentState) -> dict[str, Any]:
        reply = await self.client.complete(state["messages"], self.sampling)
        answer: dict[str, Any] = {
            "role": "assistant",
            "content": reply.content,
            "reasoning_content": reply.reasoning,
        }
        return {"reply": reply, "messages": [*state["messages"], answer]}

    async def _verify(self, state: AgentState) -> dict[str, Any]:
        reply = state["reply"]
        assert reply is not None
        task = state["task"]
        candidate = Candidate(task.task_id, self.target, reply.content,  # type: ignore[arg-type]
                              f"model:{self.client.endpoint.model}")  # fmt: skip
        if self.submit is not None:
            verdict = await self.submit(task, candidate, state["sample_index"], len(state["turns"]))
        else:
            assert self.verify is not None
            async with self._verify_semaphore:
                verdict = await asyncio.to_thread(self.verify, task, candidate)
        if reply.finish_reason == "length" and verdict.failure_kind == "parse_error":
            verdict = dataclasses.replace(
                verdict,
                failure_message=f"the answer was cut off at max_tokens (finish_reason=length): {verdict.failure_message}",
            )
        record = TurnRecord(len(state["turns"]), reply, verdict, tuple(state["messages"]))
        return {"turns": [*state["turns"], record]}

    def _decide(self, state: AgentState) -> str:
        last = state["turns"][-1].verdict
        if len(state["turns"]) >= state["max_turns"]:
            return "end"
        if last.correct is True and self.stop_on_correct:
            return "end"
        return "reflect"

    async def _reflect(self, state: AgentState) -> dict[str, Any]:
        turns = state["turns"]
        message = feedback_message(turns[-1].verdict, len(turns), state["max_turns"], state["task"].form)
        return {"messages": [*state["messages"], {"role": "user", "content": message}]}

    async def run(
        self, task: Task, sample_index: int = 0, opening: list[dict[str, Any]] | None = None
    ) -> Trajectory:
        """One trajectory; raises agents.client.ProviderError when the endpoint stays down.

        `opening`: the opening messages where a dataset holds them (a release's `rl_verl` prompt, built once by
        the release with `initial_messages`); otherwise they are built here the same way."""
        messages = (
            [dict(m) for m in opening]
            if opening
            else initial_messages(task.source, self.target, self.platform)
        )
        state: AgentState = {
            "task": task, "sample_index": sample_index, "turns": [], "max_turns": self.max_turns, "reply": None,
            "messages": messages,
        }  # fmt: skip
        final = await self.graph.ainvoke(state, config={"recursion_limit": 4 * self.max_turns + 8})
        turns = tuple(final["turns"])
        rewards = [turn.verdict.reward.total if turn.verdict.reward else 0.0 for turn in turns]
        return Trajectory(task, sample_index, turns, trajectory_return(rewards, self.reward))


def TritonKernelGen(**kwargs: Any) -> KernelAgent:  # noqa: N802 - the published names of the agents
    return KernelAgent(target="triton", **kwargs)


def HIPKernelGen(**kwargs: Any) -> KernelAgent:  # noqa: N802
    return KernelAgent(target="hip", **kwargs)

"""ROCmQAGen: the QA agent beside HIPKernelGen and TritonKernelGen, as a LangGraph graph.

    START ─► (a question given?) ─┬─ no ─► ask ─► answer ─► END
                                  └─ yes ────────► answer ─► END

`ask` writes one question about a topic of the ROCm inventory (its library, header and signature are in the
prompt, so the question is about something that exists); `answer` answers it with an explanation and one
code block. The answer is not checked here: the QA job checks it (API existence, compile, link, run) like
any other entry, and the checks, not this agent, decide what the row claims. There is no retry on a bad
answer: an answer that names invented APIs is exactly what the corpus must record. An endpoint that stays
down raises `ProviderError` out of `run`, and the job skips that entry and says so.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any, TypedDict

from langgraph.graph import END, START, StateGraph

from kernelvault.agents.client import ModelClient, SamplingSettings
from kernelvault.contracts import QAEntry

ASK_SYSTEM = (
    "You write the questions that GPU kernel writers on AMD Instinct GPUs ask about the ROCm libraries. "
    "Reply with one concrete question and nothing else."
)
ANSWER_SYSTEM = (
    "You answer questions about the ROCm libraries (the HIP runtime, rocPRIM, rocSPARSE, hipSPARSE, rocRAND, "
    "hipRAND) for kernel writers. Explain briefly and put every API name in backticks. Give exactly one code "
    "block, fenced as ```cpp, that compiles with hipcc as it stands: include its headers and declare what it "
    "uses. If the code is a program that prints, state what it prints in a ```text block after a line "
    "'Expected output:'. Use only APIs that exist in ROCm; never CUDA-only calls."
)


@dataclass(frozen=True)
class QATopic:
    library: str
    name: str  # as the inventory names it
    header: str
    signature: str


class QAState(TypedDict):
    topic: QATopic
    question: str | None
    answer: str | None
    reasoning: str | None


@dataclass
class QAAgent:
    client: ModelClient
    sampling: SamplingSettings
    model: str

    def __post_init__(self) -> None:
        graph = StateGraph(QAState)
        graph.add_node("ask", self._ask)
        graph.add_node("answer", self._answer)
        graph.add_conditional_edges(START, lambda state: "answer" if state["question"] else "ask")
        graph.add_edge("ask", "answer")
        graph.add_edge("answer", END)
        self._graph = graph.compile()

    async def _ask(self, state: QAState) -> dict[str, Any]:
        topic = state["topic"]
        prompt = (f"Write a question a kernel writer would ask about `{topic.name}` from {topic.library} "
                  f"(declared in {topic.header}: `{topic.signature}`).")  # fmt: skip
        reply = await self.client.complete(
            [{"role": "system", "content": ASK_SYSTEM}, {"role": "user", "content": prompt}], self.sampling
        )
        return {"question": reply.content.strip()}

    async def _answer(self, state: QAState) -> dict[str, Any]:
        reply = await self.client.complete(
            [
                {"role": "system", "content": ANSWER_SYSTEM},
                {"role": "user", "content": state["question"] or ""},
            ],
            self.sampling,
        )
        return {"answer": reply.content, "reasoning": reply.reasoning}

    async def run(self, topic: QATopic, question: str | None = None) -> QAEntry:
        state = await self._graph.ainvoke(
            {"topic": topic, "question": question, "answer": None, "reasoning": None}
        )
        return QAEntry(state["question"] or "", state["answer"] or "", topic.library, topic.name,
                       f"model:{self.model}", state["reasoning"])  # fmt: skip


def ROCmQAGen(client: ModelClient, sampling: SamplingSettings, model: str) -> QAAgent:  # noqa: N802 - the agents' naming
    return QAAgent(client, sampling, model)

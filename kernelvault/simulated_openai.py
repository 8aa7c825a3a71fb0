"""A real HTTP server on localhost that speaks the OpenAI chat-completions API, with scripted answers.

For tests and benchmarks (bench/gpu_busy.py), and for a dry run of a pipeline without a model. Give it
scenarios: a marker string that identifies the task in the conversation, and the answer for each turn.
It can inject faults (429, 500, a dropped connection) before the next answers, answer after a fixed
delay or a latency drawn per request (`latency_s`), and it records every request it saw.

    POST /v1/chat/completions   {"model"?, "messages": [{"role", "content"}, ...], ...} → a chat.completion

It is a FastAPI app served by uvicorn (kernelvault/http_json.py); requests wait on asyncio, so a slow
answer (`delay_s`) holds no thread and any number of requests are answered at once. A body without a
`messages` list is refused with 400 in the OpenAI API's error shape.
"""

from __future__ import annotations

import asyncio
import threading
import time
from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Any

from fastapi import FastAPI, Request
from fastapi.responses import JSONResponse
from pydantic import BaseModel, ConfigDict

from kernelvault.http_json import OpenAIError, ThreadedServer, json_app, openai_error


@dataclass
class Answer:
    content: str
    finish_reason: str = "stop"
    reasoning: str | None = None


@dataclass
class Recorded:
    path: str
    status: int  # 0 for a dropped connection
    body: dict[str, Any]


class ChatMessage(BaseModel):
    model_config = ConfigDict(extra="allow")  # name, tool_calls, reasoning_content: kept, not read

    role: str
    content: str | list[dict[str, Any]] | None = None


class ChatRequest(BaseModel):
    """What the server reads of a request; the rest (temperature, max_tokens, ...) is recorded, not used."""

    model_config = ConfigDict(extra="allow")

    model: str = "test"
    messages: list[ChatMessage]


@dataclass
class FakeOpenAI:
    scenarios: dict[str, list[Answer]] = field(default_factory=dict)  # marker -> answer per turn
    delay_s: float = 0.0
    latency_s: Callable[[], float] | None = None  # drawn per answer, in place of delay_s
    faults: list[int | str] = field(default_factory=list)  # consumed first: 429, 500 or "drop"
    always_fail: int | None = None  # every request answers this status
    requests: list[Recorded] = field(default_factory=list)
    most_in_flight: int = 0  # the most requests it was answering at one time (a client's concurrency)
    _in_flight: int = 0
    _lock: threading.Lock = field(default_factory=threading.Lock)

    def answer_for(self, messages: list[dict[str, Any]]) -> Answer:
        for marker, answers in self.scenarios.items():
            positions = [i for i, m in enumerate(messages) if m["role"] == "user" and marker in m["content"]]
            if positions:
                turn = (len(messages) - positions[-1] - 1) // 2
                return answers[min(turn, len(answers) - 1)]
        return Answer("I cannot help with that.")

    def start(self, port: int = 0) -> tuple[str, Callable[[], None]]:
        """Serve on 127.0.0.1:`port` (0: any free port); returns the base URL (`.../v1`) and a stop function."""
        server = ThreadedServer(self.app(), "127.0.0.1", port)
        return f"{server.start()}/v1", server.stop

    def app(self) -> FastAPI:
        app = json_app("FakeOpenAI", openai_error, OpenAIError, description=__doc__ or "")

        @app.post("/v1/chat/completions")
        async def chat_completions(chat: ChatRequest, request: Request) -> JSONResponse:
            body: dict[str, Any] = await request.json()  # as sent, for `requests` (chat is its checked view)
            path = request.url.path
            with self._lock:
                fault = self.faults.pop(0) if self.faults else self.always_fail
            if fault == "drop":
                self.requests.append(Recorded(path, 0, body))
                await app.state.server.drop(request)
                return JSONResponse({})  # never sent: the connection is gone
            if fault is not None:
                self.requests.append(Recorded(path, int(fault), body))
                headers = {"Retry-After": "0"} if fault == 429 else None
                return JSONResponse(
                    {"error": {"message": f"injected {fault}", "type": "server_error"}}, int(fault), headers
                )
            with self._lock:
                self._in_flight += 1
                self.most_in_flight = max(self.most_in_flight, self._in_flight)
            try:
                await asyncio.sleep(self.latency_s() if self.latency_s else self.delay_s)
            finally:
                with self._lock:
                    self._in_flight -= 1
            answer = self.answer_for(body["messages"])
            self.requests.append(Recorded(path, 200, body))
            message: dict[str, Any] = {"role": "assistant", "content": answer.content}
            if answer.reasoning is not None:
                message["reasoning_content"] = answer.reasoning  # as vLLM returns Qwen3's thinking
            return JSONResponse({
                "id": "chatcmpl-test", "object": "chat.completion", "created": int(time.time()),
                "model": chat.model,
                "choices": [{"index": 0, "message": message, "finish_reason": answer.finish_reason}],
                "usage": {"prompt_tokens": 100, "completion_tokens": len(answer.content) // 4,
                          "total_tokens": 100 + len(answer.content) // 4},
            })  # fmt: skip

        return app

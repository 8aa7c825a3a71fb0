"""A real HTTP server on localhost that speaks the OpenAI chat-completions API, with scripted answers.

For tests and benchmarks (bench/gpu_busy.py), and for a dry run of a pipeline without a model. Give it
scenarios: a marker string that identifies the task in the conversation, and the answer for each turn.
It can inject faults (429, 500, a dropped connection) before the next answers, answer after a fixed
delay or a latency drawn per request (`latency_s`), and it records every request it saw.
"""

from __future__ import annotations

import json
import socket
import threading
import time
from collections.abc import Callable
from dataclasses import dataclass, field
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from typing import Any

from kernelvault.http_json import send_json


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
        server_state = self

        class Handler(BaseHTTPRequestHandler):
            def log_message(self, *args: Any) -> None:
                pass

            def do_POST(self) -> None:  # noqa: N802 - http.server's naming
                body = json.loads(self.rfile.read(int(self.headers.get("Content-Length", 0))) or b"{}")
                with server_state._lock:
                    fault = server_state.faults.pop(0) if server_state.faults else server_state.always_fail
                if fault == "drop":
                    server_state.requests.append(Recorded(self.path, 0, body))
                    self.connection.shutdown(socket.SHUT_RDWR)
                    self.close_connection = True
                    return
                if fault is not None:
                    server_state.requests.append(Recorded(self.path, int(fault), body))
                    self._send(
                        int(fault), {"error": {"message": f"injected {fault}", "type": "server_error"}}
                    )
                    return
                with server_state._lock:
                    server_state._in_flight += 1
                    server_state.most_in_flight = max(server_state.most_in_flight, server_state._in_flight)
                try:
                    time.sleep(server_state.latency_s() if server_state.latency_s else server_state.delay_s)
                finally:
                    with server_state._lock:
                        server_state._in_flight -= 1
                answer = server_state.answer_for(body.get("messages", []))
                server_state.requests.append(Recorded(self.path, 200, body))
                message: dict[str, Any] = {"role": "assistant", "content": answer.content}
                if answer.reasoning is not None:
                    message["reasoning_content"] = answer.reasoning  # as vLLM returns Qwen3's thinking
                self._send(200, {
                    "id": "chatcmpl-test", "object": "chat.completion", "created": int(time.time()),
                    "model": body.get("model", "test"),
                    "choices": [{"index": 0, "message": message, "finish_reason": answer.finish_reason}],
                    "usage": {"prompt_tokens": 100, "completion_tokens": len(answer.content) // 4,
                              "total_tokens": 100 + len(answer.content) // 4},
                })  # fmt: skip

            def _send(self, status: int, payload: dict[str, Any]) -> None:
                send_json(self, status, payload, {"Retry-After": "0"} if status == 429 else None)

        server = ThreadingHTTPServer(("127.0.0.1", port), Handler)
        server.daemon_threads = True
        thread = threading.Thread(target=server.serve_forever, daemon=True)
        thread.start()

        def stop() -> None:
            server.shutdown()
            server.server_close()

        return f"http://127.0.0.1:{server.server_address[1]}/v1", stop

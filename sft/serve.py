"""A small OpenAI-compatible chat-completions server around a transformers model, in this process.

It lets the agents (`agents/`, which speak chat completions to vLLM or a hosted API) drive a model that
was just trained, so the pass rate of a small model is measured by exactly the code that builds the
corpus. Requests are answered one at a time (one `generate` call each); that is plenty for models small
enough to train on a CPU. For Qwen3-8B serve the saved model with vLLM and pass `eval_base_url`.

Like vLLM's reasoning parser for Qwen3, the text between <think> and </think> comes back as the
message's `reasoning_content` and the rest as its `content`. `finish_reason` is `length` when the
answer hit max_tokens (or the model's context) without an end-of-turn token, `stop` otherwise.
Not supported: streaming, several choices (`n`), tools, logprobs.
"""

from __future__ import annotations

import json
import threading
import time
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from typing import Any

import torch
from transformers import PreTrainedModel, PreTrainedTokenizerBase

from kernelvault.http_json import send_json


def split_reasoning(text: str) -> tuple[str | None, str]:
    """(reasoning, answer) of a Qwen3 reply; the opening <think> may be missing, as in Qwen3's own output."""
    if "</think>" not in text:
        return None, text.strip()
    reasoning, _, answer = text.partition("</think>")
    return reasoning.replace("<think>", "", 1).strip() or None, answer.strip()


class ChatCompletionServer:
    def __init__(self, model: PreTrainedModel, tokenizer: PreTrainedTokenizerBase, model_name: str) -> None:
        self.model = model
        self.tokenizer = tokenizer
        self.model_name = model_name
        self._lock = threading.Lock()  # one generate at a time: the model is not re-entrant
        self._server: ThreadingHTTPServer | None = None
        stop = {tokenizer.eos_token_id, tokenizer.convert_tokens_to_ids("<|im_end|>")}
        self.stop_ids = sorted(token for token in stop if isinstance(token, int) and token >= 0)

    def complete(self, request: dict[str, Any]) -> dict[str, Any]:
        messages = [{"role": m["role"], "content": m.get("content") or ""} for m in request["messages"]]
        prompt = self.tokenizer.apply_chat_template(
            messages, add_generation_prompt=True, tokenize=True, return_dict=True, return_tensors="pt"
        )
        prompt_length = prompt["input_ids"].shape[1]
        limit = getattr(self.model.config.get_text_config(), "max_position_embeddings", None)
        max_new = int(request.get("max_completion_tokens") or request.get("max_tokens") or 1024)
        if limit is not None:
            max_new = min(max_new, limit - prompt_length)
        if max_new <= 0:  # the conversation already fills the context: nothing can be generated
            return self._response("", None, "length", prompt_length, 0)
        temperature = float(request.get("temperature", 1.0))
        options: dict[str, Any] = {"max_new_tokens": max_new, "do_sample": temperature > 0,
                                   "eos_token_id": self.stop_ids, "pad_token_id": self.tokenizer.pad_token_id}  # fmt: skip
        if temperature > 0:
            options.update(temperature=temperature, top_p=float(request.get("top_p", 1.0)))
        device = next(self.model.parameters()).device
        with self._lock, torch.inference_mode():
            if request.get("seed") is not None:
                torch.manual_seed(int(request["seed"]))
            output = self.model.generate(**{k: v.to(device) for k, v in prompt.items()}, **options)
        new_tokens = output[0, prompt_length:].tolist()
        stopped = bool(new_tokens) and new_tokens[-1] in self.stop_ids
        reasoning, content = split_reasoning(self.tokenizer.decode(new_tokens, skip_special_tokens=True))
        return self._response(
            content, reasoning, "stop" if stopped else "length", prompt_length, len(new_tokens)
        )

    def _response(self, content: str, reasoning: str | None, finish: str, prompt_tokens: int,
                  completion_tokens: int) -> dict[str, Any]:  # fmt: skip
        message: dict[str, Any] = {"role": "assistant", "content": content}
        if reasoning is not None:
            message["reasoning_content"] = reasoning
        return {
            "id": f"chatcmpl-{time.monotonic_ns()}", "object": "chat.completion", "created": int(time.time()),
            "model": self.model_name, "choices": [{"index": 0, "message": message, "finish_reason": finish}],
            "usage": {"prompt_tokens": prompt_tokens, "completion_tokens": completion_tokens,
                      "total_tokens": prompt_tokens + completion_tokens},
        }  # fmt: skip

    def start(self, host: str = "127.0.0.1", port: int = 0) -> str:
        """Serve in a daemon thread; returns the base URL (`http://host:port/v1`)."""
        server_state = self

        class Handler(BaseHTTPRequestHandler):
            def log_message(self, *args: Any) -> None:
                pass

            def do_GET(self) -> None:  # noqa: N802 - http.server's naming
                if self.path.rstrip("/").endswith("/models"):
                    self._send(
                        200, {"object": "list", "data": [{"id": server_state.model_name, "object": "model"}]}
                    )
                else:
                    self._send(404, {"error": {"message": f"no route {self.path}", "type": "not_found"}})

            def do_POST(self) -> None:  # noqa: N802
                if not self.path.rstrip("/").endswith("/chat/completions"):
                    self._send(404, {"error": {"message": f"no route {self.path}", "type": "not_found"}})
                    return
                try:
                    body = json.loads(self.rfile.read(int(self.headers.get("Content-Length", 0))) or b"{}")
                    if not isinstance(body.get("messages"), list):
                        raise ValueError("messages must be a list")
                except ValueError as error:  # JSONDecodeError included
                    self._send(400, {"error": {"message": str(error), "type": "invalid_request_error"}})
                    return
                try:
                    self._send(200, server_state.complete(body))
                except Exception as error:  # noqa: BLE001 - a failed generation is a 500 for the client to handle
                    self._send(
                        500,
                        {"error": {"message": f"{type(error).__name__}: {error}", "type": "server_error"}},
                    )

            def _send(self, status: int, payload: dict[str, Any]) -> None:
                send_json(self, status, payload)

        self._server = ThreadingHTTPServer((host, port), Handler)
        self._server.daemon_threads = True
        threading.Thread(target=self._server.serve_forever, daemon=True).start()
        return f"http://{host}:{self._server.server_address[1]}/v1"

    def stop(self) -> None:
        if self._server is not None:
            self._server.shutdown()
            self._server.server_close()
            self._server = None

    def __enter__(self) -> str:
        return self.start()

    def __exit__(self, *exc: object) -> None:
        self.stop()

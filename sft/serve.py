"""A small OpenAI-compatible chat-completions server around a transformers model, in this process.

It lets the agents (`agents/`, which speak chat completions to vLLM or a hosted API) drive a model that
was just trained, so the pass rate of a small model is measured by exactly the code that builds the
corpus. Requests are answered one at a time (one `generate` call each); that is plenty for models small
enough to train on a CPU. For Qwen3-8B serve the saved model with vLLM and pass `eval_base_url`.

Like vLLM's reasoning parser for Qwen3, the text between <think> and </think> comes back as the
message's `reasoning_content` and the rest as its `content`. `finish_reason` is `length` when the
answer hit max_tokens (or the model's context) without an end-of-turn token, `stop` otherwise.
Not supported: streaming, several choices (`n`), tools, logprobs (such fields are accepted and ignored).

    GET  /v1/models             → {"object": "list", "data": [{"id": model_name, "object": "model"}]}
    POST /v1/chat/completions   {"messages", "max_tokens"?, "temperature"?, "top_p"?, "seed"?} → a chat.completion

It is a FastAPI app served by uvicorn (kernelvault/http_json.py): a body that does not fit `ChatRequest`
is a 400 in the OpenAI error shape, as vLLM answers it; a failed generation is a 500 with the error's line.
"""

from __future__ import annotations

import threading
import time
from typing import Any

import torch
from fastapi import FastAPI
from fastapi.responses import JSONResponse
from pydantic import BaseModel, ConfigDict
from transformers import PreTrainedModel, PreTrainedTokenizerBase

from kernelvault.http_json import OpenAIError, ThreadedServer, json_app, openai_error


def split_reasoning(text: str) -> tuple[str | None, str]:
    """(reasoning, answer) of a Qwen3 reply; the opening <think> may be missing, as in Qwen3's own output."""
    if "</think>" not in text:
        return None, text.strip()
    reasoning, _, answer = text.partition("</think>")
    return reasoning.replace("<think>", "", 1).strip() or None, answer.strip()


class ChatMessage(BaseModel):
    model_config = ConfigDict(extra="allow")

    role: str
    content: str | list[dict[str, Any]] | None = None


class ChatRequest(BaseModel):
    """The fields `generate` reads; the rest of the OpenAI request (stream, n, tools, ...) is ignored."""

    model_config = ConfigDict(extra="allow")

    model: str | None = None
    messages: list[ChatMessage]
    max_tokens: int | None = None
    max_completion_tokens: int | None = None
    temperature: float | None = None
    top_p: float | None = None
    seed: int | None = None


class ChatCompletionServer:
    def __init__(self, model: PreTrainedModel, tokenizer: PreTrainedTokenizerBase, model_name: str) -> None:
        self.model = model
        self.tokenizer = tokenizer
        self.model_name = model_name
        self._lock = threading.Lock()  # one generate at a time: the model is not re-entrant
        self._server: ThreadedServer | None = None
        stop = {tokenizer.eos_token_id, tokenizer.convert_tokens_to_ids("<|im_end|>")}
        self.stop_ids = sorted(token for token in stop if isinstance(token, int) and token >= 0)

    def complete(self, request: ChatRequest) -> dict[str, Any]:
        messages = [{"role": m.role, "content": m.content or ""} for m in request.messages]
        prompt = self.tokenizer.apply_chat_template(
            messages, add_generation_prompt=True, tokenize=True, return_dict=True, return_tensors="pt"
        )
        prompt_length = prompt["input_ids"].shape[1]
        limit = getattr(self.model.config.get_text_config(), "max_position_embeddings", None)
        max_new = request.max_completion_tokens or request.max_tokens or 1024
        if limit is not None:
            max_new = min(max_new, limit - prompt_length)
        if max_new <= 0:  # the conversation already fills the context: nothing can be generated
            return self._response("", None, "length", prompt_length, 0)
        temperature = 1.0 if request.temperature is None else request.temperature
        options: dict[str, Any] = {"max_new_tokens": max_new, "do_sample": temperature > 0,
                                   "eos_token_id": self.stop_ids, "pad_token_id": self.tokenizer.pad_token_id}  # fmt: skip
        if temperature > 0:
            options.update(temperature=temperature, top_p=1.0 if request.top_p is None else request.top_p)
        device = next(self.model.parameters()).device
        with self._lock, torch.inference_mode():
            if request.seed is not None:
                torch.manual_seed(request.seed)
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

    def app(self) -> FastAPI:
        app = json_app("KernelVault SFT model server", openai_error, OpenAIError, description=__doc__ or "")

        @app.get("/v1/models")
        def models() -> dict[str, Any]:
            return {"object": "list", "data": [{"id": self.model_name, "object": "model"}]}

        # A plain def: FastAPI runs it in its thread pool, so `generate` never blocks the event loop.
        @app.post("/v1/chat/completions")
        def chat_completions(request: ChatRequest) -> JSONResponse:
            try:
                return JSONResponse(self.complete(request))
            except Exception as error:  # noqa: BLE001 - a failed generation is a 500 for the client to handle
                return JSONResponse(openai_error(500, f"{type(error).__name__}: {error}"), 500)

        return app

    def start(self, host: str = "127.0.0.1", port: int = 0) -> str:
        """Serve in a daemon thread; returns the base URL (`http://host:port/v1`)."""
        self._server = ThreadedServer(self.app(), host, port)
        return f"{self._server.start()}/v1"

    def stop(self) -> None:
        if self._server is not None:
            self._server.stop()
            self._server = None

    def __enter__(self) -> str:
        return self.start()

    def __exit__(self, *exc: object) -> None:
        self.stop()

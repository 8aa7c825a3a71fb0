"""The model client: the `openai` async client against any OpenAI-compatible endpoint.

vLLM, SGLang and hosted APIs all speak chat completions. We keep what the training data needs beside
the answer: the reasoning text (vLLM and SGLang serving Qwen3 return it as `reasoning_content`), token
usage and the finish reason (`length` means the answer was cut off).

Retries live in exactly one layer, here, with tenacity: 429, 5xx, timeouts and dropped connections
are retried with exponential backoff; the openai client's own retries are switched off
(`max_retries=0`). When the endpoint stays down, `ProviderError` reaches the caller, which records
the attempt as `provider_error` so that a later run resumes it. Bad kernels are not retried here: that
is the agent's turn budget.
"""

from __future__ import annotations

import asyncio
import os
from dataclasses import dataclass, field
from typing import Any

import openai
from tenacity import AsyncRetrying, retry_if_exception_type, stop_after_attempt, wait_random_exponential

_TRANSIENT = (
    openai.APIConnectionError,
    openai.APITimeoutError,
    openai.RateLimitError,
    openai.InternalServerError,
)


class ProviderError(RuntimeError):
    """The endpoint failed after every retry, or the run's budget is spent (one-line message)."""


@dataclass(frozen=True)
class SamplingSettings:
    temperature: float = 0.7
    top_p: float = 0.95
    max_tokens: int = 8192
    seed: int | None = None

    def as_request(self) -> dict[str, Any]:
        request: dict[str, Any] = {
            "temperature": self.temperature,
            "top_p": self.top_p,
            "max_tokens": self.max_tokens,
        }
        if self.seed is not None:
            request["seed"] = self.seed
        return request


@dataclass(frozen=True)
class ModelReply:
    content: str
    reasoning: str | None
    finish_reason: str | None
    prompt_tokens: int
    completion_tokens: int


@dataclass
class RunBudget:
    """Caps on one run's requests and tokens; None means no cap. Shared by every trajectory of the run."""

    max_requests: int | None = None
    max_tokens: int | None = None
    requests: int = 0
    tokens: int = 0
    _lock: asyncio.Lock = field(default_factory=asyncio.Lock, repr=False)

    async def reserve_request(self) -> None:
        async with self._lock:
            if self.max_requests is not None and self.requests >= self.max_requests:
                raise ProviderError(f"request budget of {self.max_requests} spent")
            if self.max_tokens is not None and self.tokens >= self.max_tokens:
                raise ProviderError(f"token budget of {self.max_tokens} spent")
            self.requests += 1

    async def add_tokens(self, count: int) -> None:
        async with self._lock:
            self.tokens += count


@dataclass(frozen=True)
class EndpointConfig:
    base_url: str
    model: str
    api_key_env: str = "OPENAI_API_KEY"  # the key is read from the environment, never stored in rows or logs
    timeout_s: float = 600.0
    attempts: int = 6  # tries per request, the first included
    backoff_initial_s: float = 1.0
    backoff_max_s: float = 30.0

    @staticmethod
    def from_env(base_url: str | None, model: str | None) -> EndpointConfig | None:
        url = base_url or os.environ.get("OPENAI_BASE_URL")
        if not url:
            return None
        name = model or os.environ.get("KV_MODEL") or os.environ.get("OPENAI_MODEL")
        if not name:
            raise ValueError(
                "a model endpoint is configured but no model name: pass --model (or set KV_MODEL)"
            )
        return EndpointConfig(base_url=url, model=name)


class ModelClient:
    """Chat completions with bounded concurrency, one retry layer and a run budget."""

    def __init__(
        self, endpoint: EndpointConfig, concurrency: int = 16, budget: RunBudget | None = None
    ) -> None:
        self.endpoint = endpoint
        self.budget = budget or RunBudget()
        self._semaphore = asyncio.Semaphore(concurrency)
        self._client = openai.AsyncOpenAI(
            base_url=endpoint.base_url,
            api_key=os.environ.get(endpoint.api_key_env)
            or "not-needed",  # local vLLM/SGLang servers need none
            timeout=endpoint.timeout_s,
            max_retries=0,  # tenacity below is the only retry layer
        )

    async def close(self) -> None:
        await self._client.close()

    async def complete(self, messages: list[dict[str, str]], sampling: SamplingSettings) -> ModelReply:
        # Only role and content go over the wire: earlier turns' reasoning stays in our records (Qwen3's
        # own template drops it too), and strict endpoints reject unknown message fields.
        wire_messages = [{"role": m["role"], "content": m["content"]} for m in messages]
        async with self._semaphore:
            await self.budget.reserve_request()
            try:
                async for attempt in AsyncRetrying(
                    retry=retry_if_exception_type(_TRANSIENT),
                    stop=stop_after_attempt(self.endpoint.attempts),
                    wait=wait_random_exponential(  # exponential backoff with full jitter
                        multiplier=self.endpoint.backoff_initial_s, max=self.endpoint.backoff_max_s
                    ),
                    reraise=True,
                ):
                    with attempt:
                        response = await self._client.chat.completions.create(
                            model=self.endpoint.model, messages=wire_messages, **sampling.as_request()
                        )  # type: ignore[call-overload]
            except _TRANSIENT as error:
                raise ProviderError(f"{self.endpoint.base_url} failed after {self.endpoint.attempts} tries: "
                                    f"{type(error).__name__}: {error}".splitlines()[0]) from None  # fmt: skip
            except (
                openai.APIStatusError
            ) as error:  # 4xx other than 429: our request or the model name is wrong
                raise ProviderError(f"{self.endpoint.base_url} refused the request: {error.status_code} "
                                    f"{str(error.message).splitlines()[0][:300]}") from None  # fmt: skip
        if not response.choices:
            raise ProviderError(f"{self.endpoint.base_url} returned no choices")
        choice = response.choices[0]
        message = choice.message
        extra = message.model_extra or {}
        reasoning = extra.get("reasoning_content") or extra.get("reasoning") or None
        usage = response.usage
        prompt_tokens = usage.prompt_tokens if usage else 0
        completion_tokens = usage.completion_tokens if usage else 0
        await self.budget.add_tokens(prompt_tokens + completion_tokens)
        return ModelReply(
            message.content or "", reasoning, choice.finish_reason, prompt_tokens, completion_tokens
        )

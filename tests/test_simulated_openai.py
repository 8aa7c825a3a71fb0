"""The scripted OpenAI server over real HTTP, and what every service built on kernelvault/http_json.py shares:
one-line errors, one log line per request, /openapi.json, a prompt stop and a port that is reused at once."""

from __future__ import annotations

import http.client
import json
import logging
import re
import threading
import time
import urllib.error
import urllib.request
from concurrent.futures import ThreadPoolExecutor

import openai
import pytest

from kernelvault.simulated_openai import Answer, FakeOpenAI

ASK = [{"role": "user", "content": "write relu"}]


def post(url: str, data: bytes) -> tuple[int, dict]:
    request = urllib.request.Request(url, data=data, headers={"Content-Type": "application/json"})
    try:
        with urllib.request.urlopen(request, timeout=30) as response:
            return response.status, json.loads(response.read())
    except urllib.error.HTTPError as error:
        return error.code, json.loads(error.read())


def test_injected_faults_reach_the_client_as_a_429_a_500_and_a_dropped_connection() -> None:
    server = FakeOpenAI(scenarios={"relu": [Answer("def relu(): ...", reasoning="max(x, 0)")]},
                        faults=[429, 500, "drop"])  # fmt: skip
    url, stop = server.start()
    try:
        client = openai.OpenAI(base_url=url, api_key="none", max_retries=3)
        reply = client.chat.completions.create(model="m", messages=ASK)
        raw = FakeOpenAI(faults=["drop"])
        raw_url, raw_stop = raw.start()
        try:
            with pytest.raises(http.client.RemoteDisconnected):  # closed without a status line
                post(f"{raw_url}/chat/completions", json.dumps({"messages": ASK}).encode())
        finally:
            raw_stop()
    finally:
        stop()
    assert reply.choices[0].message.content == "def relu(): ..."
    assert reply.choices[0].message.reasoning_content == "max(x, 0)"  # as vLLM returns Qwen3's thinking
    assert [request.status for request in server.requests] == [429, 500, 0, 200]
    assert all(request.body["messages"] == ASK for request in server.requests)  # the body as sent


def test_a_malformed_request_is_one_line_in_the_openai_error_shape() -> None:
    server = FakeOpenAI()
    url, stop = server.start()
    try:
        missing = post(f"{url}/chat/completions", json.dumps({"model": "m"}).encode())
        not_json = post(f"{url}/chat/completions", b"{not json")
        nowhere = post(f"{url}/completions", b"{}")
        with pytest.raises(openai.BadRequestError, match="messages: Input should be a valid list"):
            openai.OpenAI(base_url=url, api_key="none", max_retries=0).chat.completions.create(
                model="m",
                messages="relu",  # type: ignore[arg-type]
            )
    finally:
        stop()
    assert missing == (
        400,
        {"error": {"message": "messages: Field required", "type": "invalid_request_error"}},
    )
    assert not_json[0] == 400 and not_json[1]["error"]["message"].startswith("the body is not JSON: ")
    assert nowhere == (404, {"error": {"message": "no route POST /v1/completions", "type": "not_found"}})
    assert server.requests == []  # refused before the script saw them


def test_openapi_lists_the_route_and_docs_are_served() -> None:
    url, stop = FakeOpenAI().start()
    try:
        with urllib.request.urlopen(f"{url.removesuffix('/v1')}/openapi.json", timeout=10) as response:
            schema = json.loads(response.read())
        with urllib.request.urlopen(f"{url.removesuffix('/v1')}/docs", timeout=10) as response:
            docs = response.read().decode()
    finally:
        stop()
    assert list(schema["paths"]) == ["/v1/chat/completions"]
    operation = schema["paths"]["/v1/chat/completions"]["post"]
    assert set(operation["responses"]) == {"200", "4XX"}  # one error shape, no FastAPI 422
    assert "messages" in schema["components"]["schemas"]["ChatRequest"]["required"]
    assert "swagger" in docs.lower()


def test_every_request_is_one_log_line_at_info(caplog: pytest.LogCaptureFixture) -> None:
    server = FakeOpenAI(faults=[500])
    with caplog.at_level(logging.INFO, logger="kernelvault.http"):
        url, stop = server.start()
        try:
            post(f"{url}/chat/completions", json.dumps({"messages": ASK}).encode())
            post(f"{url}/chat/completions", json.dumps({"messages": ASK}).encode())
            post(f"{url}/chat/completions", b"{}")
        finally:
            stop()  # the line is written once the answer is sent: by the time the server has stopped
    lines = [record.getMessage() for record in caplog.records if record.name == "kernelvault.http"]
    assert len(lines) == 3, lines
    assert re.fullmatch(r"POST /v1/chat/completions 500 \d+\.\d{3}s", lines[0])
    assert lines[1].startswith("POST /v1/chat/completions 200 ") and " 400 " in lines[2]


def test_slow_answers_are_concurrent_and_a_stop_cuts_them_off_at_once() -> None:
    server = FakeOpenAI(delay_s=0.5)
    url, stop = server.start()
    body = json.dumps({"messages": ASK}).encode()
    with ThreadPoolExecutor(16) as callers:
        statuses = list(callers.map(lambda _: post(f"{url}/chat/completions", body)[0], range(16)))
    assert statuses == [200] * 16 and server.most_in_flight == 16  # no thread per request to run out of

    slow = FakeOpenAI(delay_s=60.0)
    slow_url, slow_stop = slow.start()
    outcome: list[BaseException] = []

    def wait_for_an_answer() -> None:
        try:
            post(f"{slow_url}/chat/completions", body)
        except (OSError, http.client.HTTPException) as error:
            outcome.append(error)

    caller = threading.Thread(target=wait_for_an_answer)
    caller.start()
    while slow.most_in_flight == 0:
        time.sleep(0.01)
    started = time.monotonic()
    slow_stop()
    stopped_in = time.monotonic() - started
    caller.join(timeout=10)
    stop()
    # uvicorn notices a stop on its 0.1 s tick, then pauses 0.1 s before closing connections; waiting for the
    # request in flight would take 60 s.
    assert stopped_in < 1.0 and outcome, (stopped_in, outcome)
    port = int(slow_url.rsplit(":", 1)[1].split("/")[0])
    again_url, again_stop = FakeOpenAI().start(port=port)  # the same port, at once (SO_REUSEADDR)
    again_stop()
    assert again_url == slow_url

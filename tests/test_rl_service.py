"""The reward service over real HTTP on localhost: job queue, long polls, the client, tokens, verl through it."""

from __future__ import annotations

import functools
import json
import os
import re
import signal
import subprocess
import sys
import threading
import time
import urllib.error
import urllib.request
from collections.abc import Iterator
from pathlib import Path

import pytest

from kernelvault.contracts import Candidate, Task, Verdict
from kernelvault.rl import verl_score
from kernelvault.rl.reward_service import RemoteVerifier, RewardService, ServiceConfig
from kernelvault.rl.verifiers import verdict_source, verdict_source_from_env
from kernelvault.toolchain.lane_pool import verify_once
from kernelvault.toolchain.tasks import load_task_file
from kernelvault.toolchain.verify import Verifier, VerifyConfig

ROOT = Path(__file__).resolve().parents[1]
EXAMPLES = ROOT / "examples" / "triton"
RELU = load_task_file(ROOT / "tasks" / "relu.py")
SILU = load_task_file(ROOT / "tasks" / "silu.py")


@pytest.fixture(scope="module")
def service() -> Iterator[tuple[str, RewardService]]:
    verifier = Verifier(VerifyConfig(platform="cpu", timeout_s=120))
    environment = {"platform": "cpu", "device": verifier.choice.device, "arch": verifier.choice.arch}
    running = RewardService(
        functools.partial(verify_once, verifier), environment, ServiceConfig(port=0, workers=2)
    )
    url = running.start()
    yield url, running
    running.stop()


def post(url: str, body: dict, token: str | None = None) -> tuple[int, dict]:
    headers = {"Content-Type": "application/json", **({"Authorization": f"Bearer {token}"} if token else {})}
    request = urllib.request.Request(url, data=json.dumps(body).encode(), headers=headers, method="POST")
    try:
        with urllib.request.urlopen(request, timeout=60) as response:
            return response.status, json.loads(response.read())
    except urllib.error.HTTPError as error:
        return error.code, json.loads(error.read())


def test_remote_verifier_returns_the_toolchains_verdict(service: tuple[str, RewardService]) -> None:
    url, _ = service
    remote = RemoteVerifier(url, poll_s=1.0)
    answer = f"```python\n{(EXAMPLES / 'relu.py').read_text()}```"
    verdict = remote.verify(RELU, Candidate(RELU.task_id, "triton", answer, "model:test"))
    assert (
        verdict.correct is True and verdict.reward is not None and verdict.reward.total == pytest.approx(1.4)
    )
    assert verdict.environment is not None and verdict.environment.platform == "cpu"
    source = verdict_source(url)
    assert source.platform == "cpu" and "reward service" in source.description


def test_jobs_queue_and_long_poll(service: tuple[str, RewardService]) -> None:
    url, running = service
    jobs = []
    for index in range(6):  # parse errors and static rejects: real toolchain stages that need no worker
        text = "no code" if index % 2 else (EXAMPLES / "broken" / "static_reject__relu.py").read_text()
        status, state = post(f"{url}/v1/jobs", {"task": {"source": SILU.source, "name": "silu"},
                                                "candidate": {"text": text, "target": "triton"}})  # fmt: skip
        assert status == 202 and state["status"] in ("queued", "running", "done")
        jobs.append(state["id"])
    kinds = []
    for job in jobs:
        with urllib.request.urlopen(f"{url}/v1/jobs/{job}?wait=30", timeout=60) as response:
            state = json.loads(response.read())
        assert state["status"] == "done"
        kinds.append(state["verdict"]["failure_kind"])
    assert kinds == ["static_reject", "parse_error"] * 3
    with urllib.request.urlopen(f"{url}/v1/health", timeout=10) as response:
        health = json.loads(response.read())
    assert health["platform"] == "cpu" and health["workers"] == 2 and health["done"] >= 6
    status, state = post(f"{url}/v1/verify", {"task": {"source": "not python ("}, "candidate": {"text": "x"}})
    assert status == 400 and "invalid task" in state["error"]
    assert post(f"{url}/v1/verify", {"candidate": {"text": "x"}})[0] == 400
    assert running.job("no-such-job") is None


def test_verl_compute_score_through_the_service(
    service: tuple[str, RewardService], monkeypatch: pytest.MonkeyPatch
) -> None:
    url, _ = service
    monkeypatch.setenv("KV_REWARD_URL", url)
    verdict_source_from_env.cache_clear()
    try:
        score = verl_score.compute_score("kernelvault/triton", "no code", SILU.source, {"task_name": "silu"})
    finally:
        verdict_source_from_env.cache_clear()
    assert score["score"] == 0.0 and score["parsed"] == 0.0


def test_token_is_required_when_set() -> None:
    calls = []

    def verify(task: Task, candidate: Candidate) -> Verdict:
        calls.append(candidate.text)
        return verify_once(Verifier(VerifyConfig(platform="cpu")), task, candidate)

    guarded = RewardService(verify, {"platform": "cpu"}, ServiceConfig(port=0, workers=1, token="s3cret"))
    url = guarded.start()
    try:
        body = {"task": {"source": RELU.source}, "candidate": {"text": "no code"}}
        assert post(f"{url}/v1/verify", body)[0] == 401
        assert post(f"{url}/v1/verify", body, token="wrong")[0] == 401
        status, state = post(f"{url}/v1/verify", body, token="s3cret")
        assert status == 200 and state["verdict"]["failure_kind"] == "parse_error"
        verdict = RemoteVerifier(url, token="s3cret").verify(
            RELU, Candidate(RELU.task_id, "triton", "no code", "t")
        )
        assert verdict.failure_kind == "parse_error" and len(calls) == 2
    finally:
        guarded.stop()


def test_client_retries_transport_errors_then_gives_up() -> None:
    # Nothing listens on this port at first; a server appears there while the client backs off.
    probe = RewardService(lambda t, c: None, {}, ServiceConfig(port=0, workers=1))  # type: ignore[arg-type, return-value]
    port = int(probe.start().rsplit(":", 1)[1])
    probe.stop()
    dead = RemoteVerifier(f"http://127.0.0.1:{port}", attempts=2, backoff_max_s=0.05)
    started = time.monotonic()
    with pytest.raises(urllib.error.URLError):
        dead.health()
    assert time.monotonic() - started < 5

    late = RewardService(lambda t, c: None, {"platform": "cpu"}, ServiceConfig(port=port, workers=1))  # type: ignore[arg-type, return-value]
    timer = threading.Timer(0.3, late.start)
    timer.start()
    try:
        assert (
            RemoteVerifier(f"http://127.0.0.1:{port}", attempts=30, backoff_max_s=0.2).health()["platform"]
            == "cpu"
        )
    finally:
        timer.join()
        late.stop()


def test_rl_serve_logs_one_line_per_request_and_stops_with_130_at_ctrl_c() -> None:
    """`kernelvault rl serve` as an operator runs it: each request is one line on stderr (method, path, status,
    candidates, seconds), and Ctrl-C stops it at once with 130, a verification in progress included."""
    command = [sys.executable, "-m", "kernelvault.cli", "rl", "serve", "--port", "0", "--platform", "cpu",
               "--timeout", "60"]  # fmt: skip
    # A machine without a jail serves unjailed only when asked; one with a jail uses it either way.
    env = {**os.environ, "KV_ALLOW_UNJAILED": "1"}
    server = subprocess.Popen(command, cwd=ROOT, env=env, stdout=subprocess.PIPE, stderr=subprocess.PIPE,
                              text=True, start_new_session=True)  # fmt: skip
    try:
        banner = server.stdout.readline()  # type: ignore[union-attr]
        url = banner.split("reward service at ", 1)[1].split()[0]
        with urllib.request.urlopen(f"{url}/v1/health", timeout=30) as response:
            assert response.status == 200
        body = {"task": {"source": SILU.source, "name": "silu"}, "candidate": {"text": "no code"}}
        assert post(f"{url}/v1/verify", body)[0] == 200
        hanging = (EXAMPLES / "broken" / "timeout__relu.py").read_text()
        status, _ = post(f"{url}/v1/jobs", {"task": {"source": RELU.source}, "candidate": {"text": hanging}})
        assert status == 202
        time.sleep(3.0)  # its lane starts its workers and runs it
        signalled = time.monotonic()
        os.killpg(server.pid, signal.SIGINT)
        _, stderr = server.communicate(timeout=60)
    finally:
        if server.poll() is None:
            os.killpg(server.pid, signal.SIGKILL)
    assert time.monotonic() - signalled < 10 and server.returncode == 130, stderr
    assert re.search(r"GET /v1/health 200 0 candidate\(s\) \d+\.\d\d s", stderr), stderr
    assert re.search(r"POST /v1/verify 200 1 candidate\(s\) \d+\.\d\d s", stderr), stderr
    assert re.search(r"POST /v1/jobs 202 1 candidate\(s\) \d+\.\d\d s", stderr), stderr

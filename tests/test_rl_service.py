"""The reward service over real HTTP on localhost: job queue, long polls, the client, tokens, verl through it."""

from __future__ import annotations

import functools
import http.client
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


class GatedVerify:
    """A verify function that waits for `gate` and records the order and overlap of its calls."""

    def __init__(self) -> None:
        self.gate = threading.Event()
        self.started: list[str] = []
        self.running = 0
        self.most_running = 0
        self.lock = threading.Lock()

    def __call__(self, task: Task, candidate: Candidate) -> Verdict:
        with self.lock:
            self.started.append(candidate.text)
            self.running += 1
            self.most_running = max(self.most_running, self.running)
        try:
            self.gate.wait(30)
            if candidate.text == "boom":
                raise RuntimeError("the harness broke")
            return Verdict(task.task_id, "triton", "", "", False, False, "parse_error", "no code", ())
        finally:
            with self.lock:
                self.running -= 1


def get(url: str) -> tuple[int, dict]:
    try:
        with urllib.request.urlopen(url, timeout=60) as response:
            return response.status, json.loads(response.read())
    except urllib.error.HTTPError as error:
        return error.code, json.loads(error.read())


def job_body(text: str) -> dict:
    return {"task": {"source": RELU.source, "name": "relu"}, "candidate": {"text": text}}


def test_jobs_are_verified_in_order_and_long_polls_time_out() -> None:
    gated = GatedVerify()
    running = RewardService(gated, {"platform": "cpu"}, ServiceConfig(port=0, workers=1, max_wait_s=0.5))
    url = running.start()
    try:
        ids = [post(f"{url}/v1/jobs", job_body(f"answer {index}"))[1]["id"] for index in range(5)]
        while not gated.started:
            time.sleep(0.01)
        health = get(f"{url}/v1/health")[1]
        waited = time.monotonic()
        status, polled = get(f"{url}/v1/jobs/{ids[-1]}?wait=30")  # capped at max_wait_s
        waited = time.monotonic() - waited
        gated.gate.set()
        states = [get(f"{url}/v1/jobs/{job}?wait=30")[1] for job in ids]
        failed = post(f"{url}/v1/verify", job_body("boom"))
    finally:
        running.stop()
    assert (health["queued"], health["running"], health["done"]) == (4, 1, 0)
    assert status == 200 and polled == {"id": ids[-1], "status": "queued"}
    assert 0.4 <= waited < 5, waited
    assert gated.started[:5] == [f"answer {index}" for index in range(5)]  # first come, first verified
    assert [state["status"] for state in states] == ["done"] * 5
    assert states[0]["verdict"]["failure_kind"] == "parse_error" and "error" not in states[0]
    error = {"id": failed[1]["id"], "status": "failed", "error": "RuntimeError: the harness broke"}
    assert failed == (200, error)


def test_the_workers_verify_that_many_jobs_at_once_never_more() -> None:
    gated = GatedVerify()
    running = RewardService(gated, {"platform": "cpu"}, ServiceConfig(port=0, workers=2))
    url = running.start()
    try:
        ids = [post(f"{url}/v1/jobs", job_body(f"answer {index}"))[1]["id"] for index in range(6)]
        while len(gated.started) < 2:
            time.sleep(0.01)
        time.sleep(0.2)  # time for a third to start, were the limit not kept
        health = get(f"{url}/v1/health")[1]
        gated.gate.set()
        states = [get(f"{url}/v1/jobs/{job}?wait=30")[1]["status"] for job in ids]
    finally:
        running.stop()
    assert (health["queued"], health["running"]) == (4, 2) and gated.most_running == 2
    assert states == ["done"] * 6


def test_bad_requests_are_one_line_errors_and_openapi_lists_the_routes() -> None:
    running = RewardService(
        GatedVerify(), {"platform": "cpu"}, ServiceConfig(port=0, workers=1, max_body_bytes=4096)
    )
    url = running.start()
    try:
        target = post(f"{url}/v1/jobs", {**job_body("x"), "candidate": {"text": "x", "target": "cuda"}})
        not_json = urllib.request.Request(
            f"{url}/v1/jobs", data=b"{oops", headers={"Content-Type": "application/json"}, method="POST"
        )
        try:
            urllib.request.urlopen(not_json, timeout=10)
        except urllib.error.HTTPError as error:
            not_json_error = (error.code, json.loads(error.read()))
        too_big = post(f"{url}/v1/jobs", job_body("x" * 5000))
        connection = http.client.HTTPConnection(url.removeprefix("http://"), timeout=10)
        connection.request("POST", "/v1/jobs", body=iter([json.dumps(job_body("x" * 5000)).encode()]),
                           encode_chunked=True, headers={"Transfer-Encoding": "chunked"})  # fmt: skip
        answer = connection.getresponse()
        too_big_chunked = (answer.status, json.loads(answer.read()))
        connection.close()
        unknown = get(f"{url}/v1/jobs/nope")
        bad_wait = get(f"{url}/v1/jobs/nope?wait=soon")
        schema = get(f"{url}/openapi.json")[1]
    finally:
        running.stop()
    assert target[0] == 400 and target[1]["error"] == "candidate.target: Input should be 'triton' or 'hip'"
    assert not_json_error[0] == 400 and not_json_error[1]["error"].startswith("the body is not JSON")
    # over the limit by its Content-Length, or by the bytes counted of a chunked body
    assert too_big == too_big_chunked == (413, {"error": "the body is over 4096 bytes"})
    assert unknown == (404, {"error": "no such job (finished jobs are kept for a while, then dropped)"})
    assert bad_wait[0] == 400 and bad_wait[1]["error"].startswith(
        "query.wait: Input should be a valid number"
    )
    errors = [body["error"] for _, body in (target, not_json_error, too_big, unknown, bad_wait)]
    assert all("\n" not in error for error in errors)
    assert set(schema["paths"]) == {"/v1/jobs", "/v1/jobs/{job_id}", "/v1/verify", "/v1/health"}
    assert schema["components"]["securitySchemes"]["HTTPBearer"]["scheme"] == "bearer"
    assert set(schema["paths"]["/v1/jobs"]["post"]["responses"]) == {"202", "4XX"}


def test_a_stop_cuts_off_waiting_clients_at_once() -> None:
    gated = GatedVerify()
    running = RewardService(gated, {"platform": "cpu"}, ServiceConfig(port=0, workers=1))
    url = running.start()
    outcome: list[BaseException] = []

    def verify_and_wait() -> None:
        try:
            post(f"{url}/v1/verify", job_body("slow"))
        except OSError as error:  # the connection closed unanswered
            outcome.append(error)

    caller = threading.Thread(target=verify_and_wait)
    caller.start()
    while not gated.started:
        time.sleep(0.01)
    started = time.monotonic()
    running.stop()
    stopped_in = time.monotonic() - started
    caller.join(timeout=10)
    gated.gate.set()  # the verification still running ends on its own
    assert stopped_in < 1.0 and outcome and not caller.is_alive(), (stopped_in, outcome)


def test_rl_serve_logs_one_line_per_request_and_stops_with_130_at_ctrl_c() -> None:
    """`kernelvault rl serve` as an operator runs it: each request is one line on stderr (method, path, status,
    seconds), and Ctrl-C stops it at once with 130, a verification in progress included."""
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
    assert re.search(r"GET /v1/health 200 \d+\.\d+s", stderr), stderr
    assert re.search(r"POST /v1/verify 200 \d+\.\d+s", stderr), stderr
    assert re.search(r"POST /v1/jobs 202 \d+\.\d+s", stderr), stderr

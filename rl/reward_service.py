"""The reward service: the toolchain behind a small HTTP server with a job queue, for remote trainers.

A GRPO run on many GPUs (verl across nodes, or TRL on a training box without spare GPUs) sends each
completion here and gets the toolchain's `Verdict` back, reward included. The server is the standard
library's threading HTTP server in front of a FIFO queue drained by `workers` threads, each calling the
toolchain's `verify` (which runs the candidate in a sandboxed worker process, one GPU worker per device).

    POST /v1/jobs          {"task": {"source", "name"}, "candidate": {"text", "target"}} → 202 {"id", "status"}
    GET  /v1/jobs/ID?wait=S                → {"id", "status": queued|running|done|failed, "verdict"?, "error"?}
                                             (waits up to S seconds for the job to finish: a long poll)
    POST /v1/verify        the same body   → {"id", "status": "done", "verdict"} once verified
    GET  /v1/health                        → {"platform", "device", "arch", "workers", "queued", "running", "done",
                                              "lanes": {"DEVICE#INDEX": device stages finished}}

`RemoteVerifier(url).verify(task, candidate)` is the client: the same signature as `LanePool.verify`, so
the TRL reward functions, the rollouts and verl's `compute_score` take either. Transport failures are
retried with backoff (tenacity, the one retry layer); a verdict is never invented on the client side.

What it does not protect against: it executes whatever code it is sent (inside the toolchain's sandbox),
so anyone who can reach the port can use its machines. It binds to 127.0.0.1 by default; on a cluster,
bind to the private network and set a shared token (`--token` / KV_REWARD_TOKEN, sent as a Bearer header).
There is no TLS. Finished jobs are kept in memory (the newest `keep_results`) and lost on restart.
"""

from __future__ import annotations

import hmac
import http.client
import itertools
import json
import logging
import queue
import secrets
import threading
import time
import urllib.error
import urllib.request
from collections import OrderedDict
from collections.abc import Callable
from dataclasses import dataclass, field
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from typing import Any
from urllib.parse import parse_qs, urlsplit

from kernelvault.contracts import TARGETS, Candidate, Task, Verdict, verdict_from_dict
from kernelvault.http_json import send_json
from kernelvault.rl.rewards import TaskBook, VerifyFunction
from kernelvault.toolchain.tasks import TaskFormatError

TOKEN_ENV = "KV_REWARD_TOKEN"
LOG = logging.getLogger(__name__)  # one line per request; `kernelvault rl serve` sends it to stderr


@dataclass(frozen=True)
class ServiceConfig:
    host: str = "127.0.0.1"
    port: int = 8900  # 0: any free port (tests)
    workers: int = 2  # verifications at once
    token: str | None = None  # shared secret; None: no authentication
    max_body_bytes: int = 4 << 20
    keep_results: int = 10_000  # finished jobs kept for polling
    max_wait_s: float = 60.0  # longest long poll


@dataclass
class Job:
    id: str
    task: Task
    candidate: Candidate
    status: str = "queued"  # queued → running → done | failed
    verdict: Verdict | None = None
    error: str | None = None
    done: threading.Event = field(default_factory=threading.Event)

    def as_json(self) -> dict[str, Any]:
        state: dict[str, Any] = {"id": self.id, "status": self.status}
        if self.verdict is not None:
            state["verdict"] = self.verdict.to_dict()
        if self.error is not None:
            state["error"] = self.error
        return state


class RewardService:
    """The job queue and its HTTP front; `start()` serves in a background thread and returns the URL."""

    def __init__(self, verify: VerifyFunction, environment: dict[str, str], config: ServiceConfig,
                 lane_jobs: Callable[[], dict[str, int]] | None = None) -> None:  # fmt: skip
        self.verify = verify
        self.lane_jobs = lane_jobs  # the lane pool's jobs per lane, for /v1/health
        self.environment = environment
        self.config = config
        self.tasks = TaskBook()
        self.queue: queue.Queue[Job | None] = queue.Queue()
        self.jobs: OrderedDict[str, Job] = OrderedDict()
        self.lock = threading.Lock()
        self.counter = itertools.count()
        self.finished = 0
        self.server: ThreadingHTTPServer | None = None
        self.threads: list[threading.Thread] = []

    def submit(self, payload: dict[str, Any]) -> Job:
        """Queue one verification; raises ValueError for a malformed request or task (answered with 400)."""
        try:
            task_part, candidate_part = payload["task"], payload["candidate"]
            source, text = task_part["source"], candidate_part["text"]
        except (KeyError, TypeError):
            raise ValueError(
                'the body must be {"task": {"source", "name"}, "candidate": {"text", "target"}}'
            ) from None
        target = candidate_part.get("target", "triton")
        if target not in TARGETS:
            raise ValueError(f"target must be one of {', '.join(TARGETS)} (got {target!r})")
        try:
            task = self.tasks.get(source, task_part.get("name"))
        except TaskFormatError as error:
            raise ValueError(f"invalid task: {error}") from None
        origin = str(candidate_part.get("origin") or "remote")
        job = Job(
            f"{next(self.counter)}-{secrets.token_hex(6)}",
            task,
            Candidate(task.task_id, target, text, origin),
        )
        with self.lock:
            self.jobs[job.id] = job
        self.queue.put(job)
        return job

    def job(self, job_id: str) -> Job | None:
        with self.lock:
            return self.jobs.get(job_id)

    def health(self) -> dict[str, Any]:
        with self.lock:
            states = [job.status for job in self.jobs.values()]
        lanes = {"lanes": self.lane_jobs()} if self.lane_jobs is not None else {}
        return {**self.environment, "workers": self.config.workers, "queued": states.count("queued"),
                "running": states.count("running"), "done": self.finished, **lanes}  # fmt: skip

    def _work(self) -> None:
        while (job := self.queue.get()) is not None:
            job.status = "running"
            try:
                job.verdict = self.verify(job.task, job.candidate)
                job.status = "done"
            except Exception as error:  # noqa: BLE001 - a harness bug fails this job, not the service
                job.status, job.error = "failed", f"{type(error).__name__}: {error}"
            job.done.set()
            with self.lock:
                self.finished += 1
                finished = [key for key, item in self.jobs.items() if item.done.is_set()]
                for key in finished[: max(0, len(finished) - self.config.keep_results)]:
                    del self.jobs[key]

    def start(self) -> str:
        self.server = ThreadingHTTPServer((self.config.host, self.config.port), _handler(self))
        self.server.daemon_threads = True
        self.threads = [threading.Thread(target=self._work, daemon=True) for _ in range(self.config.workers)]
        self.threads.append(threading.Thread(target=self.server.serve_forever, daemon=True))
        for thread in self.threads:
            thread.start()
        host, port = self.server.server_address[:2]
        return f"http://{host}:{port}"

    def stop(self) -> None:
        if self.server is not None:
            self.server.shutdown()
            self.server.server_close()
        for _ in range(self.config.workers):
            self.queue.put(None)


def _handler(service: RewardService) -> type[BaseHTTPRequestHandler]:
    class Handler(BaseHTTPRequestHandler):
        protocol_version = "HTTP/1.1"

        started = 0.0  # when this request's handling began (do_GET / do_POST)
        candidates = 0  # candidates the request submitted

        def log_message(self, *args: Any) -> None:
            pass  # http.server's own line; `_send` logs each request once, with what a trainer's operator needs

        def _send(self, status: int, payload: dict[str, Any]) -> None:
            send_json(self, status, payload)
            LOG.info("%s %s %d %d candidate(s) %.2f s", self.command, urlsplit(self.path).path, status,
                     self.candidates, time.monotonic() - self.started)  # fmt: skip

        def _authorised(self) -> bool:
            token = service.config.token
            if not token:
                return True
            given = self.headers.get("Authorization", "")
            if hmac.compare_digest(given.encode(), f"Bearer {token}".encode()):
                return True
            self._send(401, {"error": "missing or wrong bearer token"})
            return False

        def do_GET(self) -> None:  # noqa: N802 - http.server's naming
            self.started, self.candidates = time.monotonic(), 0
            if not self._authorised():
                return
            url = urlsplit(self.path)
            if url.path == "/v1/health":
                self._send(200, service.health())
                return
            if url.path.startswith("/v1/jobs/"):
                job = service.job(url.path.removeprefix("/v1/jobs/"))
                if job is None:
                    self._send(
                        404, {"error": "no such job (finished jobs are kept for a while, then dropped)"}
                    )
                    return
                wait = parse_qs(url.query).get("wait", ["0"])[0]
                try:
                    job.done.wait(min(max(0.0, float(wait)), service.config.max_wait_s))
                except ValueError:
                    pass
                self._send(200, job.as_json())
                return
            self._send(404, {"error": f"no route {url.path}"})

        def do_POST(self) -> None:  # noqa: N802
            self.started, self.candidates = time.monotonic(), 0
            if not self._authorised():
                return
            length = int(self.headers.get("Content-Length") or 0)
            if length > service.config.max_body_bytes:
                self._send(413, {"error": f"body over {service.config.max_body_bytes} bytes"})
                return
            try:
                payload = json.loads(self.rfile.read(length) or b"{}")
                route = urlsplit(self.path).path
                if route not in ("/v1/jobs", "/v1/verify"):
                    self._send(404, {"error": f"no route {route}"})
                    return
                job = service.submit(payload)
                self.candidates = 1
            except (ValueError, UnicodeDecodeError) as error:  # JSONDecodeError is a ValueError
                self._send(400, {"error": str(error)})
                return
            if route == "/v1/jobs":
                self._send(202, job.as_json())
                return
            job.done.wait()
            self._send(200, job.as_json())

    return Handler


def _transient(error: BaseException) -> bool:
    if isinstance(error, urllib.error.HTTPError):
        return error.code >= 500 or error.code == 429
    return isinstance(
        error, (urllib.error.URLError, http.client.HTTPException, ConnectionError, TimeoutError)
    )


class RemoteVerifier:
    """`verify(task, candidate) -> Verdict` through a reward service: submit, then long-poll."""

    def __init__(self, url: str, token: str | None = None, timeout_s: float = 1800.0, poll_s: float = 30.0,
                 attempts: int = 6, backoff_max_s: float = 30.0) -> None:  # fmt: skip
        self.url = url.rstrip("/")
        self.token = token
        self.timeout_s = timeout_s
        self.poll_s = poll_s
        self.attempts = attempts
        self.backoff_max_s = backoff_max_s

    def _call(
        self, method: str, path: str, body: dict[str, Any] | None = None, wait_s: float = 0.0
    ) -> dict[str, Any]:
        from tenacity import Retrying, retry_if_exception, stop_after_attempt, wait_random_exponential

        data = json.dumps(body).encode() if body is not None else None
        headers = {"Content-Type": "application/json"}
        if self.token:
            headers["Authorization"] = f"Bearer {self.token}"
        for attempt in Retrying(retry=retry_if_exception(_transient), stop=stop_after_attempt(self.attempts),
                                wait=wait_random_exponential(multiplier=0.5, max=self.backoff_max_s), reraise=True):  # fmt: skip
            with attempt:
                request = urllib.request.Request(self.url + path, data=data, headers=headers, method=method)
                try:
                    with urllib.request.urlopen(request, timeout=wait_s + 60.0) as response:
                        return json.loads(response.read())
                except urllib.error.HTTPError as error:
                    if _transient(error):
                        raise
                    detail = error.read().decode(errors="replace")[:300]
                    raise RuntimeError(
                        f"reward service {self.url} refused {method} {path}: {error.code} {detail}"
                    ) from None
        raise AssertionError("unreachable: tenacity reraises")

    def health(self) -> dict[str, Any]:
        return self._call("GET", "/v1/health")

    def verify(self, task: Task, candidate: Candidate) -> Verdict:
        body = {"task": {"source": task.source, "name": task.name},
                "candidate": {"text": candidate.text, "target": candidate.target, "origin": candidate.origin}}  # fmt: skip
        state = self._call("POST", "/v1/jobs", body)
        deadline = time.monotonic() + self.timeout_s
        while state["status"] not in ("done", "failed"):
            if time.monotonic() > deadline:
                raise TimeoutError(f"reward service job {state['id']} not done after {self.timeout_s:.0f} s")
            state = self._call("GET", f"/v1/jobs/{state['id']}?wait={self.poll_s:g}", wait_s=self.poll_s)
        if state["status"] == "failed":
            raise RuntimeError(f"reward service could not verify: {state.get('error')}")
        verdict = verdict_from_dict(state["verdict"])
        if verdict.task_id != task.task_id:  # the service parsed a different program: never score it
            raise RuntimeError(f"reward service verified task {verdict.task_id}, expected {task.task_id}")
        return verdict

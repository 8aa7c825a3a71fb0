"""The reward service: the toolchain behind a small HTTP API with a job queue, for remote trainers.

A GRPO run on many GPUs (verl across nodes, or TRL on a training box without spare GPUs) sends each
completion here and gets the toolchain's `Verdict` back, reward included. The API is a FastAPI app on uvicorn
(kernelvault/http_json.py). Jobs are verified first come, first served by a pool of `workers` threads, each
calling the toolchain's `verify` (which runs the candidate in a sandboxed worker process, one GPU worker per
device); nothing is batched. The HTTP side is asyncio: a job is a future of that pool, and a long poll is a
wait on the job's event with a timeout, so waiting clients hold no thread.

    POST /v1/jobs          {"task": {"source", "name"}, "candidate": {"text", "target"}} → 202 {"id", "status"}
    GET  /v1/jobs/ID?wait=S                → {"id", "status": queued|running|done|failed, "verdict"?, "error"?}
                                             (waits up to S seconds, at most max_wait_s, for the job to finish)
    POST /v1/verify        the same body   → {"id", "status": "done", "verdict"} once verified
    GET  /v1/health                        → {"platform", "device", "arch", "workers", "queued", "running", "done",
                                              "lanes": {"DEVICE#INDEX": device stages finished}}
    GET  /openapi.json, /docs              the schema of the above (no token needed)

Errors are one line, `{"error": "..."}`: 400 for a body that does not fit (`task.source: Field required`) or a
task program that does not parse, 401 without the token, 404 for an unknown (or forgotten) job, 413 for a body
over `max_body_bytes`. Each request is one line on the `kernelvault.http` log.

`RemoteVerifier(url).verify(task, candidate)` is the client: the same signature as `LanePool.verify`, so
the TRL reward functions, the rollouts and verl's `compute_score` take either. Transport failures are
retried with backoff (tenacity, the one retry layer); a verdict is never invented on the client side.

What it does not protect against: it executes whatever code it is sent (inside the toolchain's sandbox),
so anyone who can reach the port can use its machines. It binds to 127.0.0.1 by default; on a cluster,
bind to the private network and set a shared token (`--token` / KV_REWARD_TOKEN, sent as a Bearer header).
There is no TLS. Finished jobs are kept in memory (the newest `keep_results`) and lost on restart; a stop
cuts off the requests in flight (a client's retry submits its job again) and lets running verifications end.
"""

from __future__ import annotations

import asyncio
import contextlib
import functools
import hmac
import http.client
import itertools
import json
import secrets
import time
import urllib.error
import urllib.request
from collections import OrderedDict
from collections.abc import Callable
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass, field
from typing import Annotated, Any, Literal

from fastapi import APIRouter, Depends, FastAPI, HTTPException
from fastapi.security import HTTPAuthorizationCredentials, HTTPBearer
from pydantic import BaseModel

from kernelvault.contracts import TARGETS, Candidate, Task, Verdict, verdict_from_dict
from kernelvault.http_json import ThreadedServer, json_app
from kernelvault.rl.rewards import TaskBook, VerifyFunction
from kernelvault.toolchain.tasks import TaskFormatError

TOKEN_ENV = "KV_REWARD_TOKEN"
BEARER = HTTPBearer(auto_error=False)  # the Authorization header, read by `authorised` (and shown in /docs)


@dataclass(frozen=True)
class ServiceConfig:
    host: str = "127.0.0.1"
    port: int = 8900  # 0: any free port (tests)
    workers: int = 2  # verifications at once
    token: str | None = None  # shared secret; None: no authentication
    max_body_bytes: int = 4 << 20
    keep_results: int = 10_000  # finished jobs kept for polling
    max_wait_s: float = 60.0  # longest long poll


class TaskPart(BaseModel):
    source: str  # the task program (a reference implementation and its inputs)
    name: str | None = None


class CandidatePart(BaseModel):
    text: str  # the model's answer, code fences and all
    target: Literal[TARGETS] = "triton"  # type: ignore[valid-type]
    origin: str | None = None


class JobRequest(BaseModel):
    task: TaskPart
    candidate: CandidatePart


class JobState(BaseModel):
    id: str
    status: Literal["queued", "running", "done", "failed"]
    verdict: dict[str, Any] | None = None  # Verdict.to_dict()
    error: str | None = None


class ServiceError(BaseModel):
    error: str


def _error_body(status: int, message: str) -> dict[str, Any]:
    return {"error": message}


@dataclass
class Job:
    id: str
    task: Task
    candidate: Candidate
    status: str = "queued"  # queued → running → done | failed
    verdict: Verdict | None = None
    error: str | None = None
    done: asyncio.Event = field(default_factory=asyncio.Event)  # set on the server's loop

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
        self.jobs: OrderedDict[str, Job] = OrderedDict()  # changed on the server's loop only
        self.counter = itertools.count()
        self.finished = 0
        self.workers: ThreadPoolExecutor | None = None  # its queue is the job queue: first in, first verified
        self.server: ThreadedServer | None = None

    def submit(self, request: JobRequest) -> Job:
        """Queue one verification (on the server's loop); a task program that does not parse is a 400."""
        try:
            task = self.tasks.get(request.task.source, request.task.name)
        except TaskFormatError as error:
            raise HTTPException(400, f"invalid task: {error}") from None
        part = request.candidate
        job = Job(f"{next(self.counter)}-{secrets.token_hex(6)}", task,
                  Candidate(task.task_id, part.target, part.text, part.origin or "remote"))  # fmt: skip
        self.jobs[job.id] = job
        assert self.workers is not None, "submit runs in a started service"
        verifying = asyncio.get_running_loop().run_in_executor(self.workers, self._verify, job)
        verifying.add_done_callback(functools.partial(self._finish, job))
        return job

    def _verify(self, job: Job) -> Verdict:  # on a worker thread
        job.status = "running"
        return self.verify(job.task, job.candidate)

    def _finish(self, job: Job, verifying: asyncio.Future[Verdict]) -> None:  # on the loop, before any waiter
        if verifying.cancelled():
            job.status, job.error = "failed", "the service stopped before verifying it"
        elif (error := verifying.exception()) is not None:  # a harness bug fails this job, not the service
            job.status, job.error = "failed", f"{type(error).__name__}: {error}"
        else:
            job.status, job.verdict = "done", verifying.result()
        self.finished += 1
        job.done.set()
        finished = [key for key, item in self.jobs.items() if item.done.is_set()]
        for key in finished[: max(0, len(finished) - self.config.keep_results)]:
            del self.jobs[key]

    def job(self, job_id: str) -> Job | None:
        return self.jobs.get(job_id)

    def health(self) -> dict[str, Any]:
        states = [job.status for job in list(self.jobs.values())]
        lanes = {"lanes": self.lane_jobs()} if self.lane_jobs is not None else {}
        return {**self.environment, "workers": self.config.workers, "queued": states.count("queued"),
                "running": states.count("running"), "done": self.finished, **lanes}  # fmt: skip

    def app(self) -> FastAPI:
        app = json_app("KernelVault reward service", _error_body, ServiceError, description=__doc__ or "",
                       max_body_bytes=self.config.max_body_bytes)  # fmt: skip

        async def authorised(
            credentials: Annotated[HTTPAuthorizationCredentials | None, Depends(BEARER)],
        ) -> None:
            token = self.config.token
            given = credentials.credentials if credentials is not None else ""
            if token and not hmac.compare_digest(given.encode(), token.encode()):
                raise HTTPException(401, "missing or wrong bearer token", {"WWW-Authenticate": "Bearer"})

        routes = APIRouter(dependencies=[Depends(authorised)])
        state = {"response_model": JobState, "response_model_exclude_none": True}

        @routes.post("/v1/jobs", status_code=202, **state)
        async def queue_job(request: JobRequest) -> dict[str, Any]:
            return self.submit(request).as_json()

        @routes.get("/v1/jobs/{job_id}", **state)
        async def poll_job(job_id: str, wait: float = 0.0) -> dict[str, Any]:
            job = self.job(job_id)
            if job is None:
                raise HTTPException(404, "no such job (finished jobs are kept for a while, then dropped)")
            with contextlib.suppress(asyncio.TimeoutError):
                await asyncio.wait_for(job.done.wait(), min(max(0.0, wait), self.config.max_wait_s))
            return job.as_json()

        @routes.post("/v1/verify", **state)
        async def verify(request: JobRequest) -> dict[str, Any]:
            job = self.submit(request)
            await job.done.wait()
            return job.as_json()

        @routes.get("/v1/health")
        async def health() -> dict[str, Any]:
            return self.health()

        app.include_router(routes)
        return app

    def start(self) -> str:
        self.server = ThreadedServer(self.app(), self.config.host, self.config.port)  # OSError: port taken
        self.workers = ThreadPoolExecutor(self.config.workers, thread_name_prefix="reward-verify")
        return self.server.start()

    def stop(self) -> None:
        if self.server is not None:
            self.server.stop()
        if self.workers is not None:  # queued jobs are dropped; running verifications end on their own
            self.workers.shutdown(wait=False, cancel_futures=True)


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

"""Worker lanes shared across the test session.

A verdict needs worker processes (a cross-compile worker, a reference and a candidate worker), and a fresh one
imports torch and Triton: seconds of CPU each, on a 2-core CI machine. A test that verifies a candidate on a pool
of one (`verify_once(verifier, task, candidate)`, `tasks check`) starts three of them per verdict. Here it gets
persistent workers instead, from lanes kept for the whole session, one set per
worker configuration (the interpreter, the environment, the limits other than the per-job timeout, the
isolation, the work root and the read-only paths): what a corpus run does with its lanes, so the verdicts are
the ones users get.

Tests about how workers start, die or are limited per process say so with `@pytest.mark.fresh_workers` and keep
the fresh pool of one.
"""

from __future__ import annotations

import dataclasses
import threading
from collections.abc import Iterator
from concurrent.futures import ThreadPoolExecutor
from typing import Any

import pytest

from kernelvault.contracts import Candidate, Task, Verdict
from kernelvault.toolchain.device_gate import DeviceGate
from kernelvault.toolchain.lane_pool import LanePool
from kernelvault.toolchain.sandbox import SandboxLimits
from kernelvault.toolchain.verify import Verifier
from kernelvault.toolchain.worker_jobs import WorkerJob
from kernelvault.toolchain.worker_lane import WorkerLane

# A line when the run has printed nothing for 10 s (`make test`'s slowest tests take minutes).
pytest_plugins = ["heartbeat"]


class OwnedLane:
    """A lane and the one thread that runs its jobs, alive for the session (`LanePool`'s lane threads, the same).

    A sandboxed worker dies with the thread that started it (PR_SET_PDEATHSIG, `kernelvault.toolchain.sandbox`).
    Run on its callers' threads, a lane first used from a short-lived one (asyncio's `to_thread` pool, a reward
    service's workers, a ThreadPoolExecutor) had its workers killed when that thread ended, and the next test that
    took it got `the reference worker failed: (no output)`."""

    def __init__(self, lane: WorkerLane) -> None:
        self.lane = lane
        self.thread = ThreadPoolExecutor(max_workers=1, thread_name_prefix="kv-test-lane")

    def run(self, job: WorkerJob, limits: SandboxLimits,
            env: dict[str, str]) -> tuple[Any, dict[str, Any] | None]:  # fmt: skip
        return self.thread.submit(self.lane.run, job, limits, env).result()

    def close(self) -> None:
        self.thread.submit(self.lane.close).result()
        self.thread.shutdown()


class SharedLanes:
    """Persistent CPU lanes by worker configuration; a lane serves one job at a time (tests that verify from
    several threads get a lane each)."""

    def __init__(self) -> None:
        self.idle: dict[tuple[Any, ...], list[OwnedLane]] = {}
        self.all: list[OwnedLane] = []
        self.lock = threading.Lock()
        self.gate = DeviceGate()  # one CPU: timings never overlap, as on the bare path's lanes

    def run(self, python: str, job: WorkerJob, limits: SandboxLimits,
            env: dict[str, str]) -> tuple[Any, dict[str, Any] | None]:  # fmt: skip
        # The per-job timeout is each request's own; everything else shapes the worker processes themselves.
        key = (python, job.setup, tuple(sorted(env.items())), dataclasses.replace(limits, timeout_s=0.0))
        with self.lock:
            free = self.idle.setdefault(key, [])
            lane = free.pop() if free else None
            if lane is None:
                lane = OwnedLane(WorkerLane(python, "cpu", gate=self.gate))
                self.all.append(lane)
        try:
            return lane.run(job, limits, env)
        finally:
            with self.lock:
                self.idle[key].append(lane)

    def worker_pids(self) -> set[int]:
        """The processes the session's lanes hold now (their workers and spares): alive on purpose."""
        with self.lock:
            workers = [worker for owned in self.all for worker in owned.lane.workers.values()]
        return {pid for worker in workers for pid in (worker.pid, worker.spare_pid) if pid is not None}

    def close(self) -> None:
        for lane in self.all:
            lane.close()


@pytest.fixture(scope="session")
def shared_lanes() -> Iterator[SharedLanes]:
    lanes = SharedLanes()
    yield lanes
    lanes.close()


class SharedPoolOfOne:
    """What `LanePool.once` gives a test: the device stage on the session's lanes instead of a fresh pool of one
    (the same stages, `Verifier.prepare` then `Verifier.complete`, on persistent workers)."""

    def __init__(self, lanes: SharedLanes, verifier: Verifier) -> None:
        self.lanes = lanes
        self.verifier = verifier

    def run(self, job: WorkerJob, limits: SandboxLimits,
            env: dict[str, str]) -> tuple[Any, dict[str, Any] | None]:  # fmt: skip
        return self.lanes.run(self.verifier.config.python, job, limits, env)

    def verify(self, task: Task, candidate: Candidate) -> Verdict:
        return self.verifier.complete(self.verifier.prepare(task, candidate), self)  # type: ignore[arg-type]

    def close(self) -> None:
        pass  # the lanes stay for the session

    def __enter__(self) -> SharedPoolOfOne:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()


@pytest.fixture(autouse=True)
def _verify_on_shared_lanes(request: pytest.FixtureRequest, monkeypatch: pytest.MonkeyPatch) -> None:
    """Give a pool of one (`verify_once`, `tasks check`) the session's lanes on the CPU, unless the test is about
    fresh workers."""
    if request.node.get_closest_marker("fresh_workers") is not None:
        return
    lanes: SharedLanes = request.getfixturevalue("shared_lanes")
    fresh = LanePool.once

    def once(verifier: Verifier) -> Any:
        return SharedPoolOfOne(lanes, verifier) if verifier.choice.platform == "cpu" else fresh(verifier)

    monkeypatch.setattr(LanePool, "once", staticmethod(once))

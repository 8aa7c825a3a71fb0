"""Persistent-worker verification for callers on any thread: the agent job's `asyncio.to_thread` calls.

The corpus job's executor owns its lanes on threads of its own. The agent job verifies from coroutines,
through whichever thread `asyncio.to_thread` picks, and a sandboxed worker dies with the thread that
started it (`kernelvault.toolchain.sandbox`), so a `WorkerLane` cannot follow the calls from thread to thread. Here
each lane lives on one dedicated thread that takes jobs from a queue: the calling thread runs the CPU
stages (parse, static checks, HIP build: `Verifier.prepare`) and waits for a lane to finish the device
stage (`Verifier.complete`) in its long-lived worker, as the corpus job does.
"""

from __future__ import annotations

import queue
import threading
import time
from collections.abc import Sequence
from concurrent.futures import Future
from dataclasses import dataclass
from types import TracebackType

from kernelvault.contracts import Candidate, Task, Verdict
from kernelvault.toolchain.device_worker import WorkerLane
from kernelvault.toolchain.verify import Prepared, Verifier


@dataclass(frozen=True)
class DeviceJob:
    """When one device stage waited and ran (time.monotonic seconds): what bench/gpu_busy.py reads."""

    lane: int
    queued: float
    started: float
    finished: float


class VerifierPool:
    """`verify(task, candidate)` like `Verifier.verify`, finished on one of `lanes` (devices: "cpu" or a GPU id)."""

    def __init__(self, verifier: Verifier, lanes: Sequence[str], restart_every: int = 50) -> None:
        self.verifier = verifier
        self.restart_every = restart_every
        self._jobs: queue.Queue[tuple[Prepared, Future[Verdict], float] | None] = queue.Queue()
        self.timeline: list[DeviceJob] = []  # appended by the lane threads (list.append is atomic)
        self.lanes: list[WorkerLane] = []  # each made and used on its own thread; read here for stats only
        self._threads = [
            threading.Thread(
                target=self._serve, args=(index, device), name=f"kv-verify-{device}-{index}", daemon=True
            )
            for index, device in enumerate(lanes)
        ]
        for thread in self._threads:
            thread.start()

    def _serve(self, index: int, device: str) -> None:
        lane = WorkerLane(self.verifier.config.python, device, self.restart_every)
        self.lanes.append(lane)
        try:
            while (job := self._jobs.get()) is not None:
                prepared, future, queued = job
                if not future.set_running_or_notify_cancel():
                    continue
                started = time.monotonic()
                try:
                    future.set_result(self.verifier.complete(prepared, lane))
                except BaseException as error:  # noqa: BLE001 - the caller gets it, the lane goes on
                    future.set_exception(error)
                self.timeline.append(DeviceJob(index, queued, started, time.monotonic()))
        finally:
            lane.close()

    def verify(self, task: Task, candidate: Candidate) -> Verdict:
        prepared = self.verifier.prepare(task, candidate)
        if prepared.verdict is not None:  # decided before the device (parse, static, compile)
            return prepared.verdict
        future: Future[Verdict] = Future()
        self._jobs.put((prepared, future, time.monotonic()))
        return future.result()

    def close(self) -> None:
        for _ in self._threads:
            self._jobs.put(None)
        for thread in self._threads:
            thread.join()

    def __enter__(self) -> VerifierPool:
        return self

    def __exit__(self, kind: type[BaseException] | None, error: BaseException | None,
                 traceback: TracebackType | None) -> None:  # fmt: skip
        self.close()

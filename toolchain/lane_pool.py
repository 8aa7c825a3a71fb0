"""The one way to run candidates: persistent worker lanes, pinned to devices, shared by every caller.

    caller thread(s) ──verify / averify / submit──► prepare (CPU stages) ──queue──► lane thread ──► WorkerLane
                                                                                  (one per lane)   (device-pinned)

A `LanePool` owns `WorkerLane`s (`kernelvault.toolchain.worker_lane`): a candidate's, a reference's and on
the CPU a cross-compiler's persistent worker, each started with `CUDA_VISIBLE_DEVICES`/`HIP_VISIBLE_DEVICES` set
to its lane's GPU, so a pool over GPUs 0-3 spreads its verifications over all four instead of landing every
one on `cuda:0`. Lanes of one GPU share its gate (`kernelvault.toolchain.device_gate`): their checks overlap,
their timings take turns. A sandboxed worker dies with the thread that started it
(`kernelvault.toolchain.sandbox`), so each lane lives on one dedicated thread that takes prepared jobs from
a queue; callers on any thread (asyncio's `to_thread`, a reward function's threads, an HTTP server's) only
queue work and wait.

Three ways in, one path through:
- `verify(task, candidate)`: blocking, on any thread. The CPU stages (parse, static checks, HIP build:
  `Verifier.prepare`) run on the calling thread, the device stage on a lane (`Verifier.complete`).
- `averify(task, candidate)`: the same from a coroutine; the CPU stages run on the pool's preparers.
- `submit(task, candidate) -> Future[Verdict]` and `collect(futures)`: many at once;
  `submit_prepared(prepared)` for candidates whose CPU stages ran elsewhere (a compile process).

Consumers: the corpus job (its local executor's lanes submit prepared attempts to the job's pool; a Ray
lane actor has a pool of its own), the agent job and `eval`, their Ray actors (a pool of one lane each), the
`verify` command (a pool of one lane), the RL reward (TRL's reward functions and rollout, verl's
`compute_score`, through `kernelvault.rl.verifiers`) and `rl serve`. A single candidate (`verify_once`) and
`tasks check` run on a pool of one. `restart_every=1` is the fresh mode (a new worker per job), a setting of
the same lanes rather than another path.
"""

from __future__ import annotations

import asyncio
import os
import queue
import threading
import time
from collections.abc import Iterable, Sequence
from concurrent.futures import Future, InvalidStateError, ThreadPoolExecutor
from concurrent.futures import TimeoutError as FutureTimeout
from dataclasses import dataclass
from types import TracebackType

from kernelvault.contracts import Candidate, Task, Verdict
from kernelvault.interrupts import raise_if_interrupted
from kernelvault.toolchain.verify import Prepared, Verifier
from kernelvault.toolchain.worker_lane import WorkerLane

CPU_LANES = 2  # the CPU platform's default: a 2-core CI machine keeps one core for the caller


@dataclass(frozen=True)
class DeviceJob:
    """When one device stage waited and ran (time.monotonic seconds): what bench/gpu_busy.py reads."""

    lane: int
    queued: float
    started: float
    finished: float


def check_lanes_per_gpu(lanes_per_gpu: int, executor: str = "local") -> None:
    """Refuse a lane count the executor cannot honour (ValueError, one line)."""
    if lanes_per_gpu < 1:
        raise ValueError(f"--lanes-per-gpu is at least 1, not {lanes_per_gpu}")
    if executor == "ray" and lanes_per_gpu != 1:
        # each Ray actor is its own process: two on one GPU would not share its gate, so they would time
        # side by side
        raise ValueError("--lanes-per-gpu above 1 needs the local executor: Ray runs one actor per GPU")


def parse_devices(devices: str, cpu_lanes: int, gpu_lanes: int = 1) -> tuple[str, ...]:
    """`cpu` → cpu_lanes interpreter lanes; `0,1` → gpu_lanes lanes per GPU (they share the GPU's gate:
    `kernelvault.toolchain.device_gate`, checks side by side, one timing at a time)."""
    if devices.strip() == "cpu":
        return ("cpu",) * max(1, cpu_lanes)
    gpus = tuple(part.strip() for part in devices.split(",") if part.strip())
    if not gpus or not all(part.isdigit() for part in gpus):
        raise ValueError(f"--devices takes `cpu` or GPU indices like `0,1`, not {devices!r}")
    if len(set(gpus)) != len(gpus):
        raise ValueError(
            f"--devices names a GPU twice ({devices!r}): use --lanes-per-gpu for more lanes on one"
        )
    check_lanes_per_gpu(gpu_lanes)
    return tuple(gpu for gpu in gpus for _ in range(gpu_lanes))


def visible_gpus(environ: dict[str, str] | None = None, count: int | None = None) -> tuple[str, ...]:
    """The GPUs this process may use, as the ids a lane pins its workers to.

    Where the process was started with `CUDA_VISIBLE_DEVICES` / `HIP_VISIBLE_DEVICES` (a scheduler's share of
    the node, Ray's, torchrun's), those ids: a lane's worker gets the same variable set to one of them, so it
    must be an id of the node, not an index into the share. Otherwise every GPU the driver counts (`count`:
    torch's count where not given).
    """
    environ = os.environ if environ is None else environ
    for name in ("CUDA_VISIBLE_DEVICES", "HIP_VISIBLE_DEVICES"):
        listed = tuple(part.strip() for part in environ.get(name, "").split(",") if part.strip())
        if listed and all(part.isdigit() for part in listed):
            return listed
    if count is None:
        import torch

        count = torch.cuda.device_count()
    return tuple(str(index) for index in range(count))


def pool_lanes(platform: str, devices: str | None = None, lanes_per_gpu: int = 1,
               cpu_lanes: int = CPU_LANES) -> tuple[str, ...]:  # fmt: skip
    """The lanes of a pool: `cpu_lanes` interpreter lanes on the CPU platform; on a GPU platform
    `lanes_per_gpu` lanes on each of `devices` (`0,1`), or on every visible GPU where none are named.

    GPU ids named on the CPU platform are kept (here and in the corpus job): the jobs run on the CPU, in lanes
    pinned to those ids. That lays out a multi-GPU run on a machine without one; the tests spread lanes over
    fake devices this way.
    """
    if platform == "cpu" and (devices is None or devices.strip() in ("", "all", "cpu")):
        return parse_devices("cpu", cpu_lanes)
    if devices is None or devices.strip() in ("", "all"):
        gpus = visible_gpus()
        if not gpus:
            raise ValueError(f"platform {platform} has no visible GPU to put a lane on")
        devices = ",".join(gpus)
    return parse_devices(devices, cpu_lanes, lanes_per_gpu)


class LanePool:
    """`verify`, `averify` and `submit` over persistent lanes, one thread and one `WorkerLane` each."""

    def __init__(self, verifier: Verifier, lanes: Sequence[str], restart_every: int = 50,
                 preparers: int | None = None) -> None:  # fmt: skip
        if not lanes:
            raise ValueError("a lane pool needs at least one lane")
        self.verifier = verifier
        self.devices = tuple(lanes)
        self.restart_every = restart_every
        self._jobs: queue.Queue[tuple[Prepared, Future[Verdict], float] | None] = queue.Queue()
        # The CPU stages of submitted and awaited jobs, as many as keep the lanes busy.
        self._preparers = ThreadPoolExecutor(preparers or self.slots, thread_name_prefix="kv-prepare")
        self.timeline: list[DeviceJob] = []  # appended by the lane threads (list.append is atomic)
        # Each lane's workers, made and used on its own thread; read here for statistics only.
        self.lanes: list[WorkerLane] = []
        self._closed = False
        # jobs on a lane now (an abandoning close answers them at once)
        self._running: set[Future[Verdict]] = set()
        self._threads = [
            threading.Thread(
                target=self._serve, args=(index, device), name=f"kv-lane-{device}-{index}", daemon=True
            )
            for index, device in enumerate(self.devices)
        ]
        for thread in self._threads:
            thread.start()

    @property
    def slots(self) -> int:
        """Verifications worth keeping in flight: twice the lanes, so that while a lane checks one candidate
        the next one's CPU stages are done and it finds the job waiting."""
        return 2 * len(self.devices)

    @classmethod
    def once(cls, verifier: Verifier) -> LanePool:
        """A pool of one lane on the verifier's first device, in the fresh mode (a new worker per job): the way to
        a single verdict (`verify_once`), and to the few of `tasks check`."""
        return cls(verifier, pool_lanes(verifier.choice.platform, cpu_lanes=1)[:1], restart_every=1)

    @classmethod
    def for_verifier(cls, verifier: Verifier, devices: str | None = None, lanes_per_gpu: int = 1,
                     cpu_lanes: int = CPU_LANES, restart_every: int = 50) -> LanePool:  # fmt: skip
        """Lanes on the verifier's platform: every visible GPU (or `devices`), `lanes_per_gpu` each."""
        lanes = pool_lanes(verifier.choice.platform, devices, lanes_per_gpu, cpu_lanes)
        return cls(verifier, lanes, restart_every)

    def _serve(self, index: int, device: str) -> None:
        # made on this thread, which its workers die with (`kernelvault.toolchain.sandbox`)
        lane = WorkerLane(self.verifier.config.python, device, self.restart_every)
        self.lanes.append(lane)
        try:
            while (job := self._jobs.get()) is not None:
                prepared, future, queued = job
                if not future.set_running_or_notify_cancel():
                    self.verifier.discard(prepared)
                    continue
                started = time.monotonic()
                self._running.add(future)
                try:
                    verdict = self.verifier.complete(prepared, lane)
                except BaseException as error:  # noqa: BLE001 - the caller gets it, the lane goes on
                    _settle(future, error=error)
                else:
                    _settle(future, verdict)
                finally:
                    self._running.discard(future)
                self.timeline.append(DeviceJob(index, queued, started, time.monotonic()))
        finally:
            lane.close()

    def _enqueue(self, task: Task, candidate: Candidate, future: Future[Verdict]) -> None:
        """The CPU stages here, on the calling thread; the device stage queued for a lane."""
        if self._closed:
            raise RuntimeError("the lane pool is closed")
        self._queue_prepared(self.verifier.prepare(task, candidate), future)

    def _queue_prepared(self, prepared: Prepared, future: Future[Verdict]) -> None:
        if prepared.decided is not None:  # decided before the device (parse, static, compile)
            future.set_result(prepared.decided)
            return
        self._jobs.put((prepared, future, time.monotonic()))

    def submit_prepared(self, prepared: Prepared) -> Future[Verdict]:
        """Queue a candidate whose CPU stages ran elsewhere (`Verifier.prepare`, in a compile process)."""
        if self._closed:
            raise RuntimeError("the lane pool is closed")
        future: Future[Verdict] = Future()
        self._queue_prepared(prepared, future)
        return future

    def submit(self, task: Task, candidate: Candidate) -> Future[Verdict]:
        """Queue one verification; its CPU stages run on the pool's preparers. Never blocks."""
        if self._closed:
            raise RuntimeError("the lane pool is closed")
        future: Future[Verdict] = Future()

        def prepare() -> None:
            try:
                self._enqueue(task, candidate, future)
            except BaseException as error:  # noqa: BLE001 - delivered through the future
                if not future.done():
                    future.set_exception(error)

        self._preparers.submit(prepare)
        return future

    def verify(self, task: Task, candidate: Candidate) -> Verdict:
        """One verification, blocking; the CPU stages on the calling thread."""
        future: Future[Verdict] = Future()
        self._enqueue(task, candidate, future)
        return result_of(future)

    async def averify(self, task: Task, candidate: Candidate) -> Verdict:
        """One verification from a coroutine: the event loop is never blocked."""
        return await asyncio.wrap_future(self.submit(task, candidate))

    def lane_jobs(self) -> dict[str, int]:
        """Device stages finished per lane (`device#index`): how the work spread."""
        counts = {f"{device}#{index}": 0 for index, device in enumerate(self.devices)}
        for job in list(self.timeline):
            counts[f"{self.devices[job.lane]}#{job.lane}"] += 1
        return counts

    @staticmethod
    def collect(futures: Iterable[Future[Verdict]]) -> list[Verdict]:
        """The verdicts of submitted jobs, in the order given."""
        return [result_of(future) for future in futures]

    def close(self, abandon: bool = False) -> None:
        """Stop the lanes once every queued job is done, and wait for them.

        `abandon` (a halted run, an exception on its way out): jobs not started are cancelled and their files
        removed, and the lanes are not waited for. A job already on a lane runs on until it ends or the process
        exits; its workers die with the process (`kernelvault.toolchain.sandbox`).
        """
        if self._closed:
            return
        self._closed = True
        # Without `abandon`, what was submitted is queued before the lanes are told to stop.
        self._preparers.shutdown(wait=not abandon, cancel_futures=abandon)
        while abandon:
            try:
                job = self._jobs.get_nowait()
            except queue.Empty:
                break
            if job is not None and job[1].cancel():
                self.verifier.discard(job[0])
        for _ in self._threads:
            self._jobs.put(None)
        if not abandon:
            for thread in self._threads:
                thread.join()
            return
        # Whoever waits on a job still on a lane is answered now (a thread of a service that waits for it would
        # otherwise keep the process from exiting); the lane's own late answer is dropped.
        for future in list(self._running):
            _settle(
                future, error=RuntimeError("the lane pool was closed while this job ran: it was abandoned")
            )

    def __enter__(self) -> LanePool:
        return self

    def __exit__(self, kind: type[BaseException] | None, error: BaseException | None,
                 traceback: TracebackType | None) -> None:  # fmt: skip
        # An exception on its way out (Ctrl-C included) does not wait for the jobs still queued or running.
        self.close(abandon=error is not None)


def _settle(
    future: Future[Verdict], verdict: Verdict | None = None, error: BaseException | None = None
) -> None:
    """Answer a job's future unless it was answered already (an abandoning close answers running jobs first)."""
    try:
        if error is not None:
            future.set_exception(error)
        else:
            future.set_result(verdict)  # type: ignore[arg-type]
    except InvalidStateError:
        pass


def result_of(future: Future[Verdict]) -> Verdict:
    """`future.result()`, in waits of a fraction of a second, between which a Ctrl-C that was swallowed where it
    was raised is raised again (`kernelvault.interrupts`)."""
    while True:
        try:
            return future.result(timeout=0.25)
        except FutureTimeout:
            raise_if_interrupted()  # a Ctrl-C a library's import swallowed (`kernelvault.interrupts`)


def verify_once(verifier: Verifier, task: Task, candidate: Candidate) -> Verdict:
    """One candidate's verdict through a pool of one (`LanePool.once`), closed after: fresh workers, started and
    stopped for it. Many candidates belong on one pool instead."""
    with LanePool.once(verifier) as pool:
        return pool.verify(task, candidate)

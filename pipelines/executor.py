"""LocalExecutor: run a job's stages on one machine.

    source ──► prepare (process pool) ──► device stage (the lane pool: ──► [verified queue] ──► write
    (iterator)   parse, static, compile      one thread and persistent      (this thread)
                                             workers per lane)

The stages are plain callables over picklable values (`kernelvault.pipelines.corpus_stages`); they do not know which
executor runs them: the Ray executor runs the same ones, with a lane actor holding the device stage. The device
stage takes a prepared item and returns a future at once (`DeviceStage.submit`); no executor thread waits on a
lane. Back-pressure: at most 2 items per lane are on the devices and `queue_size` verified items wait for the
writer (a full queue holds up the lane that finished next), and the pool never holds more than
2 × `compile_workers` submissions, so the items in memory at once are bounded by those numbers however long the
source is and however slow the writer.

What it does NOT do: keep the source's order (rows are written as lanes finish), survive its own process
being killed (the run ledger does that; the pool's processes and the lanes' workers die with it), or retry a stage that raises: a stage that raises is a
programming error, stops the run and is re-raised here.
"""

from __future__ import annotations

import multiprocessing
import os
import queue
import threading
import time
from collections.abc import Callable, Iterable
from concurrent.futures import Future, ProcessPoolExecutor
from dataclasses import dataclass, field
from typing import Any, Generic, Protocol, TypeVar

from kernelvault.toolchain.sandbox import die_with_parent

In = TypeVar("In")
Mid = TypeVar("Mid")
Out = TypeVar("Out")
_END = object()  # one per producer: that producer is done


class DeviceStage(Protocol[Mid, Out]):  # type: ignore[misc]
    """The device side of a job: the corpus's `PoolStage` hands prepared items to the lane pool."""

    def submit(self, item: Mid) -> Future[Out]:
        """Queue the item on a lane; returns at once."""
        ...

    def close(self) -> None: ...


@dataclass(frozen=True)
class ExecutorConfig:
    lanes: tuple[str, ...] = (
        "cpu",
    )  # the device stage's lanes (a device id, or "cpu"): 2 items each at most
    compile_workers: int = 1  # processes for the prepare stage; 0: prepare in the feeding thread
    queue_size: int = 4  # items each queue holds before its producer waits


class BoundedQueue(Generic[In]):
    """A queue.Queue that remembers its largest size, and whose waits give up when the run stops."""

    def __init__(self, maxsize: int, stop: threading.Event) -> None:
        self._queue: queue.Queue[Any] = queue.Queue(maxsize)
        self._stop = stop
        self.maxsize = maxsize
        self.high_water = 0

    def put(self, item: Any) -> None:
        while not self._stop.is_set():
            try:
                self._queue.put(item, timeout=0.2)
            except queue.Full:
                continue
            self.high_water = max(self.high_water, self._queue.qsize())
            return

    def get(self) -> Any:
        while not self._stop.is_set():
            try:
                return self._queue.get(timeout=0.2)
            except queue.Empty:
                continue
        return _END


@dataclass
class ExecutorStats:
    submitted: int = 0
    written: int = 0
    prepared_high_water: int = 0
    verified_high_water: int = 0
    pool_high_water: int = 0
    lane_items: dict[str, int] = field(default_factory=dict)  # device jobs per lane (`device#index`)
    # The lanes' worker processes, by kind (candidate, reference, compiler): how often one started, the seconds
    # those starts took (jail, interpreter, device context), and why one was replaced ("kind: reason").
    worker_starts: dict[str, int] = field(default_factory=dict)
    worker_start_seconds: dict[str, float] = field(default_factory=dict)
    worker_restarts: dict[str, int] = field(default_factory=dict)

    def add_workers(self, lanes: Iterable[Any]) -> None:
        """Sum the worker statistics of `WorkerLane`s (`kernelvault.toolchain.worker_lane`)."""
        for lane in lanes:
            for kind, worker in lane.stats().items():
                self.worker_starts[kind] = self.worker_starts.get(kind, 0) + worker.starts
                self.worker_start_seconds[kind] = (
                    self.worker_start_seconds.get(kind, 0.0) + worker.start_seconds
                )
                for reason, count in worker.restarts.items():
                    key = f"{kind}: {reason}"
                    self.worker_restarts[key] = self.worker_restarts.get(key, 0) + count

    def worker_summary(self) -> str:
        """One line: `candidate 12 (40 s), reference 6 (20 s); replaced: candidate: integrity 3`."""
        starts = ", ".join(f"{kind} {count} ({self.worker_start_seconds.get(kind, 0.0):.0f} s)"
                           for kind, count in sorted(self.worker_starts.items()))  # fmt: skip
        restarts = ", ".join(f"{key} {count}" for key, count in sorted(self.worker_restarts.items()))
        return starts + (f"; replaced: {restarts}" if restarts else "")

    def worker_json(self) -> dict[str, Any]:
        return {"starts": self.worker_starts, "start_seconds": self.worker_start_seconds,
                "restarts": self.worker_restarts}  # fmt: skip


class LocalExecutor:
    def __init__(self, config: ExecutorConfig) -> None:
        self.config = config

    def run(self, source: Iterable[In], prepare: Callable[[In], Mid], stage: DeviceStage[Mid, Out],
            write: Callable[[Out], None]) -> ExecutorStats:  # fmt: skip
        """Feed every item of source through prepare, the device stage and write; returns when all are written.
        Closes the stage."""
        config, stats, stop = self.config, ExecutorStats(), threading.Event()
        verified: BoundedQueue[Future[Out]] = BoundedQueue(config.queue_size, stop)
        errors: list[BaseException] = []
        on_devices, unwritten = _Count(), _Count()  # on a lane; not yet in the verified queue
        device_slots = threading.BoundedSemaphore(2 * max(1, len(config.lanes)))

        def fail(error: BaseException) -> None:
            errors.append(error)
            stop.set()

        def finished(future: Future[Out]) -> None:
            # on the lane's thread: a full queue holds that lane until the writer catches up
            on_devices.add(-1)
            device_slots.release()
            verified.put(future)
            unwritten.add(-1)

        def dispatch(item: Mid) -> None:
            while not device_slots.acquire(timeout=0.2):
                if stop.is_set():
                    return
            if stop.is_set():
                device_slots.release()
                return
            unwritten.add(1)
            stats.prepared_high_water = max(stats.prepared_high_water, on_devices.add(1))
            stage.submit(item).add_done_callback(finished)

        def feed() -> None:
            try:
                if config.compile_workers <= 0:
                    for item in source:
                        if stop.is_set():
                            return
                        stats.submitted += 1
                        dispatch(prepare(item))
                else:
                    _feed_pool(source, prepare, dispatch, config, stats, stop, fail)
                unwritten.wait_for_zero(stop)  # the last verdicts are in the queue before its end
            except BaseException as error:  # noqa: BLE001 - re-raised by run()
                fail(error)
            finally:
                verified.put(_END)  # type: ignore[arg-type]

        feeder = threading.Thread(target=feed, name="kv-feed", daemon=True)
        feeder.start()
        try:
            while not stop.is_set():
                future = verified.get()
                if future is _END:
                    break
                write(future.result())  # a stage that raised raises here, on the writer's thread
                stats.written += 1
        except BaseException as error:
            fail(error)
        finally:
            if errors:
                stop.set()
                # A source that waits for verdicts (the agent job's trajectories) would wait for ever now.
                interrupt = getattr(source, "interrupt", None)
                if interrupt is not None:
                    interrupt()
            feeder.join()
            stage.close()
        stats.verified_high_water = verified.high_water
        if errors:
            raise errors[0]
        return stats


class _Count:
    """A counter that a thread can wait on until it is back to zero."""

    def __init__(self) -> None:
        self._value = 0
        self._changed = threading.Condition()

    def add(self, delta: int) -> int:
        with self._changed:
            self._value += delta
            self._changed.notify_all()
            return self._value

    def wait_for_zero(self, stop: threading.Event) -> None:
        with self._changed:
            while self._value and not stop.is_set():
                self._changed.wait(timeout=0.2)


def _feed_pool(source: Iterable[Any], prepare: Callable[[Any], Any], dispatch: Callable[[Any], None],
               config: ExecutorConfig, stats: ExecutorStats, stop: threading.Event,
               fail: Callable[[BaseException], None]) -> None:  # fmt: skip
    """The prepare stage on a process pool: read the source, submit, and hand each result to `dispatch` as it
    finishes.

    The hand-over runs on a thread of its own, so a prepared item reaches the lanes while the source blocks.
    A source may block until earlier items are verified (the agent job's next turn needs this turn's verdict):
    an item held here until the next one arrived would never arrive.
    """
    slots = threading.BoundedSemaphore(2 * config.compile_workers)  # submissions in flight
    finished: queue.Queue[Any] = queue.Queue()  # prepare calls that ended, in the order they ended
    counts = {"outstanding": 0}
    lock = threading.Lock()
    # Threads live in this process: fork would copy their locks. The pool's processes die with this one.
    context = multiprocessing.get_context("spawn")
    pool = ProcessPoolExecutor(config.compile_workers, mp_context=context, initializer=die_with_parent,
                               initargs=(os.getpid(),))  # fmt: skip

    def hand_over() -> None:
        try:
            while (future := finished.get()) is not _END:
                dispatch(future.result())
                with lock:
                    counts["outstanding"] -= 1
                slots.release()
        except BaseException as error:  # noqa: BLE001 - a stage that raised: re-raised by run()
            fail(error)

    mover = threading.Thread(target=hand_over, name="kv-hand-over", daemon=True)
    mover.start()
    try:
        for item in source:
            while not slots.acquire(timeout=0.2):
                if stop.is_set():
                    return
            if stop.is_set():
                return
            stats.submitted += 1
            with lock:
                counts["outstanding"] += 1
                stats.pool_high_water = max(stats.pool_high_water, counts["outstanding"])
            pool.submit(prepare, item).add_done_callback(finished.put)
        while not stop.is_set():  # the source is done: let the last submissions through
            with lock:
                if counts["outstanding"] == 0:
                    break
            time.sleep(0.05)
    except BaseException as error:  # noqa: BLE001 - re-raised by run()
        fail(error)
    finally:
        finished.put(_END)
        mover.join()
        pool.shutdown(wait=True, cancel_futures=True)

"""LocalExecutor: run a job's stages on one machine, connected by bounded queues.

    source ──► prepare (process pool) ──► [prepared queue] ──► lanes (one thread each) ──► [verified queue] ──► write
    (iterator)   parse, static, compile                           persistent workers: N per       (this thread)
                                                                   GPU (default 1), N on cpu

The stages are plain callables over picklable values (`kernelvault.pipelines.corpus_stages`); they do not know which
executor runs them, so a Ray executor can run the same ones as actors later. Back-pressure: each queue
holds at most `queue_size` items and a full queue blocks its producer, and the pool never holds more than
2 × `compile_workers` submissions, so the items in memory at once are bounded by those numbers plus one
per lane, however long the source is and however slow the writer.

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
from concurrent.futures import ProcessPoolExecutor
from dataclasses import dataclass, field
from typing import Any, Generic, Protocol, TypeVar

from kernelvault.toolchain.sandbox import die_with_parent

In = TypeVar("In")
Mid = TypeVar("Mid")
Out = TypeVar("Out")
_END = object()  # one per producer: that producer is done


class DeviceStage(Protocol[Mid, Out]):  # type: ignore[misc]
    """What an executor runs on one device for a job: the corpus's `PoolStage` hands items to the lane pool."""

    def __call__(self, item: Mid) -> Out: ...

    def close(self) -> None: ...


@dataclass(frozen=True)
class ExecutorConfig:
    lanes: tuple[str, ...] = ("cpu",)  # one verification lane per entry: a device id, or "cpu"
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
    lane_items: dict[str, int] = field(default_factory=dict)
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

    def run(self, source: Iterable[In], prepare: Callable[[In], Mid], open_stage: Callable[[str], DeviceStage[Mid, Out]],
            write: Callable[[Out], None]) -> ExecutorStats:  # fmt: skip
        """Feed every item of source through prepare, a lane and write; returns when all are written."""
        config, stats, stop = self.config, ExecutorStats(), threading.Event()
        prepared: BoundedQueue[Mid] = BoundedQueue(config.queue_size, stop)
        verified: BoundedQueue[Out] = BoundedQueue(config.queue_size, stop)
        errors: list[BaseException] = []

        def fail(error: BaseException) -> None:
            errors.append(error)
            stop.set()

        def feed() -> None:
            if config.compile_workers <= 0:
                try:
                    for item in source:
                        if stop.is_set():
                            return
                        stats.submitted += 1
                        prepared.put(prepare(item))
                except BaseException as error:  # noqa: BLE001 - re-raised by run()
                    fail(error)
                finally:
                    for _ in config.lanes:
                        prepared.put(_END)
                return
            _feed_pool(source, prepare, prepared, config, stats, stop, fail)

        def serve(index: int, device: str) -> None:
            name = f"{device}#{index}"
            stats.lane_items[name] = 0
            lane = None
            try:
                lane = open_stage(device)
                while (item := prepared.get()) is not _END:
                    verified.put(lane(item))
                    stats.lane_items[name] += 1
            except BaseException as error:  # noqa: BLE001 - re-raised by run()
                fail(error)
            finally:
                if lane is not None:
                    lane.close()
                verified.put(_END)

        threads = [threading.Thread(target=feed, name="kv-feed", daemon=True)]
        threads += [threading.Thread(target=serve, args=(i, d), name=f"kv-lane-{i}", daemon=True)
                    for i, d in enumerate(config.lanes)]  # fmt: skip
        for thread in threads:
            thread.start()
        finished = 0
        try:
            while finished < len(config.lanes) and not stop.is_set():
                item = verified.get()
                if item is _END:
                    finished += 1
                    continue
                write(item)
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
            for thread in threads:
                thread.join()
        stats.prepared_high_water, stats.verified_high_water = prepared.high_water, verified.high_water
        if errors:
            raise errors[0]
        return stats


def _feed_pool(source: Iterable[Any], prepare: Callable[[Any], Any], prepared: BoundedQueue[Any],
               config: ExecutorConfig, stats: ExecutorStats, stop: threading.Event,
               fail: Callable[[BaseException], None]) -> None:  # fmt: skip
    """The prepare stage on a process pool: read the source, submit, and hand each result over as it finishes.

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
                prepared.put(future.result())
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
        for _ in config.lanes:
            prepared.put(_END)

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

A halt (`run(halt=...)`, set by the first SIGINT/SIGTERM: `kernelvault.pipelines.intake`) stops the run now:
nothing more is read from the source or handed to a lane, compile jobs not started are cancelled, the items on
a lane get `halt_grace_s` to finish and be written, and the rest are abandoned (counted in
`ExecutorStats.abandoned`; the caller's ledger redoes them). The compile processes ignore SIGINT and SIGTERM:
a terminal's Ctrl-C reaches the whole process group, and the run, not each helper, decides what a signal means.

What it does NOT do: keep the source's order (rows are written as lanes finish), survive its own process
being killed (the run ledger does that; the pool's processes and the lanes' workers die with it), or retry a
stage that raises: a stage that raises is a programming error, stops the run and is re-raised here. An
abandoned item's lane job is not interrupted: it runs on until it ends or the process exits, and its workers
die with the process (`kernelvault.toolchain.sandbox`).
"""

from __future__ import annotations

import multiprocessing
import os
import queue
import signal
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
_STOP_SIGNALS = {signal.SIGINT, signal.SIGTERM}


class DeviceStage(Protocol[Mid, Out]):  # type: ignore[misc]
    """The device side of a job: the corpus's `PoolStage` hands prepared items to the lane pool."""

    def submit(self, item: Mid) -> Future[Out]:
        """Queue the item on a lane; returns at once."""
        ...

    def discard(self, item: Mid) -> None:
        """Drop a prepared item that will never reach a lane (a halted run): remove what it holds."""
        ...

    def close(self, abandon: bool = False) -> None:
        """`abandon`: items still queued never start and work on a lane is not waited for."""
        ...


@dataclass(frozen=True)
class ExecutorConfig:
    lanes: tuple[str, ...] = (
        "cpu",
    )  # the device stage's lanes (a device id, or "cpu"): 2 items each at most
    compile_workers: int = 1  # processes for the prepare stage; 0: prepare in the feeding thread
    queue_size: int = 4  # items each queue holds before its producer waits
    # After a halt, how long the items on a lane may take to finish and be written: a verification on a warm
    # CPU lane takes 1-4 s; a signal's exit (writer closed, summary) stays within 10 s.
    halt_grace_s: float = 3.0


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

    def get(self, give_up: Callable[[], bool] = lambda: False) -> Any:
        """The next item; `_END` once the run stops or `give_up()` is true."""
        while not self._stop.is_set() and not give_up():
            try:
                return self._queue.get(timeout=0.2)
            except queue.Empty:
                continue
        return _END


@dataclass
class ExecutorStats:
    submitted: int = 0
    written: int = 0
    abandoned: int = 0  # a halted run: items read from the source and not written (the caller redoes them)
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
                for reason, count in list(worker.restarts.items()):  # a halted run's lanes may still work
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
            write: Callable[[Out], None], halt: threading.Event | None = None) -> ExecutorStats:  # fmt: skip
        """Feed every item of source through prepare, the device stage and write; returns when all are written,
        or when a `halt` has stopped the run (see the module docstring). Closes the stage."""
        config, stats, stop = self.config, ExecutorStats(), threading.Event()
        halt = halt or threading.Event()
        verified: BoundedQueue[Future[Out]] = BoundedQueue(config.queue_size, stop)
        errors: list[BaseException] = []
        on_devices, unwritten = _Count(), _Count()  # on a lane; not yet in the verified queue
        device_slots = threading.BoundedSemaphore(2 * max(1, len(config.lanes)))
        halted_at: list[float] = []

        def fail(error: BaseException) -> None:
            errors.append(error)
            stop.set()

        def grace_over() -> bool:
            if not halt.is_set():
                return False
            if not halted_at:
                halted_at.append(time.monotonic())
            return time.monotonic() - halted_at[0] >= config.halt_grace_s

        def finished(future: Future[Out]) -> None:
            # on the lane's thread: a full queue holds that lane until the writer catches up
            on_devices.add(-1)
            device_slots.release()
            verified.put(future)
            unwritten.add(-1)

        def dispatch(item: Mid) -> None:
            while not device_slots.acquire(timeout=0.2):
                if stop.is_set() or halt.is_set():
                    stage.discard(item)
                    return
            if stop.is_set() or halt.is_set():
                device_slots.release()
                stage.discard(item)
                return
            unwritten.add(1)
            stats.prepared_high_water = max(stats.prepared_high_water, on_devices.add(1))
            stage.submit(item).add_done_callback(finished)

        def feed() -> None:
            # Processes started from this thread (the compile pool) inherit its mask: blocked from their
            # first instruction, a Ctrl-C cannot kill one before its initializer ignores the signal.
            signal.pthread_sigmask(signal.SIG_BLOCK, _STOP_SIGNALS)
            try:
                if config.compile_workers <= 0:
                    for item in source:
                        if stop.is_set() or halt.is_set():
                            return
                        stats.submitted += 1
                        dispatch(prepare(item))
                else:
                    _feed_pool(source, prepare, dispatch, config, stats, stop, halt, fail)
                unwritten.wait_for_zero(stop)  # the last verdicts are in the queue before its end
            except BaseException as error:  # noqa: BLE001 - re-raised by run()
                fail(error)
            finally:
                verified.put(_END)  # type: ignore[arg-type]

        feeder = threading.Thread(target=feed, name="kv-feed", daemon=True)
        feeder.start()
        try:
            while not stop.is_set():
                future = verified.get(give_up=grace_over)
                if future is _END:
                    break
                write(future.result())  # a stage that raised raises here, on the writer's thread
                stats.written += 1
        except BaseException as error:
            fail(error)
        finally:
            halted = halt.is_set() and not errors
            if errors or halted:
                stop.set()
                # A source that waits for verdicts (the agent job's trajectories) would wait for ever now.
                interrupt = getattr(source, "interrupt", None)
                if interrupt is not None:
                    interrupt()
            feeder.join()
            stage.close(abandon=bool(errors) or halted)
        stats.verified_high_water = verified.high_water
        if errors:
            raise errors[0]
        if halted:
            stats.abandoned = stats.submitted - stats.written
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


def _compile_process_init(parent_pid: int) -> None:
    """A compile process: deaf to the stop signals (the run decides what they mean), dead with its parent."""
    for number in _STOP_SIGNALS:
        signal.signal(number, signal.SIG_IGN)  # ignored, not blocked: a compiler it starts inherits this
    signal.pthread_sigmask(signal.SIG_UNBLOCK, _STOP_SIGNALS)
    die_with_parent(parent_pid)


def _feed_pool(source: Iterable[Any], prepare: Callable[[Any], Any], dispatch: Callable[[Any], None],
               config: ExecutorConfig, stats: ExecutorStats, stop: threading.Event, halt: threading.Event,
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
    pool = ProcessPoolExecutor(config.compile_workers, mp_context=context, initializer=_compile_process_init,
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
                if stop.is_set() or halt.is_set():
                    return
            if stop.is_set() or halt.is_set():
                return
            stats.submitted += 1
            with lock:
                counts["outstanding"] += 1
                stats.pool_high_water = max(stats.pool_high_water, counts["outstanding"])
            pool.submit(prepare, item).add_done_callback(finished.put)
        while not stop.is_set() and not halt.is_set():  # the source is done: let the last submissions through
            with lock:
                if counts["outstanding"] == 0:
                    break
            time.sleep(0.05)
    except BaseException as error:  # noqa: BLE001 - re-raised by run()
        fail(error)
    finally:
        finished.put(_END)
        mover.join()
        # Stopped early: compile jobs not started are cancelled, and those running are not waited for (their
        # processes die with this thread: `die_with_parent`).
        pool.shutdown(wait=not (stop.is_set() or halt.is_set()), cancel_futures=True)

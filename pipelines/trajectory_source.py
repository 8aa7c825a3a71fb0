"""The agent job as a candidate source of the engine: trajectories yield candidates turn by turn.

    trajectories (asyncio, a thread of their own) ──Attempt──► engine (compile processes, lanes) ──┐
          ▲                                                                                          │
          └──────────────── deliver(VerifiedAttempt): the verdict goes back to its trajectory ◄──────┘

A trajectory drafts with the model, hands its candidate to the engine as an `Attempt` and waits; the engine
verifies it like any other attempt (same compile pool, same lanes, same executor) and hands the result to
`deliver`, which wakes the trajectory for its next turn. Iterating the source blocks until some trajectory
has a candidate, and ends when every trajectory has ended.

Why a thread for the trajectories: the engine's executors call `next()` on their source from threads of
their own and block; the model calls and the waits for verdicts are coroutines, so they run on an event
loop that nothing else blocks.
"""

from __future__ import annotations

import asyncio
import queue
import threading
from collections.abc import Awaitable, Callable, Iterator
from typing import Any

from kernelvault.contracts import Verdict
from kernelvault.corpus.ledger import attempt_key
from kernelvault.pipelines.candidates import Attempt
from kernelvault.pipelines.corpus_stages import VerifiedAttempt

AsyncVerify = Callable[[Attempt], Awaitable[Verdict]]
_ENDED = object()  # the trajectories have all ended (or failed: then `_error` says why)


class TrajectorySource:
    """Runs `trajectories(verify)` on its own event loop, and is the engine's iterable of attempts.

    `trajectories` is a coroutine function: it runs every trajectory, and a trajectory that needs a verdict
    awaits `verify(attempt)`. It should return when all have ended; what it raises ends the iteration with
    that error (the engine stops and re-raises it).
    """

    def __init__(
        self, trajectories: Callable[[AsyncVerify], Awaitable[None]], halt: threading.Event | None = None
    ) -> None:
        self._trajectories = trajectories
        # Set by a stop signal: the trajectories are being cancelled, and a verdict may come back for one that no
        # longer waits (it is abandoned, redone on resume).
        self._halt = halt or threading.Event()
        self._attempts: queue.Queue[Any] = (
            queue.Queue()
        )  # as many as trajectories waiting: each waits for one
        self._waiting: dict[str, asyncio.Future[Verdict]] = {}
        self._lock = threading.Lock()
        self._loop: asyncio.AbstractEventLoop | None = None
        self._main: asyncio.Task[None] | None = None
        self._thread: threading.Thread | None = None
        self._error: BaseException | None = None
        self._started = threading.Event()

    def __iter__(self) -> Iterator[Attempt]:
        self.start()
        while (attempt := self._attempts.get()) is not _ENDED:
            yield attempt
        if self._error is not None:
            raise self._error

    def start(self) -> None:
        """Start the trajectories (the first `iter()` does it); returns once their loop runs."""
        with self._lock:
            if self._thread is not None:
                return
            self._thread = threading.Thread(target=self._run, name="kv-trajectories", daemon=True)
            self._thread.start()
        self._started.wait()

    def deliver(self, item: VerifiedAttempt) -> None:
        """The engine's verdict for an attempt this source yielded: its trajectory goes on (any thread)."""
        key = _key(item.attempt)
        with self._lock:
            future = self._waiting.pop(key, None)
            loop = self._loop
        if (future is None or loop is None) and self._halt.is_set():
            return
        if future is None or loop is None:
            raise RuntimeError(f"a verdict for {key}, which no trajectory waits for")
        loop.call_soon_threadsafe(_settle, future, item.verdict)

    def close(self) -> None:
        """Stop what still runs (the engine failed, or the job was interrupted) and wait for the thread."""
        with self._lock:
            loop, main = self._loop, self._main
        if loop is not None and main is not None and not main.done():
            loop.call_soon_threadsafe(main.cancel)
        self._attempts.put(_ENDED)  # wakes an engine thread still waiting for an attempt
        if self._thread is not None:
            self._thread.join()

    interrupt = close  # what `LocalExecutor` calls on a source when the run stops early

    async def _verify(self, attempt: Attempt) -> Verdict:
        assert self._loop is not None
        future: asyncio.Future[Verdict] = self._loop.create_future()
        key = _key(attempt)
        with self._lock:
            if key in self._waiting:
                raise RuntimeError(f"two candidates for one attempt ({key}) at once")
            self._waiting[key] = future
        self._attempts.put(attempt)
        try:
            return await future
        finally:
            with self._lock:
                self._waiting.pop(key, None)

    def _run(self) -> None:
        async def main() -> None:
            with self._lock:
                self._loop = asyncio.get_running_loop()
                self._main = asyncio.current_task()
            self._started.set()
            await self._trajectories(self._verify)

        try:
            asyncio.run(main())
        except asyncio.CancelledError:
            pass  # close() stopped it
        except BaseException as error:  # noqa: BLE001 - handed to the engine through the iteration
            self._error = error
        finally:
            self._started.set()
            self._attempts.put(_ENDED)


def _settle(future: asyncio.Future[Verdict], verdict: Verdict) -> None:
    if not future.done():  # a trajectory cancelled meanwhile no longer waits
        future.set_result(verdict)


def _key(attempt: Attempt) -> str:
    return attempt_key(attempt.task.task_id, attempt.sample_index, attempt.turn)

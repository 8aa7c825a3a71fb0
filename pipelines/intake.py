"""When a job stops taking new attempts: at a time limit, or at once at the first SIGINT/SIGTERM.

A batch run on a leased machine (a Slurm job, a device lease, a spot instance) has a deadline. Killed at it,
a run loses every attempt in flight: prepared in the compile processes, queued for a lane, on a lane. The
ledger marks them `started` and the next run does them again, so nothing is wrong, but the work is paid
twice: on a GPU with 6 lanes and 8 compile processes that was 62 attempts of one 320 s chunk.

The time limit (`--stop-after`) closes the intake instead: the source ends, and the engine drains what it
holds through the lanes and the writer, as at the natural end of a run; the summary says how many attempts
were not started.

A signal is a person or a scheduler asking the job to stop now. The first SIGINT (Ctrl-C) or SIGTERM closes
the intake and sets `halt`: the engine hands nothing more to the lanes, gives the attempts already on a lane
a few seconds to finish and be written (`kernelvault.pipelines.executor.ExecutorConfig.halt_grace_s`), and
abandons the rest: not written, still `started` in the ledger, so the same command does them again. The
command then exits 128 + the signal's number (130, 143). A second signal ends the process at once, by that
signal, as a kill does (the ledger resumes from the last shard).

What this does NOT do: bound how long the time limit's drain takes. It is the in-flight work (about two
attempts per lane and two per compile process), each within the verifier's own time limits; a caller with a
hard deadline leaves that margin, as `bench/tritonbench_h200_chunk.sh` does.
"""

from __future__ import annotations

import os
import signal
import sys
import threading
import time
from collections.abc import Iterable, Iterator
from contextlib import contextmanager
from types import FrameType
from typing import TypeVar

Item = TypeVar("Item")
STOP_SIGNALS = (signal.SIGINT, signal.SIGTERM)


class Intake:
    """Whether a job still takes new attempts; `gate` passes a source's items through until it closes."""

    def __init__(self, stop_after_s: float | None = None) -> None:
        if stop_after_s is not None and stop_after_s <= 0:
            raise ValueError(f"--stop-after is a positive number of seconds, not {stop_after_s:g}")
        self._deadline = None if stop_after_s is None else time.monotonic() + stop_after_s
        self.stop_after_s = stop_after_s
        self._closed = threading.Event()
        self.halt = threading.Event()  # set by a signal: stop now, not after a drain
        self.reason: str | None = None  # why it closed, for the summary (a signal: its name, `SIGINT`)
        self.signal_number: int | None = None  # the signal that closed it (a caller exits with 128 + it)
        self.taken = 0  # items passed through
        self.left = 0  # items of the source not passed through once it closed

    def close(self, reason: str) -> None:
        if not self._closed.is_set():
            self.reason = reason
            self._closed.set()

    @property
    def closed(self) -> bool:
        if not self._closed.is_set() and self._deadline is not None and time.monotonic() >= self._deadline:
            self.close(f"the time limit of {self.stop_after_s:g} s")
        return self._closed.is_set()

    def gate(self, items: Iterable[Item]) -> Iterator[Item]:
        """The items, until the intake closes; the rest are counted in `left`, never started."""
        iterator = iter(items)
        for item in iterator:
            if self.closed:
                self.left = 1 + sum(1 for _ in iterator)
                return
            self.taken += 1
            yield item

    def stop_now(self, number: int) -> None:
        """What the first SIGINT/SIGTERM does: close the intake and halt the engine."""
        self.signal_number = number
        # The signal names the stop, even where a time limit closed the intake before it.
        self.reason = signal.Signals(number).name
        self._closed.set()
        self.halt.set()

    @contextmanager
    def closed_by_signals(self) -> Iterator[Intake]:
        """SIGINT or SIGTERM once: `stop_now`; twice: the process ends at once, by that signal.

        Only the main thread may install handlers: elsewhere this does nothing, and signals keep their
        usual effect.
        """
        if threading.current_thread() is not threading.main_thread():
            yield self
            return
        previous = {number: signal.getsignal(number) for number in STOP_SIGNALS}

        def on_signal(number: int, frame: FrameType | None) -> None:
            name = signal.Signals(number).name
            if self.signal_number is not None:
                print(f"kernelvault: {name} again: stopping now (the same command resumes)", file=sys.stderr,
                      flush=True)  # fmt: skip
                signal.signal(number, signal.SIG_DFL)
                os.kill(os.getpid(), number)  # ends the process: the caller sees it die by the signal
                return
            self.stop_now(number)
            print(f"kernelvault: {name}: stopping: no new attempts; those on a lane have a few seconds to finish, "
                  "the rest are redone by the same command (send it again to stop at once)", file=sys.stderr,
                  flush=True)  # fmt: skip

        for number in STOP_SIGNALS:
            signal.signal(number, on_signal)
        try:
            yield self
        finally:
            for number, handler in previous.items():
                signal.signal(number, handler)

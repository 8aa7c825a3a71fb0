"""Progress on stderr for the stages that take long: bars that keep their clock moving, and one long step's line.

    bar(total, "verifying", "row")     a count of things done (rows written, entries checked): tqdm on stderr
    waiting("starting ... (about 10 s)")  one long step (workers starting, a model loading): what it is, how
                                          long it usually takes, and its clock; erased when done
    status("step 3: generating")       the same line, open across calls (a training step's phases)

Both redraw every `TICK_S` seconds while they are open, so their elapsed time moves while nothing is counted
(a lane's first workers starting, a candidate running into its time limit): a user sees that the job is alive
and, in a bar's status (`set_postfix_str`), what it waits for. Off a terminal (a log file, CI) tqdm writes the
same redraws, separated by carriage returns.

What it does NOT do: estimate a step it cannot count. The times in the `waiting` lines are typical ones
measured on a 2-core CPU machine, not promises; a first run (cold caches, imports compiled) takes longer.
"""

from __future__ import annotations

import sys
import threading
from collections.abc import Iterator
from contextlib import contextmanager
from typing import Any

from tqdm import tqdm

TICK_S = 5.0  # a bar redraws at least this often: its clock never stands still for 10 s


class TickingBar(tqdm):  # type: ignore[misc, type-arg]
    """A tqdm bar on stderr that a background thread redraws every `tick_s` seconds until it closes."""

    def __init__(self, *args: Any, tick_s: float = TICK_S, **kwargs: Any) -> None:
        kwargs.setdefault("file", sys.stderr)
        kwargs.setdefault("dynamic_ncols", True)
        super().__init__(*args, **kwargs)
        self._closing = threading.Event()
        if not self.disable:
            threading.Thread(target=self._tick, args=(tick_s,), name="kv-progress", daemon=True).start()

    def _tick(self, tick_s: float) -> None:
        while not self._closing.wait(tick_s):
            self.refresh()

    def close(self) -> None:
        self._closing.set()
        super().close()


def bar(total: int | None, desc: str, unit: str, enabled: bool = True, status: str = "") -> TickingBar:
    """A count of `unit`s with an optional status after it; `total` None (no known end): `desc: 7 rows [00:31]`."""
    unknown = f"{{desc}}: {{n_fmt}} {unit}s [{{elapsed}}{{postfix}}]" if total is None else None
    made = TickingBar(total=total, desc=desc, unit=unit, disable=not enabled, bar_format=unknown)
    if status:
        made.set_postfix_str(status)
    return made


def status(message: str, enabled: bool = True) -> TickingBar:
    """`message: 00:12` with a moving clock, erased when closed; `set_description_str` changes what it says."""
    return TickingBar(
        total=None, desc=message, bar_format="{desc}: {elapsed}", disable=not enabled, leave=False
    )


@contextmanager
def waiting(message: str, enabled: bool = True) -> Iterator[None]:
    """One long step as a `status` line, erased once done: what follows (a result, or an error in one line)
    takes its place."""
    with status(message, enabled):
        yield

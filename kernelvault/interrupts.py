"""A Ctrl-C that cannot be lost: the command line's SIGINT handler, and the check its waits make.

Python's own handler raises KeyboardInterrupt wherever the main thread is. If that is inside an import, a library's
`try: import x except: ...` can swallow it, and the command goes on as if nothing had happened (`verify` did, with a
candidate that hangs until its time limit). The handler installed here also records the signal, so that a wait of
the main thread (`raise_if_interrupted`, called between its short sleeps) raises it again.

After a stop by signal, the command ends with `exit_now`: a lane's thread may still be inside PyTorch (an abandoned
job), and the interpreter's usual exit would run C++ destructors beside it (`terminate called without an active
exception`, the process dying by SIGABRT instead of exiting 130).

What it does NOT do: stop a thread other than the main one; the job that waits decides what to abandon.
"""

from __future__ import annotations

import os
import signal
import sys
import threading
from types import FrameType

_RECEIVED = threading.Event()


def install() -> None:
    """Make SIGINT raise KeyboardInterrupt and be remembered (main thread only; elsewhere nothing changes)."""
    if threading.current_thread() is threading.main_thread():
        signal.signal(signal.SIGINT, _on_sigint)


def _on_sigint(number: int, frame: FrameType | None) -> None:
    _RECEIVED.set()
    raise KeyboardInterrupt


def raise_if_interrupted() -> None:
    """KeyboardInterrupt if a SIGINT came since `install`, even one something swallowed."""
    if _RECEIVED.is_set():
        raise KeyboardInterrupt


def exit_now(code: int) -> None:
    """End the process with `code` now: output flushed, no atexit handlers or C++ destructors (the run record and
    the shards are written before a command returns; the workers end with this process)."""
    for stream in (sys.stdout, sys.stderr):
        try:
            stream.flush()
        except (OSError, ValueError):
            pass
    os._exit(code)

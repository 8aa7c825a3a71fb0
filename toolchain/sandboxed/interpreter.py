"""Triton's CPU interpreter as the workers run it: without the integer-overflow checks it computes and never asserts.

Triton's `+`, `-` and `*` on integers narrower than 64 bits compute an overflow check (both sides cast to int64,
the result compared with the type's bounds) and hand it to `device_assert`, which drops it unless the options'
`debug` is on (`triton.language.semantic`). The interpreter's options never turn `debug` on, so the check is work
whose result is thrown away: about half the interpreted time of a loop-heavy kernel (bench/interpreter_checks.py).
Turning the check off changes no value a kernel computes; with `debug` on (a future interpreter that honours it)
nothing is changed.

What this does NOT do: change how compiled kernels are built (the cross-compile and the GPU keep Triton's options),
or stop a candidate from turning the check back on in its own process (it would only slow itself).
"""

from __future__ import annotations

import dataclasses
import os
import sys


def drop_unasserted_overflow_checks() -> bool:
    """Once per worker, before any task or candidate code runs: in a process that interprets its kernels
    (`TRITON_INTERPRET=1`, the CPU path), the interpreter's options without the overflow check where `debug` is off.
    True when the options changed."""
    if os.environ.get("TRITON_INTERPRET") != "1":
        return False
    import triton.runtime.interpreter as interpreter

    builder = interpreter.interpreter_builder
    options = builder.options
    if options.debug or not getattr(options, "sanitize_overflow", False):
        return False
    builder.options = dataclasses.replace(options, sanitize_overflow=False)
    return True


def interpreter_options() -> str | None:
    """The interpreter's options as text, where it is loaded (None elsewhere): what a worker compares after each job,
    since a `debug` left on would turn on every later kernel's device asserts in that process."""
    builder = getattr(sys.modules.get("triton.runtime.interpreter"), "interpreter_builder", None)
    return repr(getattr(builder, "options", None)) if builder is not None else None

"""`parse`: `ast.parse`, one thread at a time.

CPython 3.11 and 3.12 can fail `ast.parse` with "SystemError: AST constructor recursion depth mismatch" when
two threads parse at once (python/cpython#106905): the verifier's lanes run the static stages of
different candidates side by side. A lock costs nothing measurable next to a candidate's verification.
"""

from __future__ import annotations

import ast
import threading

_LOCK = threading.Lock()


def parse(source: str) -> ast.Module:
    """`ast.parse(source)`, serialised across threads; raises SyntaxError as ast.parse does."""
    with _LOCK:
        return ast.parse(source)

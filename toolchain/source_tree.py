"""`parse`: `ast.parse`, one thread at a time; `source_lines`: a source's lines as Python's tokenizer counts them.

CPython 3.11 and 3.12 can fail `ast.parse` with "SystemError: AST constructor recursion depth mismatch" when
two threads parse at once (python/cpython#106905): the verifier's lanes run the static stages of
different candidates side by side. A lock costs nothing measurable next to a candidate's verification.
"""

from __future__ import annotations

import ast
import re
import threading

_LOCK = threading.Lock()


def parse(source: str) -> ast.Module:
    """`ast.parse(source)`, serialised across threads; raises SyntaxError as ast.parse does."""
    with _LOCK:
        return ast.parse(source)


# Python's tokenizer ends a line at "\n", "\r\n" or "\r" only; `str.splitlines` also splits at \v, \f, \x1c-\x1e,
# \x85, \u2028 and \u2029, which a comment or string may hold. Line numbers read from the tokenizer (a kernel's
# `co_firstlineno`) must index lines split its way, or `inspect.getsource` returns other text than ran.
_LINE = re.compile(r"[^\r\n]*(?:\r\n|\r|\n)|[^\r\n]+\Z")


def source_lines(text: str) -> list[str]:
    """`text`'s lines, ends kept, as Python numbers them (for linecache)."""
    return _LINE.findall(text)

"""An exception as the one line a failure message carries (the workers' and the task formats' messages)."""

from __future__ import annotations

MESSAGE_LIMIT = 2000  # characters of an exception's text kept in a failure message


def one_line_error(error: BaseException) -> str:
    text = " ".join(f"{type(error).__name__}: {error}".split())
    return text if len(text) <= MESSAGE_LIMIT else text[:MESSAGE_LIMIT] + " …"

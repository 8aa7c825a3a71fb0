"""The adversarial files' expectations and the outcome they are compared with, for the GPU suites.

A hostile file's second line is `# expect: KIND[:SUB_REASON][|KIND[:SUB_REASON]...]`; an outcome is
`correct`, a failure kind, or `integrity_reject:SUB_REASON` (the sub-reason leads the failure message).
"""

from __future__ import annotations

from pathlib import Path


def expected_options(path: Path) -> list[str]:
    """The '# expect:' alternatives of a hostile file, each 'kind' or 'kind:sub_reason'."""
    for line in path.read_text().splitlines()[:5]:
        if line.startswith("# expect:"):
            return [option.strip() for option in line.split(":", 1)[1].split("|")]
    raise AssertionError(f"{path} has no '# expect:' line")


def outcome(failure_kind: str | None, failure_message: str | None) -> str:
    if failure_kind == "integrity_reject":
        return "integrity_reject:" + (failure_message or "").split(":", 1)[0]
    return failure_kind or "correct"

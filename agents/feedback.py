"""The user turn after a verdict: what the toolchain said, trimmed to what helps the next draft."""

from __future__ import annotations

from collections import defaultdict

from kernelvault.agents.prompting import FUNCTION_VARIANT, OPTIMISATION_VARIANT, feedback_templates
from kernelvault.contracts import Verdict

FEEDBACK_LOG_LIMIT = 1500  # characters of compiler/runtime log; long logs bury the first error


def _trim(text: str, limit: int) -> str:
    text = (text or "").strip()
    if len(text) <= limit:
        return text
    half = limit // 2
    return f"{text[:half]}\n… [cut] …\n{text[-half:]}"


def _times(speedup: float | None) -> str:
    return f"{speedup:.2f}x" if speedup is not None else "not measured on this platform"


def feedback_message(verdict: Verdict, turn: int, max_turns: int, form: str = "module") -> str:
    """The feedback for the verdict of turn `turn` (1-based) of `max_turns`, for a task of `form`
    ("module" or "function": a function task's own template where feedback.md has one)."""
    templates = feedback_templates()
    optimising = verdict.baseline is not None  # an optimisation task: speed is judged against its baseline
    speedup = verdict.speedup_over_baseline if optimising else verdict.speedup
    if verdict.correct is True:
        kind = "correct_fast" if (speedup or 0.0) >= 1.0 else "correct_slow"
    else:
        kind = verdict.failure_kind or "runtime_error"
    variant = templates.get(kind + FUNCTION_VARIANT) if form == "function" else None
    if optimising:
        variant = templates.get(kind + OPTIMISATION_VARIANT) or variant
    template = variant or templates.get(kind) or templates.get("runtime_error", "{failure_message}")
    failed = [check for check in verdict.checks if not check.passed]
    stage_log = next((stage.log for stage in verdict.stages if stage.outcome == "failed"), "")
    environment = verdict.environment
    values: dict[str, object] = defaultdict(str, {
        "turn": turn,
        "turns_left": max(0, max_turns - turn),
        "failure_message": _trim(verdict.failure_message or "", FEEDBACK_LOG_LIMIT),
        "log": _trim(verdict.compile_log or stage_log, FEEDBACK_LOG_LIMIT),
        "case": failed[0].case if failed else "",
        "max_abs_error": f"{failed[0].max_abs_error:.3g}" if failed and failed[0].max_abs_error is not None else "n/a",
        "speedup": _times(verdict.speedup),
        "speedup_over_baseline": _times(verdict.speedup_over_baseline),
        "platform": environment.platform if environment else "",
        "device": environment.device if environment else "",
    })  # fmt: skip
    return template.format_map(values)

"""`bench/side_by_side.py`: how a disagreement between TritonBench's evaluator and KernelVault is named.

The classes are what the results files count and a reader acts on (a false reject to fix, a strict choice to
name, TritonBench crediting what it never ran), so each is tested with the line and row the two tools write.
"""

from __future__ import annotations

import sys
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))

from bench.side_by_side import Joined, classify  # noqa: E402


def _joined(tb: dict, kv: dict | None) -> Joined:
    return Joined("gpt-4o", "output_gpt-4o.jsonl:1", tb={"task": "asin.py", **tb}, kv=kv)


def _row(correct: bool, kind: str | None, message: str = "") -> dict:
    return {"task_name": "asin", "correct": correct, "failure_kind": kind, "failure_message": message}


@pytest.mark.parametrize(
    ("kind", "message", "expected"),
    [
        (
            "compile_error",
            "case c1:performance inputs, the earlier checks passed: CompilationError: at 12:8: libdevice.asin(x)",
            "TritonBench credits it, KernelVault: compile_error on a later case only (the perf inputs: larger, "
            "another dtype), which TritonBench's test never runs",
        ),
        ("compile_error", "CompilationError: at 12:8", "TritonBench credits it, KernelVault: compile_error"),
        (
            "integrity_reject",
            "torch_compute: aten.asin called while forward (only glue is allowed)",
            "TritonBench credits it, KernelVault: torch_compute (the wrapper calls PyTorch for the work)",
        ),
        (
            "integrity_reject",
            "nondeterministic: a second run on the same inputs differs",
            "TritonBench credits it, KernelVault: integrity_reject nondeterministic",
        ),
    ],
)
def test_an_answer_tritonbench_credits_and_we_refuse_is_named_by_our_reason(
    kind: str, message: str, expected: str
) -> None:
    assert classify(_joined({"call": True, "results": False}, _row(False, kind, message))) == expected


def test_agreement_is_not_a_class_and_a_mismatch_says_whether_the_test_could_see_it() -> None:
    assert classify(_joined({"call": True}, _row(True, None))) is None
    assert classify(_joined({"call": False}, _row(False, "compile_error", "CompilationError"))) is None
    seen = classify(
        _joined({"call": True, "results": False}, _row(False, "mismatch", "case c0:test calls: ..."))
    )
    unseen = classify(
        _joined({"call": True, "results": True}, _row(False, "mismatch", "case c0:test calls: ..."))
    )
    assert (
        seen == "TritonBench credits it, KernelVault: mismatch, and its own test's results differ from gold"
    )
    assert unseen == "TritonBench credits it, KernelVault: mismatch the test's return values do not show"

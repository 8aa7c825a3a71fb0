"""Hostile HIP candidates on a CPU-only machine: no correctness credit, and the static tricks named.

Without an AMD GPU nothing runs, so the run-time exploits (torch compute, side streams, caches, raw
ctypes) can only be caught on a GPU (tests/gpu/test_hip_adversarial_on_gpu.py); here they get compile
credit at most. What the static stage sees (a built-at-run-time source, a try/except fallback to
PyTorch) and what the static wall refuses (ctypes, a side stream) is caught here with the same reason as
on the GPU.
"""

from __future__ import annotations

import shutil
from pathlib import Path

import pytest

from kernelvault.contracts import Candidate
from kernelvault.pipelines.candidates import expected_options, outcome, outcome_matches
from kernelvault.toolchain.lane_pool import verify_once
from kernelvault.toolchain.tasks import load_task_file
from kernelvault.toolchain.verify import Verifier, VerifyConfig

ROOT = Path(__file__).resolve().parents[1]
SUITE = ROOT / "tests" / "adversarial" / "hip_hostile"
STATIC = {"static_reject", "integrity_reject:fallback"}


@pytest.mark.skipif(shutil.which("hipcc") is None, reason="needs Debian's hipcc (make installs it as root)")
def test_hostile_hip_candidates_get_no_correctness_credit_on_cpu(tmp_path: Path) -> None:
    verifier = Verifier(VerifyConfig(hip_cache=tmp_path / "hip"))
    files = sorted(SUITE.glob("*.py"))
    assert len(files) >= 10
    for path in files:
        task = load_task_file(ROOT / "tasks" / f"{path.stem.split('__')[1]}.py")
        verdict = verify_once(verifier, task, Candidate(task.task_id, "hip", path.read_text(), path.name))
        assert verdict.correct is not True and verdict.reward is not None and verdict.reward.total <= 0.4
        options = expected_options(path, "cpu")
        if any(option.startswith(tuple(STATIC)) for option in options):
            got = outcome(verdict.failure_kind, verdict.failure_message)
            assert outcome_matches(got, options), (path.name, got, verdict.failure_message)
        else:  # compiled for gfx90a, never run: compile credit only
            assert (verdict.compiled, verdict.correct) == (True, None), (path.name, verdict.failure_message)

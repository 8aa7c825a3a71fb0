"""Optimisation tasks (kernel-to-kernel): a reference, plus a baseline kernel that a candidate must match and beat.

    prepare: the candidate's CPU stages, then (if it passed them) the baseline's, as a candidate of the task
    complete, on one lane: the baseline (checked, then timed) ──► the candidate (checked, then timed)
                                        │ not correct: the task is broken (`infrastructure_error`), no verdict

The baseline is a candidate file written for the task (`KERNELVAULT_BASELINES` in the task file,
`docs/task-format.md`): correct and deliberately slow. It goes through exactly the candidate's path (same
static checks, same worker, same timing function, same performance cases) right before the candidate, so
that the two timings come from one lane a moment apart. What this module decides:

- a baseline that fails anything (a static check, its build, its check) makes the attempt
  `infrastructure_error`, never a verdict on the candidate: the task needs fixing, and the corpus retries
  the attempt on resume (`kernelvault tasks check` verifies baselines before a run);
- the reward's speed term uses the speedup over the baseline (`sum(baseline_ms) / sum(candidate_ms)` over
  the performance cases both timed); the verdict keeps the speedup over PyTorch beside it, and the baseline's
  own timings and hash.

What it does NOT do: cache the baseline between candidates. A baseline is verified again for every
candidate that reaches the device, so each speedup compares two measurements taken together; that doubles a
lane's device work on optimisation tasks.
"""

from __future__ import annotations

import dataclasses
from typing import Protocol

from kernelvault.contracts import BaselineRun, Candidate, Task, Verdict, content_hash
from kernelvault.toolchain.reward import DEFAULT_REWARD, RewardConfig, graded_reward, task_speedup

BASELINE_ORIGIN = "baseline"


def baseline_candidate(task: Task, target: str) -> Candidate | None:
    """The task's baseline as a candidate for `target`, or None where the task has none for it."""
    code = task.baseline(target)
    if code is None:
        return None
    return Candidate(task.task_id, target, code, BASELINE_ORIGIN)  # type: ignore[arg-type]


def baseline_failure(baseline: Verdict) -> str | None:
    """Why the baseline cannot stand as one (a one-line message), or None when it passed every stage.

    On a platform that cannot run it (HIP on the CPU: `correct` is None), compiling is all it can show."""
    if baseline.failure_kind is None and baseline.correct is not False:
        return None
    detail = f"{baseline.failure_kind or 'not correct'}: {baseline.failure_message or ''}".strip().rstrip(":")
    return f"the task's {baseline.target} baseline does not pass ({detail}); the task needs fixing"


def against_baseline(candidate: Verdict, baseline: Verdict, reward: RewardConfig = DEFAULT_REWARD) -> Verdict:
    """The candidate's verdict with the baseline's run attached and the reward's speed term over the baseline."""
    timed = {timing.case: timing.candidate_ms for timing in baseline.timings}
    cases = [timing for timing in candidate.timings if timing.case in timed]
    over_baseline = None
    if candidate.correct is True and cases and len(cases) == len(candidate.timings):
        over_baseline = task_speedup([timed[t.case] for t in cases], [t.candidate_ms for t in cases])
    breakdown = graded_reward(
        candidate.compiled, candidate.correct, over_baseline, candidate.failure_kind, reward
    )
    stages = tuple(
        dataclasses.replace(stage, log=f"total {breakdown.total:.3f} (speed term over the baseline)")
        if stage.name == "reward" else stage
        for stage in candidate.stages
    )  # fmt: skip
    run = BaselineRun(
        content_hash(baseline.code) if baseline.code else "", baseline.timings, baseline.speedup
    )
    return dataclasses.replace(candidate, baseline=run, speedup_over_baseline=over_baseline, reward=breakdown,
                               stages=stages)  # fmt: skip


class BaselineVerifier(Protocol):
    def verify(self, task: Task, candidate: Candidate) -> Verdict: ...


def check_baselines(task: Task, verifier: BaselineVerifier) -> tuple[list[str], list[str]]:
    """`tasks check` of an optimisation task's baselines, each verified as a candidate of the task by `verifier`
    (a lane pool: `kernelvault.toolchain.reference_check`): (problems, notes), one line each."""
    problems, notes = [], []
    for target in sorted(task.baselines):
        baseline = baseline_candidate(task, target)
        assert baseline is not None
        verdict = verifier.verify(task, baseline)
        problem = baseline_failure(verdict)
        if problem:
            problems.append(problem)
            continue
        ran = "correct" if verdict.correct else "compiles (this platform cannot run it)"
        speed = f", {verdict.speedup:.2f}x PyTorch" if verdict.speedup is not None else ""
        notes.append(f"{target} baseline: {ran}{speed}")
    return problems, notes

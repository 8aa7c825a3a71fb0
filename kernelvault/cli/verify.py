"""`kernelvault verify`: one candidate against one task."""

from __future__ import annotations

import argparse
import json
from pathlib import Path

from kernelvault.cli.common import UsageError, add_platform_options, build_verifier, existing_file
from kernelvault.contracts import Candidate, Verdict


def read_file(path: Path, what: str) -> str:
    try:
        return path.read_text(encoding="utf-8")
    except FileNotFoundError:
        raise UsageError(f"{what} not found: {path}") from None
    except (OSError, UnicodeDecodeError) as error:
        raise UsageError(f"cannot read {what} {path}: {error}") from None


def stage_table(verdict: Verdict) -> list[str]:
    """One line per stage, saying what it meant for the verdict. The verdict's record keeps what each stage
    did; here a stage that passed after an earlier one failed reads `not counted` (on the cpu platform the
    interpreter's check runs before the cross-compile, so a kernel that does not compile for the GPU can
    still match the reference there, and counts for nothing), a stage that never ran reads `not run`, and
    the reward, which is worked out whatever happened, reads `scored`."""
    lines, failed = [], None
    for stage in verdict.stages:
        log = stage.log.splitlines()[0] if stage.log else ""
        outcome = stage.outcome
        if stage.name == "reward":
            outcome = "scored"
        elif outcome == "skipped" and not log:
            outcome = "not run"
        elif outcome == "passed" and failed is not None:
            outcome, log = "not counted", f"(the {failed} stage failed) {log}"
        elif outcome == "failed" and failed is None:
            failed = stage.name
        lines.append(f"  {stage.name:<8} {outcome:<11} {stage.seconds:7.2f}s  {log[:100]}".rstrip())
    return lines


def cmd_verify(args: argparse.Namespace) -> int:
    from kernelvault import progress
    from kernelvault.toolchain.lane_pool import verify_once
    from kernelvault.toolchain.tasks import TaskFormatError, parse_task

    task_path, candidate_path = Path(args.task), Path(args.candidate)
    task_source = read_file(task_path, "task")
    candidate_text = read_file(candidate_path, "candidate")
    try:
        task = parse_task(task_source, task_path.stem, f"file:{task_path}")
    except TaskFormatError as error:
        raise UsageError(f"invalid task {task_path}: {error}") from None
    verifier = build_verifier(args)
    # A pool of one lane, the way every consumer runs candidates (on a GPU, the first visible one).
    candidate = Candidate(task.task_id, args.target, candidate_text, f"file:{candidate_path}")
    # Most of the time goes to starting the jailed workers (the candidate's and the reference's): one line
    # with a moving clock on stderr says so (stdout keeps only the result, one JSON object with --json).
    with progress.waiting(f"verifying on {verifier.choice.platform}: jailed workers start, then the checks "
                          "(5-30 s)"):  # fmt: skip
        verdict = verify_once(verifier, task, candidate)
    environment = verdict.environment
    if args.json:
        summary = {
            "task": task.name,
            "compiled": verdict.compiled,
            "correct": verdict.correct,
            "speedup": verdict.speedup,
            "reward": verdict.reward.total if verdict.reward else 0.0,
            "failure_kind": verdict.failure_kind,
            "failure_message": verdict.failure_message,
            "platform": environment.platform if environment else None,
            "device": environment.device if environment else None,
            "arch": environment.arch if environment else None,
            "verdict": verdict.to_dict(),
        }
        print(json.dumps(summary, default=str))
        return 0
    print(f"task       {task.name} ({task.task_id})")
    print(
        f"platform   {environment.platform if environment else '?'} · {environment.device if environment else ''}"
    )
    for line in stage_table(verdict):
        print(line)
    print(f"compiled   {verdict.compiled}")
    print(f"correct    {verdict.correct}")
    print(f"speedup    {verdict.speedup if verdict.speedup is None else f'{verdict.speedup:.3f}x'}")
    print(f"reward     {verdict.reward.total if verdict.reward else 0.0:.3f}")
    if verdict.failure_kind:
        print(f"failure    {verdict.failure_kind}: {verdict.failure_message}")
    return 0


def register(commands: argparse._SubParsersAction) -> None:
    verify = commands.add_parser("verify", help="verify one candidate against one task")
    verify.add_argument(
        "--task", required=True, type=existing_file("task"), help="task file (KernelBench form)"
    )
    verify.add_argument(
        "--candidate",
        required=True,
        type=existing_file("candidate"),
        help="candidate file (.py) or model answer (.md)",
    )
    verify.add_argument("--target", default="triton", choices=["triton", "hip"])
    verify.add_argument("--json", action="store_true", help="print one JSON object")
    add_platform_options(verify)
    verify.set_defaults(handler=cmd_verify)

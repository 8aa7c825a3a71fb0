"""`kernelvault verify`: one candidate against one task."""

from __future__ import annotations

import argparse
import json
from pathlib import Path

from kernelvault.cli.common import UsageError, add_platform_options, build_verifier
from kernelvault.contracts import Candidate


def read_file(path: Path, what: str) -> str:
    try:
        return path.read_text(encoding="utf-8")
    except FileNotFoundError:
        raise UsageError(f"{what} not found: {path}") from None
    except (OSError, UnicodeDecodeError) as error:
        raise UsageError(f"cannot read {what} {path}: {error}") from None


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
    for stage in verdict.stages:
        first_line = stage.log.splitlines()[0] if stage.log else ""
        print(f"  {stage.name:<8} {stage.outcome:<8} {stage.seconds:7.2f}s  {first_line[:100]}")
    print(f"compiled   {verdict.compiled}")
    print(f"correct    {verdict.correct}")
    print(f"speedup    {verdict.speedup if verdict.speedup is None else f'{verdict.speedup:.3f}x'}")
    print(f"reward     {verdict.reward.total if verdict.reward else 0.0:.3f}")
    if verdict.failure_kind:
        print(f"failure    {verdict.failure_kind}: {verdict.failure_message}")
    return 0


def register(commands: argparse._SubParsersAction) -> None:
    verify = commands.add_parser("verify", help="verify one candidate against one task")
    verify.add_argument("--task", required=True, help="task file (KernelBench form)")
    verify.add_argument("--candidate", required=True, help="candidate file (.py) or model answer (.md)")
    verify.add_argument("--target", default="triton", choices=["triton", "hip"])
    verify.add_argument("--json", action="store_true", help="print one JSON object")
    add_platform_options(verify)
    verify.set_defaults(handler=cmd_verify)

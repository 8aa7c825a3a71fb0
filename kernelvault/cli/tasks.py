"""`kernelvault tasks check|list`: inspect a task suite."""

from __future__ import annotations

import argparse

from kernelvault.cli.common import (
    load_tasks_or_exit,
)


def cmd_tasks_check(args: argparse.Namespace) -> int:
    from kernelvault.toolchain.reference_check import iter_check_tasks

    loaded = load_tasks_or_exit(args.path)
    reports = []
    for report in iter_check_tasks(loaded.tasks, include_performance=args.performance, workers=args.workers):
        reports.append(report)
        status = "ok" if report.ok else "BROKEN"
        print(f"{status:<7} {report.task} ({report.cases_run} case(s))", flush=True)
        for problem in report.problems:
            print(f"          {problem}", flush=True)
    broken = [report for report in reports if not report.ok]
    for where, why in loaded.errors:
        print(f"INVALID {where}: {why}")
    total_bad = len(broken) + len(loaded.errors)
    print(
        f"{len(reports) - len(broken)} of {len(reports) + len(loaded.errors)} task(s) ok, {total_bad} broken or invalid"
    )
    return 1 if total_bad else 0


def cmd_tasks_list(args: argparse.Namespace) -> int:
    loaded = load_tasks_or_exit(args.path)
    for task in loaded.tasks:
        form = f"{task.form} {task.entry}" if task.entry else "module"
        print(f"{task.task_id}  {task.category or '-':<14} {form:<28} {task.name}")
    refused = f", {len(loaded.errors)} refused (reasons above)" if loaded.errors else ""
    counts = {
        form: sum(1 for task in loaded.tasks if task.form == form)
        for form in ("kernel", "function", "module")
    }
    shown = ", ".join(f"{count} {form}" for form, count in counts.items() if count or form != "kernel")
    print(f"{len(loaded.tasks)} task(s) loaded ({shown}){refused}")
    return 0


def register(commands: argparse._SubParsersAction) -> None:
    tasks = commands.add_parser("tasks", help="inspect task suites")
    tasks_commands = tasks.add_subparsers(dest="tasks_command", required=True)
    check = tasks_commands.add_parser(
        "check", help="run every reference and report broken or degenerate ones"
    )
    check.add_argument(
        "path", nargs="?", help="task file, folder, KernelBench tree or hub:REPO (default: bundled)"
    )
    check.add_argument("--performance", action="store_true", help="also run the (large) performance cases")
    check.add_argument("--workers", type=int, default=2)
    check.set_defaults(handler=cmd_tasks_check)
    listing = tasks_commands.add_parser("list", help="list the tasks of a suite")
    listing.add_argument("path", nargs="?")
    listing.set_defaults(handler=cmd_tasks_list)

"""`kernelvault tasks check|list`: inspect a task suite."""

from __future__ import annotations

import argparse
from pathlib import Path

from kernelvault.cli.common import UsageError, load_tasks_or_exit, task_suite
from kernelvault.contracts import PLATFORMS


def cmd_tasks_check(args: argparse.Namespace) -> int:
    import time

    from kernelvault.toolchain.case_scale import scale_cases
    from kernelvault.toolchain.platforms import detect_platform
    from kernelvault.toolchain.reference_check import iter_check_tasks

    try:
        platform = detect_platform(args.platform).platform
    except ValueError as error:
        raise UsageError(str(error)) from None
    loaded = load_tasks_or_exit(args.path)
    try:
        tasks = [scale_cases(task, args.case_scale) for task in loaded.tasks]
    except ValueError as error:
        raise UsageError(str(error)) from None
    if args.case_scale != 1:
        print(f"sizes of {sum(t is not o for t, o in zip(tasks, loaded.tasks, strict=True))} task(s) scaled by "
              f"{args.case_scale:g} (--case-scale): a check of the references, not of the sizes a GPU runs")  # fmt: skip
    where = "the CPU, under Triton's interpreter" if platform == "cpu" else f"the {platform} GPU"
    print(f"checking {len(tasks)} reference(s) on {where}", flush=True)
    started, reports, width = time.monotonic(), [], len(str(len(tasks)))
    for report in iter_check_tasks(tasks, include_performance=args.performance, workers=args.workers,
                                   platform=platform):  # fmt: skip
        reports.append(report)
        status = "ok" if report.ok else "BROKEN"
        progress = f"[{len(reports):>{width}}/{len(tasks)}, {time.monotonic() - started:.0f} s]"
        print(f"{status:<7} {report.task} ({report.cases_run} case(s)) {progress}", flush=True)
        for line in report.problems + report.notes:
            print(f"          {line}", flush=True)
    broken = [report for report in reports if not report.ok]
    for where, why in loaded.errors:
        print(f"INVALID {where}: {why}")
    total_bad = len(broken) + len(loaded.errors)
    print(f"{len(reports) - len(broken)} of {len(reports) + len(loaded.errors)} task(s) ok, {total_bad} broken or "
          f"invalid, in {time.monotonic() - started:.0f} s")  # fmt: skip
    return 1 if total_bad else 0


def cmd_tasks_list(args: argparse.Namespace) -> int:
    loaded = load_tasks_or_exit(args.path)
    for task in loaded.tasks:
        form = f"{task.form} {task.entry}" if task.entry else "module"
        optimise = f"  (optimise: {', '.join(sorted(task.baselines))} baseline)" if task.baselines else ""
        print(f"{task.task_id}  {task.category or '-':<14} {form:<28} {task.name}{optimise}")
    refused = f", {len(loaded.errors)} refused (reasons above)" if loaded.errors else ""
    counts = {
        form: sum(1 for task in loaded.tasks if task.form == form)
        for form in ("kernel", "function", "module")
    }
    shown = ", ".join(f"{count} {form}" for form, count in counts.items() if count or form != "kernel")
    optimisation = sum(1 for task in loaded.tasks if task.baselines)
    shown += f"; {optimisation} optimisation" if optimisation else ""
    print(f"{len(loaded.tasks)} task(s) loaded ({shown}){refused}")
    return 0


def cmd_tasks_functionalize(args: argparse.Namespace) -> int:
    from kernelvault.toolchain.case_scale import scale_cases
    from kernelvault.toolchain.functionalize import FunctionalizeError, functionalize, write_conversion
    from kernelvault.toolchain.tasks import load_tasks

    out = Path(args.out)
    if out.exists() and (not out.is_dir() or any(out.iterdir())):
        raise UsageError(f"--out {out} must be an empty folder or absent (nothing is overwritten)")
    loaded = load_tasks_or_exit(args.path)
    modules = [task for task in loaded.tasks if task.entry is None]
    skipped = len(loaded.tasks) - len(modules)
    converted, refused = 0, 0
    for number, task in enumerate(modules, 1):
        try:
            scaled = scale_cases(task, args.case_scale)
        except ValueError as error:
            raise UsageError(str(error)) from None
        try:
            conversion = functionalize(task, scaled)
        except FunctionalizeError as error:
            refused += 1
            print(f"REFUSED {task.name} [{number}/{len(modules)}]: {error}", flush=True)
            continue
        path = write_conversion(conversion, out)
        converted += 1
        print(f"ok      {task.name} -> {path.name} ({', '.join(conversion.arguments)}; outputs equal on "
              f"{conversion.cases_checked} case(s)) [{number}/{len(modules)}]", flush=True)  # fmt: skip
    if converted:  # what was written loads as function tasks
        reloaded = load_tasks(out)
        for where, why in reloaded.errors:
            print(f"INVALID {where}: {why}")
        converted -= len(reloaded.errors)
    print(f"{converted} of {len(modules)} module task(s) rewritten as functions into {out}, {refused} refused"
          + (f"; {skipped} already function or kernel tasks, left out" if skipped else ""))  # fmt: skip
    return 0 if converted == len(modules) - refused else 1


def register(commands: argparse._SubParsersAction) -> None:
    tasks = commands.add_parser("tasks", help="inspect task suites")
    tasks_commands = tasks.add_subparsers(
        dest="tasks_command", required=True, metavar="{check,functionalize,list}"
    )
    check = tasks_commands.add_parser(
        "check", help="run every reference and report broken or degenerate ones"
    )
    check.add_argument(
        "path",
        nargs="?",
        type=task_suite,
        help="task file, folder, KernelBench tree or hub:ORG/NAME[@vX.Y.Z] (default: bundled)",
    )
    check.add_argument("--performance", action="store_true", help="also run the (large) performance cases")
    check.add_argument("--workers", type=int, default=2)
    check.add_argument(
        "--platform", choices=PLATFORMS,
        help="where the references run (default: detect a GPU, else cpu under Triton's interpreter)",
    )  # fmt: skip
    check.add_argument(
        "--case-scale", type=float, default=1.0, metavar="F",
        help="multiply the tasks' large sizes by F in (0, 1] (ints >= 256: batch, features, spatial extents) to "
        "check a GPU-sized suite on a CPU in minutes; kernel sizes, channels and strides keep their values",
    )  # fmt: skip
    check.set_defaults(handler=cmd_tasks_check)
    rewrite = tasks_commands.add_parser(
        "functionalize", help="rewrite module tasks in the function form (parameters and buffers as inputs)"
    )
    rewrite.add_argument(
        "path", nargs="?", type=task_suite, help="task file, folder or KernelBench tree (default: bundled)"
    )
    rewrite.add_argument("--out", required=True, help="folder for the function-form files (empty or absent)")
    rewrite.add_argument(
        "--case-scale", type=float, default=1.0, metavar="F",
        help="check each rewrite on the cases scaled by F (as tasks check does); the files keep the task's sizes",
    )  # fmt: skip
    rewrite.set_defaults(handler=cmd_tasks_functionalize)
    listing = tasks_commands.add_parser("list", help="list the tasks of a suite")
    listing.add_argument(
        "path", nargs="?", type=task_suite,
        help="task file, folder, KernelBench tree or hub:ORG/NAME[@vX.Y.Z] (default: bundled)",
    )  # fmt: skip
    listing.set_defaults(handler=cmd_tasks_list)

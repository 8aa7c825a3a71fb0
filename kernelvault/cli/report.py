"""`kernelvault report`: evaluation runs side by side (`kernelvault.pipelines.eval_report` writes them)."""

from __future__ import annotations

import argparse
from pathlib import Path

from kernelvault.cli.common import (
    UsageError,
)
from kernelvault.pipelines.eval_report import ReportInputError, write_report


def register(commands: argparse._SubParsersAction) -> None:
    parser = commands.add_parser("report", help="compare evaluation runs side by side (HTML and Markdown)")
    parser.add_argument(
        "run_dirs", nargs="+", metavar="RUN_DIR", help="folders written by `kernelvault eval`"
    )
    parser.add_argument("--out", required=True, help="folder for report.html, report.md and plots/")
    parser.add_argument("--title", default="KernelVault evaluation report")
    parser.set_defaults(handler=cmd_report)


def cmd_report(args: argparse.Namespace) -> int:
    try:
        files = write_report([Path(p) for p in args.run_dirs], Path(args.out), args.title)
    except (ReportInputError, FileNotFoundError) as error:
        raise UsageError(str(error)) from None
    print(f"report: {files.html.resolve()}")
    print(
        f"markdown: {files.markdown.resolve()} ({len(files.plots)} plots in {files.plots[0].parent.resolve()})"
    )
    return 0

"""The `kernelvault` command line: one module per command, each with `register(commands)` and its handler.

Usage errors (a missing file, a bad choice, a platform this machine cannot serve) print one line and exit 2;
argparse's own end with a pointer to the command's --help instead of the whole usage. Files named on the
command line are checked while parsing (`common.existing_file` and friends), before any command imports
torch. A candidate that fails verification is a result, not an error: exit 0. Library modules never import this
package (tests/test_packaging.py checks it): the commands call the library, not the other way round.
"""

from __future__ import annotations

import argparse
import re
import sys
from pathlib import Path

from kernelvault import interrupts
from kernelvault.cli import (
    corpus,
    evaluate,
    publish,
    release,
    report,
    rl,
    rocm_api,
    sft,
    stats,
    tasks,
    verify,
)
from kernelvault.cli.common import ArgumentUsageError, CommandParser, UsageError

__all__ = ["UsageError", "build_parser", "main"]


def build_parser() -> argparse.ArgumentParser:
    parser = CommandParser(prog="kernelvault", description="Execution-verified GPU kernel corpora.")
    parser.add_argument("-V", "--version", action="version", version=f"kernelvault {installed_version()}")
    commands = parser.add_subparsers(dest="command", required=True)
    for command in (verify, corpus, release, publish, stats, tasks, evaluate, report, sft, rl, rocm_api):
        command.register(commands)
    return parser


def installed_version() -> str:
    """The installed distribution's version; in a checkout that is not installed, pyproject.toml's."""
    from importlib.metadata import PackageNotFoundError, version

    try:
        return version("kernelvault")
    except PackageNotFoundError:  # (tomllib is 3.11+: the one line is read by pattern)
        pyproject = Path(__file__).resolve().parents[2] / "pyproject.toml"
        try:
            found = re.search(r'^version\s*=\s*"([^"]+)"', pyproject.read_text(), re.MULTILINE)
        except OSError:
            found = None
        return found.group(1) if found else "unknown"


def main(argv: list[str] | None = None) -> int:
    """The command line: `argv` (None: the process's own arguments). Returns the exit status; as the process's entry
    point, a status of 128 + n (stopped by signal n) ends the process at once (`interrupts.exit_now`)."""
    code = _run(argv)
    if argv is None and code >= 128:
        interrupts.exit_now(code)
    return code


def _run(argv: list[str] | None) -> int:
    interrupts.install()
    try:
        args = build_parser().parse_args(argv)
        return args.handler(args)
    except ArgumentUsageError as error:  # the line that matters, and where the rest is
        print(f"kernelvault: error: {error} (see `{error.command} --help`)", file=sys.stderr)
        return 2
    except UsageError as error:
        print(f"kernelvault: error: {error}", file=sys.stderr)
        return 2
    except KeyboardInterrupt:
        print("kernelvault: interrupted", file=sys.stderr)
        return 130

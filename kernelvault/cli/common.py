"""What every command shares: the usage error (one line, exit 2), the parser that reports its own errors so,
the checks of file arguments, the platform and agent options, the verifier they build, and reading the task
suites the user named.

File arguments are checked by the parser (`existing_file`, `existing_path`, `task_suite`): a path that is not
there is reported before a command imports torch and the rest, in a fraction of a second.
"""

from __future__ import annotations

import argparse
import sys
from collections.abc import Callable
from pathlib import Path
from typing import NoReturn

from kernelvault.contracts import PLATFORMS


class UsageError(Exception):
    """Bad input from the user: reported as one line, exit code 2."""


class ArgumentUsageError(UsageError):
    """What argparse found wrong with the command line; `command` is the (sub)command whose --help helps."""

    def __init__(self, message: str, command: str) -> None:
        super().__init__(message)
        self.command = command


class CommandParser(argparse.ArgumentParser):
    """argparse's parser, but a usage error is one line and a pointer to --help (raised, so `main` reports it
    and returns 2), not the whole usage text ahead of the line that matters. Subcommands' parsers are made
    by this class too (`add_subparsers` uses the parent's class)."""

    def error(self, message: str) -> NoReturn:
        raise ArgumentUsageError(message, self.prog)


def existing_file(what: str) -> Callable[[str], Path]:
    """An argparse type: a path to a file that exists (`what` names it in the error)."""

    def check(text: str) -> Path:
        path = Path(text).expanduser()
        if not path.exists():
            raise argparse.ArgumentTypeError(f"{what} not found: {text}")
        if not path.is_file():
            raise argparse.ArgumentTypeError(f"{what} {text} is a folder, not a file")
        return path

    check.__name__ = what  # argparse names the type in some messages
    return check


def existing_path(what: str) -> Callable[[str], str]:
    """An argparse type: a file or folder that exists (kept as the string given)."""

    def check(text: str) -> str:
        if not Path(text).expanduser().exists():
            raise argparse.ArgumentTypeError(f"{what} not found: {text}")
        return text

    check.__name__ = what
    return check


def task_suite(text: str) -> str:
    """An argparse type: a task suite (`hub:...` and `bundled:...` are checked when loaded; a path must exist)."""
    if not text.startswith(("hub:", "bundled:")) and not Path(text).expanduser().exists():
        raise argparse.ArgumentTypeError(f"no task file, folder or dataset at {text}")
    return text


def add_platform_options(parser: argparse.ArgumentParser) -> None:
    parser.add_argument(
        "--platform", choices=PLATFORMS, help="force the platform (default: detect a GPU, else cpu)"
    )
    parser.add_argument("--arch", help="target architecture (default: the GPU's, or gfx942 on cpu)")
    parser.add_argument(
        "--timeout", type=float, default=60.0, help="wall-clock seconds per candidate (default 60)"
    )


def add_agent_options(parser: argparse.ArgumentParser) -> None:
    """The model-driven run's sampling, budget and concurrency options (`corpus` and `eval`)."""
    parser.add_argument(
        "--allow-unjailed",
        action="store_true",
        help="verify model-written kernels even where this machine cannot build an OS jail (they then run as "
        "plain processes; every row records isolation=process)",
    )
    parser.add_argument(
        "--keep-optimising",
        action="store_true",
        help="after a correct kernel, keep asking for faster ones until the turn budget is spent",
    )
    parser.add_argument("--concurrency", type=int, default=16, help="model requests in flight (default 16)")
    parser.add_argument("--temperature", type=float, default=0.7)
    parser.add_argument("--top-p", type=float, default=0.95)
    parser.add_argument(
        "--max-new-tokens", type=int, default=8192, help="max tokens per answer (default 8192)"
    )
    parser.add_argument("--max-requests", type=int, help="request budget of the run")
    parser.add_argument("--max-tokens", type=int, help="token budget of the run (prompt + completion)")
    parser.add_argument(
        "--workers", type=int, help="verifications in flight (default: cores on cpu, 1 per GPU)"
    )


def build_verifier(args: argparse.Namespace):  # noqa: ANN202 - imported lazily to keep --help fast
    from kernelvault.toolchain.verify import Verifier, VerifyConfig

    try:
        return Verifier(VerifyConfig(platform=args.platform, arch=args.arch, timeout_s=args.timeout))
    except ValueError as error:
        raise UsageError(str(error)) from None


def load_tasks_or_exit(spec: str | None):  # noqa: ANN202
    from kernelvault.toolchain.tasks import TaskFormatError, load_tasks

    try:
        loaded = load_tasks(spec)
    except TaskFormatError as error:
        raise UsageError(str(error)) from None
    for where, why in loaded.errors:
        print(f"skipped task {where}: {why}", file=sys.stderr)
    for where, note in loaded.notes:
        print(f"note, task {where}: {note}", file=sys.stderr)
    if not loaded.tasks:
        raise UsageError(f"no valid tasks in {spec or 'the bundled suite'}")
    return loaded


def eval_tasks(spec: str | None) -> list:  # noqa: ANN202
    if not spec:
        return []
    loaded = load_tasks_or_exit(spec)
    return list(loaded.tasks)


def add_qa_release_options(parser: argparse.ArgumentParser) -> None:
    parser.add_argument("--decontaminate-qa", metavar="FILE_OR_FOLDER", type=existing_path("QA evaluation set"),
                        help="QA evaluation questions (YAML list or JSONL with `question`): matching qa entries are dropped")  # fmt: skip
    parser.add_argument(
        "--no-sft-qa", action="store_true", help="keep verified QA entries out of the sft config"
    )


def eval_questions(spec: str | None) -> list[str]:
    """The questions of a QA evaluation set (entries with at least a `question`)."""
    if not spec:
        return []
    from kernelvault.pipelines.qa_job import QAFileError, read_question_texts

    try:
        return read_question_texts(Path(spec))
    except QAFileError as error:
        raise UsageError(str(error)) from None


def build_release_printed(args: argparse.Namespace, dataset: Path, out: Path) -> None:
    """`release` and `publish`: the release folder from a corpus, with its report printed; bad input is one line."""
    from kernelvault.corpus.release import build_release

    try:
        report = build_release(dataset, out, eval_tasks=eval_tasks(args.decontaminate),
                               eval_questions=eval_questions(args.decontaminate_qa), sft_qa=not args.no_sft_qa)  # fmt: skip
    except ValueError as error:  # no shards to release: the input's fault, said in one line
        raise UsageError(str(error)) from None
    for line in report.lines():
        print(line)


def attempt_tables(dataset: Path) -> dict:  # noqa: ANN202
    """config -> attempts table, for a corpus folder (data/<target>/) or a release folder (<target>/)."""
    from kernelvault.corpus.schema import ATTEMPT_CONFIGS
    from kernelvault.corpus.stats import load_attempts

    tables = {}
    for config in ATTEMPT_CONFIGS:  # a corpus folder has data/<target>/; a release, every config's folder
        for folder in (dataset / "data" / config, dataset / config):
            if folder.is_dir() and any(folder.glob("*.parquet")):
                tables[config] = load_attempts(folder)
                break
    if not tables:
        raise UsageError(
            f"no attempt shards in {dataset} (expected data/triton/ or triton/ with .parquet files)"
        )
    return tables

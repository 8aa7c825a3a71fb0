"""`kernelvault release`: a release folder (configs) from a corpus."""

from __future__ import annotations

import argparse
from pathlib import Path

from kernelvault.cli.common import UsageError, add_qa_release_options, build_release_printed, task_suite


def cmd_release(args: argparse.Namespace) -> int:
    dataset, out = Path(args.dataset), Path(args.out)
    if not dataset.is_dir():
        raise UsageError(
            f"--dataset {dataset} is not a folder (a corpus folder written by `kernelvault corpus`)"
        )
    if out.exists() and (not out.is_dir() or any(out.iterdir())):
        raise UsageError(f"release folder {out} is not empty")
    from kernelvault.corpus.card import write_release_card

    build_release_printed(args, dataset, out)
    # The card's `configs:` header is what lets `datasets` load each config of the folder by name.
    write_release_card(out, license=args.license)
    print(f"release written to {out.resolve()}")
    print(f'load with: datasets.load_dataset("{out}", "sft")')
    return 0


def register(commands: argparse._SubParsersAction) -> None:
    release = commands.add_parser(
        "release", help="build a release folder (configs triton/hip/sft/rl) from a corpus"
    )
    release.add_argument("--dataset", required=True, help="corpus folder written by `kernelvault corpus`")
    release.add_argument("--out", required=True, help="release folder to write (must be empty or absent)")
    release.add_argument(
        "--decontaminate",
        type=task_suite,
        help="evaluation task set to drop from the release (same forms as --tasks)",
    )
    release.add_argument("--license", default="apache-2.0", help="the license the dataset card states")
    add_qa_release_options(release)
    release.set_defaults(handler=cmd_release)

"""`kernelvault stats`: statistics of a corpus or release folder."""

from __future__ import annotations

import argparse
from pathlib import Path

from kernelvault.cli.common import UsageError, attempt_tables


def cmd_stats(args: argparse.Namespace) -> int:
    from kernelvault.corpus.stats import compute_stats, format_table, write_plots

    if args.plots and Path(args.plots).exists() and not Path(args.plots).is_dir():
        raise UsageError(f"--plots {args.plots} is a file: it names the folder the plots go into")
    tables = attempt_tables(Path(args.dataset))
    stats = [compute_stats(table, config) for config, table in tables.items()]
    print(format_table(stats, markdown=args.markdown))
    if args.plots:
        for path in write_plots(tables, stats, Path(args.plots)):
            print(f"plot: {path}")
    return 0


def register(commands: argparse._SubParsersAction) -> None:
    stats = commands.add_parser("stats", help="statistics of a corpus or release folder")
    stats.add_argument("dataset", help="corpus folder (data/<target>/) or release folder (<target>/)")
    stats.add_argument("--plots", help="write PNG plots into this folder")
    stats.add_argument("--markdown", action="store_true", help="print a Markdown table")
    stats.set_defaults(handler=cmd_stats)

"""`kernelvault publish`: a tagged dataset version on the Hub or the local hub."""

from __future__ import annotations

import argparse
from pathlib import Path

from kernelvault.cli.common import (
    UsageError,
    attempt_tables,
    eval_tasks,
)


def cmd_publish(args: argparse.Namespace) -> int:
    import tempfile

    from kernelvault.corpus.card import build_card
    from kernelvault.corpus.hub import PublishError, check_repo_id, check_version, hub_from_env, publish
    from kernelvault.corpus.release import build_release
    from kernelvault.corpus.stats import compute_stats, per_model_stats, write_plots

    try:
        check_version(args.version)
        check_repo_id(args.repo)
    except (ValueError, PublishError) as error:
        raise UsageError(str(error)) from None
    dataset = Path(args.dataset)
    if not dataset.is_dir():
        raise UsageError(f"dataset folder not found: {dataset}")
    hub = hub_from_env(args.remote or None)
    tag = f"v{args.version}"
    try:
        if tag in hub.versions(args.repo):  # refuse before building anything
            raise UsageError(
                f"{args.repo} already has version {tag}; versions are immutable, choose a new one"
            )
    except PublishError as error:
        raise UsageError(str(error)) from None
    with tempfile.TemporaryDirectory(prefix="kv-release-") as temporary:
        release = Path(temporary) / "release"
        try:
            report = build_release(dataset, release, eval_tasks=eval_tasks(args.decontaminate))
        except ValueError as error:
            raise UsageError(str(error)) from None
        for line in report.lines():
            print(line)
        tables = attempt_tables(release)
        stats = [compute_stats(table, config) for config, table in tables.items()]
        plots = write_plots(tables, stats, release / "plots")
        model_stats = [column for table in tables.values() for column in per_model_stats(table)]
        build_card(release, args.repo, args.version, stats, plots, license=args.license,
                   model_stats=model_stats).save(release / "README.md")  # fmt: skip
        try:
            result = publish(release, args.repo, args.version, hub)
        except PublishError as error:
            raise UsageError(str(error)) from None
    print(
        f"published {result.repo_id} {result.tag} ({result.files} files, commit {result.commit[:12]}) at {result.url_or_path}"
    )
    print(f'load with: datasets.load_dataset("{result.repo_id}", "triton", revision="{result.tag}")'
          if args.remote else
          f'load with: datasets.load_dataset(str(LocalHub().checkout("{result.repo_id}", "{result.tag}")), "triton")')  # fmt: skip
    return 0


def register(commands: argparse._SubParsersAction) -> None:
    publish = commands.add_parser("publish", help="publish a corpus as a tagged dataset version")
    publish.add_argument("--dataset", required=True, help="corpus folder written by `kernelvault corpus`")
    publish.add_argument("--repo", required=True, help="dataset repo id, ORG/NAME")
    publish.add_argument("--version", required=True, help="semantic version X.Y.Z (tagged vX.Y.Z)")
    publish.add_argument("--decontaminate", help="evaluation task set to drop before publishing")
    publish.add_argument("--license", default="apache-2.0")
    publish.add_argument(
        "--remote",
        action="store_true",
        help="the Hugging Face Hub (HF_TOKEN, HF_ENDPOINT) instead of the local hub folder (KV_HUB_DIR)",
    )
    publish.set_defaults(handler=cmd_publish)

"""`kernelvault publish`: a tagged dataset version on the Hub or the local hub."""

from __future__ import annotations

import argparse
from pathlib import Path

from kernelvault.cli.common import UsageError, add_qa_release_options, build_release_printed, task_suite


def publish_target(to: str | None, repo: str | None, version: str | None) -> tuple[str, str]:
    """The repo and version to publish: `--to hub:ORG/NAME@vX.Y.Z` (how every command names a version), or the
    older `--repo ORG/NAME --version X.Y.Z`; both given must agree."""
    if to is None:
        if not (repo and version):
            raise UsageError(
                "name the version to publish: --to hub:ORG/NAME@vX.Y.Z (or --repo and --version)"
            )
        return repo.removeprefix("hub:"), version
    named, at, tag = to.removeprefix("hub:").partition("@")
    if not to.startswith("hub:") or not at or not tag:
        raise UsageError(f"--to {to}: a version is named hub:ORG/NAME@vX.Y.Z")
    named_version = tag.removeprefix("v")
    if (repo and repo.removeprefix("hub:") != named) or (
        version and version.removeprefix("v") != named_version
    ):
        raise UsageError(f"--to {to} and --repo/--version name different versions")
    return named, named_version


def cmd_publish(args: argparse.Namespace) -> int:
    import tempfile

    from kernelvault.corpus.card import write_release_card
    from kernelvault.hub import PublishError, check_repo_id, check_version, hub_from_env, publish

    repo, version = publish_target(args.to, args.repo, args.version)
    try:
        check_version(version)
        check_repo_id(repo)
    except (ValueError, PublishError) as error:
        raise UsageError(str(error)) from None
    dataset = Path(args.dataset)
    if not dataset.is_dir():
        raise UsageError(f"dataset folder not found: {dataset}")
    hub = hub_from_env(args.remote or None)
    tag = f"v{version}"
    try:
        if tag in hub.versions(repo):  # refuse before building anything
            raise UsageError(f"{repo} already has version {tag}; versions are immutable, choose a new one")
    except PublishError as error:
        raise UsageError(str(error)) from None
    with tempfile.TemporaryDirectory(prefix="kv-release-") as temporary:
        release = Path(temporary) / "release"
        build_release_printed(args, dataset, release)
        write_release_card(release, repo, version, license=args.license)
        try:
            result = publish(release, repo, version, hub)
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
    publish.add_argument(
        "--to", help="the version to publish, hub:ORG/NAME@vX.Y.Z (as sft, rl and tasks name it)"
    )
    publish.add_argument("--repo", help="dataset repo id, ORG/NAME (the older form, with --version)")
    publish.add_argument(
        "--version", help="semantic version X.Y.Z, tagged vX.Y.Z (the older form, with --repo)"
    )
    publish.add_argument(
        "--decontaminate", type=task_suite, help="evaluation task set to drop before publishing"
    )
    publish.add_argument("--license", default="apache-2.0")
    publish.add_argument(
        "--remote",
        action="store_true",
        help="the Hugging Face Hub (HF_TOKEN, HF_ENDPOINT) instead of the local hub folder (KV_HUB_DIR)",
    )
    add_qa_release_options(publish)
    publish.set_defaults(handler=cmd_publish)

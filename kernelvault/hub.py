"""Publishing a release folder as a dataset version: one commit holding the whole release, plus a tag.

A version is `X.Y.Z`; its tag is `vX.Y.Z`, and `datasets.load_dataset(repo, config, revision=tag)` is the
contract with downstream jobs. Tags are never moved: publishing a version whose tag exists is refused.
Each commit replaces the repo's content with the release (files of an older release that the new one
lacks are deleted in the same commit), so a config's `train-*.parquet` glob never picks up stale shards.
Hidden files and folders of the release (a shard writer's `.name.tmp`) are not published.

Two hubs with one method set (`publish`, `versions`):
- `LocalHub`, the default: a folder with the Hub's layout, each dataset repo `ORG/NAME` a git repository at
  `<root>/datasets/ORG/NAME`, so everything works offline. `checkout` materialises a revision as a plain
  read-only folder that `datasets.load_dataset(str(path), config)` reads. The repository's own folder holds
  no release files (`_empty_work_tree` says why): loading it directly fails instead of returning the
  latest version whatever revision was asked for.
- `RemoteHub`: the Hugging Face Hub (or any endpoint speaking its API) through `huggingface_hub.HfApi`.
  The token comes from the `HF_TOKEN` environment variable only; it is read when a request is made, never
  stored on the object, written to disk, logged or put into an error message.

What this does not do: it does not lock a repo against two publishers at once (git or the Hub refuses
the second tag, but a LocalHub work tree could be mixed), and it does not check that the release's card
lists the configs it contains (corpus.card builds the card from the folder, which does).
"""

from __future__ import annotations

import os
import re
import shutil
import subprocess
import tarfile
import tempfile
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING

from packaging.version import InvalidVersion, Version

if TYPE_CHECKING:
    from huggingface_hub import HfApi

REPO_ID_PATTERN = re.compile(r"[A-Za-z0-9][A-Za-z0-9._-]*/[A-Za-z0-9][A-Za-z0-9._-]*")
DEFAULT_LOCAL_HUB = Path.home() / ".cache" / "kernelvault" / "hub"


class PublishError(RuntimeError):
    """A release could not be published (bad version, existing tag, git or Hub failure): one line."""


@dataclass(frozen=True)
class PublishResult:
    repo_id: str
    version: str  # "X.Y.Z"
    tag: str  # "vX.Y.Z"
    commit: str  # the full commit id the tag points to
    files: int  # files in the release (= files in the repo at that commit)
    url_or_path: str  # the repo's folder (LocalHub) or its page at the tag (RemoteHub)


def parse_version(text: str) -> Version | None:
    """`X.Y.Z` as a `packaging` version; None for anything else: a `v` prefix, a pre-, post- or dev release, a
    local part, an epoch, leading zeros (packaging reads them, and would write `01.2.3` back as `1.2.3`)."""
    try:
        parsed = Version(text)
    except InvalidVersion:
        return None
    if len(parsed.release) != 3 or parsed.epoch or parsed.base_version != text:
        return None
    return parsed


def check_version(version: str) -> str:
    """The tag of a version `X.Y.Z` (`vX.Y.Z`); anything else is a one-line ValueError."""
    if parse_version(version) is None:
        hint = f" (without the v: {version[1:]})" if version[:1] == "v" else ""
        raise ValueError(f"version must be X.Y.Z with numbers, got {version!r}{hint}")
    return f"v{version}"


def check_repo_id(repo_id: str) -> tuple[str, str]:
    if not REPO_ID_PATTERN.fullmatch(repo_id) or ".." in repo_id:
        raise ValueError(f"repo id must be ORG/NAME (letters, digits, . _ -), got {repo_id!r}")
    org, name = repo_id.split("/")
    return org, name


def release_files(release_dir: Path) -> list[Path]:
    """The files of a release relative to its root, sorted; hidden files and folders are left out."""
    release_dir = Path(release_dir)
    if not release_dir.is_dir():
        raise ValueError(f"no release folder at {release_dir}")
    files = sorted(
        path.relative_to(release_dir)
        for path in release_dir.rglob("*")
        if path.is_file() and not any(part.startswith(".") for part in path.relative_to(release_dir).parts)
    )
    if not files:
        raise ValueError(f"release folder {release_dir} is empty")
    return files


def _sorted_versions(tags: list[str]) -> list[str]:
    """The version tags (`vX.Y.Z`) among a repo's tags, oldest first; other tags are left out."""
    versions = {tag: parse_version(tag[1:]) for tag in tags if tag.startswith("v")}
    return sorted(
        (tag for tag, version in versions.items() if version is not None), key=lambda tag: versions[tag]
    )


def _empty_work_tree(repo: Path) -> None:
    """Everything of a repo's folder but its `.git`: the versions live in git, not in the folder.

    A repo's work tree is kept empty between publishes because `datasets.load_dataset(<folder>, config,
    revision=tag)` ignores `revision` for a local folder: a work tree holding the latest release made a load
    of v0.1.0 silently return v0.2.0's rows. With nothing in the folder, such a load fails; a version is
    read from `checkout(repo, tag)`, which every loader of the project uses.
    """
    for entry in repo.iterdir():
        if entry.name == ".git":
            continue
        if entry.is_dir() and not entry.is_symlink():
            shutil.rmtree(entry)
        else:
            entry.unlink()


class LocalHub:
    """Dataset repos as git repositories under one folder; tags are versions."""

    def __init__(self, root: Path | None = None) -> None:
        self.root = Path(root or os.environ.get("KV_HUB_DIR") or DEFAULT_LOCAL_HUB).expanduser()

    def __repr__(self) -> str:
        return f"LocalHub({str(self.root)!r})"

    def repo_path(self, repo_id: str) -> Path:
        org, name = check_repo_id(repo_id)
        return self.root / "datasets" / org / name

    def _git(self, repo: Path, *args: str) -> str:
        # Hooks and signing from the user's global config must not interfere with a local dataset repo.
        command = ["git", "-c", "core.hooksPath=/dev/null", "-C", str(repo), *args]
        result = subprocess.run(
            command, capture_output=True, text=True, check=False,
            env={**os.environ, "GIT_TERMINAL_PROMPT": "0", "LC_ALL": "C"},
        )  # fmt: skip
        if result.returncode != 0:
            reason = (result.stderr.strip().splitlines() or ["no message"])[-1]
            raise PublishError(f"git {args[0]} failed in {repo}: {reason}")
        return (result.stdout or "").strip()

    def _init(self, repo: Path) -> None:
        if (repo / ".git").exists():
            return
        repo.mkdir(parents=True, exist_ok=True)
        self._git(repo, "init", "-q")
        self._git(repo, "symbolic-ref", "HEAD", "refs/heads/main")
        # Local identity and settings, so publishing works on machines with no global git config.
        for key, value in (
            ("user.name", "KernelVault"),
            ("user.email", "kernelvault@localhost"),
            ("commit.gpgsign", "false"),
            ("tag.gpgsign", "false"),
            ("core.autocrlf", "false"),
        ):
            self._git(repo, "config", key, value)

    def _has_tag(self, repo: Path, tag: str) -> bool:
        try:
            self._git(repo, "rev-parse", "-q", "--verify", f"refs/tags/{tag}")
        except PublishError:
            return False
        return True

    def versions(self, repo_id: str) -> list[str]:
        """The version tags of a repo (`v0.1.0`, …), oldest first; [] for a repo that does not exist."""
        repo = self.repo_path(repo_id)
        if not (repo / ".git").exists():
            return []
        return _sorted_versions(self._git(repo, "tag", "--list", "v*").split())

    def publish(self, release_dir: Path, repo_id: str, version: str) -> PublishResult:
        tag = check_version(version)
        files = release_files(release_dir)
        repo = self.repo_path(repo_id)
        self._init(repo)
        if self._has_tag(repo, tag):
            raise PublishError(f"{repo_id} already has {tag} (at {repo}); published versions never change")
        _empty_work_tree(repo)  # (a repo published before its work tree was kept empty still holds one)
        for relative in files:
            (repo / relative).parent.mkdir(parents=True, exist_ok=True)
            shutil.copyfile(Path(release_dir) / relative, repo / relative)
        self._git(repo, "add", "-A")
        # --allow-empty: a release identical to the previous one is still its own version and commit.
        self._git(repo, "commit", "-q", "--no-verify", "--allow-empty", "-m", f"Release {tag}")
        self._git(repo, "tag", tag)
        commit = self._git(repo, "rev-parse", "HEAD")
        _empty_work_tree(repo)
        return PublishResult(repo_id, version, tag, commit, len(files), str(repo))

    def checkout(self, repo_id: str, revision: str) -> Path:
        """A read-only copy of the repo at `revision` (a tag, branch or commit), made once and reused.

        Tags are immutable, so a tag is materialised under its own name; any other revision is resolved to
        its commit and materialised under the commit id (a branch that moves gets a new folder).
        """
        org, name = check_repo_id(repo_id)
        repo = self.repo_path(repo_id)
        if not (repo / ".git").exists():
            raise FileNotFoundError(f"no dataset {repo_id} in the local hub at {self.root}")
        try:
            commit = self._git(repo, "rev-parse", "--verify", "-q", f"{revision}^{{commit}}")
        except PublishError:
            raise ValueError(
                f"{repo_id} has no revision {revision!r}; versions: {self.versions(repo_id)}"
            ) from None
        is_tag = self._has_tag(repo, revision) and re.fullmatch(r"[A-Za-z0-9][A-Za-z0-9._-]*", revision)
        # `datasets` keys the cache of a local folder by the folder's name and config: a bare "v0.1.0" would
        # make every dataset's v0.1.0 share one cache entry, so the name carries the repo too.
        target = self.root / "revisions" / org / name / f"{org}--{name}--{revision if is_tag else commit}"
        if target.is_dir():
            return target
        target.parent.mkdir(parents=True, exist_ok=True)
        staging = Path(tempfile.mkdtemp(prefix=f".{target.name}.", dir=target.parent))
        try:
            archive = subprocess.Popen(
                ["git", "-C", str(repo), "archive", "--format=tar", commit], stdout=subprocess.PIPE
            )
            assert archive.stdout is not None
            try:
                with tarfile.open(fileobj=archive.stdout, mode="r|") as stream:
                    stream.extractall(staging, filter="data")
            finally:
                archive.stdout.close()
            if archive.wait() != 0:
                raise PublishError(f"git archive failed for {repo_id} at {revision}")
            for path in staging.rglob("*"):
                if path.is_file():
                    path.chmod(0o444)
            try:
                staging.rename(target)
            except OSError:
                if not target.is_dir():  # not another process that materialised it first
                    raise
        finally:
            if staging.exists():
                shutil.rmtree(staging, ignore_errors=True)
        return target


class RemoteHub:
    """The Hugging Face Hub at `endpoint` (default: HF_ENDPOINT, else the library's). Token: HF_TOKEN."""

    def __init__(self, endpoint: str | None = None, private: bool | None = None) -> None:
        try:
            from huggingface_hub import constants
        except ImportError as error:
            raise ImportError(
                "publishing to the Hub needs huggingface_hub, one of kernelvault's own dependencies: "
                "reinstall kernelvault (pip install kernelvault)"
            ) from error
        self.endpoint = (endpoint or os.environ.get("HF_ENDPOINT") or constants.ENDPOINT).rstrip("/")
        # None: the Hub's default for the namespace (public unless the organisation says otherwise).
        self.private = private

    def __repr__(self) -> str:
        return f"RemoteHub({self.endpoint!r})"

    def _api(self, write: bool) -> HfApi:
        from huggingface_hub import HfApi

        token = os.environ.get("HF_TOKEN") or None
        if write and token is None:
            raise PublishError(
                "publishing to the Hugging Face Hub needs a write token in the HF_TOKEN environment variable"
            )
        # token=False, not None: never fall back to a token file on disk; HF_TOKEN is the only source.
        return HfApi(endpoint=self.endpoint, token=token or False)

    def _error(self, action: str, repo_id: str, error: Exception) -> PublishError:
        # huggingface_hub spreads one error over several lines (status, url, hint, server message): join them.
        message = " ".join(line.strip() for line in str(error).splitlines() if line.strip())[:500]
        message = message or type(error).__name__
        token = os.environ.get("HF_TOKEN")
        if token:  # defensive: servers sometimes echo request data back
            message = message.replace(token, "***")
        return PublishError(f"{action} {repo_id} at {self.endpoint} failed: {message}")

    def versions(self, repo_id: str) -> list[str]:
        from huggingface_hub.errors import HfHubHTTPError, RepositoryNotFoundError

        check_repo_id(repo_id)
        try:
            refs = self._api(write=False).list_repo_refs(repo_id, repo_type="dataset")
        except RepositoryNotFoundError:
            return []
        except HfHubHTTPError as error:
            raise self._error("listing the versions of", repo_id, error) from error
        return _sorted_versions([ref.name for ref in refs.tags])

    def publish(self, release_dir: Path, repo_id: str, version: str) -> PublishResult:
        from huggingface_hub import CommitOperationAdd, CommitOperationDelete
        from huggingface_hub.errors import HfHubHTTPError

        tag = check_version(version)
        check_repo_id(repo_id)
        files = release_files(release_dir)
        api = self._api(write=True)
        try:
            api.create_repo(repo_id, repo_type="dataset", exist_ok=True, private=self.private)
            refs = api.list_repo_refs(repo_id, repo_type="dataset")
            if tag in {ref.name for ref in refs.tags}:
                raise PublishError(
                    f"{repo_id} already has {tag} at {self.endpoint}; published versions never change"
                )
            paths = {relative.as_posix() for relative in files}
            try:
                existing = api.list_repo_files(repo_id, repo_type="dataset")
            except HfHubHTTPError as error:
                if error.response is None or error.response.status_code != 404:
                    raise
                existing = []  # a repo with no commit yet
            operations: list = [
                CommitOperationAdd(
                    path_in_repo=relative.as_posix(), path_or_fileobj=str(Path(release_dir) / relative)
                )
                for relative in files
            ]
            operations += [
                CommitOperationDelete(path_in_repo=path)
                for path in existing
                if path not in paths and path != ".gitattributes"  # the Hub's LFS rules stay
            ]
            # One atomic commit: large files go through LFS/Xet first (resumable), then the commit lands whole.
            info = api.create_commit(
                repo_id, operations, commit_message=f"Release {tag}", repo_type="dataset"
            )
            api.create_tag(repo_id, tag=tag, repo_type="dataset", revision=info.oid)
        except HfHubHTTPError as error:
            raise self._error("publishing to", repo_id, error) from error
        return PublishResult(
            repo_id, version, tag, info.oid, len(files), f"{self.endpoint}/datasets/{repo_id}/tree/{tag}"
        )


def hub_from_env(remote: bool | None = None) -> LocalHub | RemoteHub:
    """RemoteHub only when asked for (`remote=True`, or `KV_HUB=hf` when `remote` is None); else LocalHub."""
    if remote is None:
        remote = os.environ.get("KV_HUB", "").strip().lower() in {"hf", "huggingface", "remote"}
    return RemoteHub() if remote else LocalHub()


def publish(release_dir: Path, repo_id: str, version: str, hub: LocalHub | RemoteHub) -> PublishResult:
    """Publish `release_dir` as version `version` of dataset `repo_id`: one commit and the tag vX.Y.Z."""
    check_version(version)
    check_repo_id(repo_id)
    return hub.publish(Path(release_dir), repo_id, version)

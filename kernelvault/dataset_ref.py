"""One way to name a corpus dataset in every command: a folder, or `hub:ORG/NAME[@REVISION]`.

- A folder on disk: a corpus (`data/<target>/`) or a release (`<config>/`).
- `hub:ORG/NAME@v1.0.0`: that version of a dataset repo on the hub `KV_HUB` picks (`hub_from_env`: the local
  hub by default, the Hugging Face Hub with `KV_HUB=hf`); without `@REVISION`, the repo's latest version tag.

The older forms stay accepted: `ORG/NAME` (sft's `--dataset`) and a revision given on its own (sft's
`--revision`, rl's `dataset_revision`); one that contradicts the `@REVISION` of the name is refused.
A dataset of task programs is named the same way (`kernelvault.toolchain.tasks.load_hub_tasks`), with two
suffixes of its own: `hub:ORG/NAME@v1.0.0:SPLIT#COLUMN` picks the rows and the column that holds the code.
"""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path

from kernelvault.hub import LocalHub, check_repo_id, hub_from_env

FORMS = "a folder, or hub:ORG/NAME[@vX.Y.Z]"


@dataclass(frozen=True)
class DatasetRef:
    """A folder, or a repo on the hub with the revision asked for (None: the latest version tag). After `pin`,
    a repo of the local hub has both: the repo and revision it names, and the folder of its checkout."""

    folder: Path | None = None
    repo: str | None = None
    revision: str | None = None


def parse_dataset_ref(spec: str, revision: str | None = None, bare_repo: bool = True) -> DatasetRef:
    """What `spec` names; a one-line ValueError when it names nothing this project can load. `bare_repo`:
    whether `ORG/NAME` without `hub:` names a repo (sft's older form); elsewhere it is a missing folder."""
    if not spec:
        raise ValueError(f"no dataset given: {FORMS}")
    if not spec.startswith("hub:"):
        path = Path(spec).expanduser()
        if path.exists():
            if not path.is_dir():
                raise ValueError(f"{path} is a file, not a dataset folder ({FORMS})")
            if revision:
                raise ValueError(
                    f"a revision ({revision}) applies to dataset repos, not to the folder {path}"
                )
            return DatasetRef(folder=path)
        if not bare_repo:
            raise ValueError(f"no folder {path} ({FORMS})")
    repo, at, pinned = spec.removeprefix("hub:").partition("@")
    if at and not pinned:
        raise ValueError(f"dataset {spec!r} has nothing after @ ({FORMS})")
    try:
        check_repo_id(repo)
    except ValueError:
        raise ValueError(f"dataset {spec!r} is not a folder here and not a repo ({FORMS})") from None
    if pinned and revision and pinned != revision:
        raise ValueError(f"dataset {spec!r} names revision {pinned}, but {revision} was given as well")
    return DatasetRef(repo=repo, revision=pinned or revision)


def pin(ref: DatasetRef) -> DatasetRef:
    """A repo pinned to a version on the hub `KV_HUB` picks; a folder as it is.

    On the local hub: the checkout of the revision asked for, or of the latest version tag (`datasets` ignores
    `revision` for a local folder, so a version is read from its checkout). On the Hugging Face Hub: the
    revision asked for, else the latest version tag, else `main` (which moves). A version that is not there is
    a one-line ValueError.
    """
    if ref.repo is None:
        return ref
    hub = hub_from_env()
    versions = hub.versions(ref.repo)
    if not isinstance(hub, LocalHub):
        return DatasetRef(repo=ref.repo, revision=ref.revision or (versions[-1] if versions else "main"))
    if not versions:
        raise ValueError(f"no dataset {ref.repo} in the local hub at {hub.root} (publish one with "
                         "`kernelvault publish`, or set KV_HUB=hf for the Hugging Face Hub)")  # fmt: skip
    revision = ref.revision or versions[-1]
    try:
        folder = hub.checkout(ref.repo, revision)
    except (FileNotFoundError, ValueError) as error:
        raise ValueError(str(error)) from None
    return DatasetRef(folder=folder, repo=ref.repo, revision=revision)

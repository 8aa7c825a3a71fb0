"""One way to name a dataset in every command (issue #21): a folder, or `hub:ORG/NAME[@vX.Y.Z]`.

The older forms keep working (sft's `ORG/NAME` with `--revision`, rl's `hub:ORG/NAME` with `dataset_revision`),
and every form that names a hub repo reads the hub `KV_HUB` picks: the local hub by default.
"""

from __future__ import annotations

from pathlib import Path

import pyarrow as pa
import pyarrow.parquet as pq
import pytest

from kernelvault.dataset_ref import DatasetRef, parse_dataset_ref
from kernelvault.hub import LocalHub, publish

REPO = "kv-org/prompts"


def test_a_name_is_a_folder_or_a_repo_with_its_revision(tmp_path: Path) -> None:
    assert parse_dataset_ref(str(tmp_path)) == DatasetRef(folder=tmp_path)
    assert parse_dataset_ref(f"hub:{REPO}@v1.2.0") == DatasetRef(repo=REPO, revision="v1.2.0")
    assert parse_dataset_ref(f"hub:{REPO}") == DatasetRef(repo=REPO)
    # the older forms
    assert parse_dataset_ref(f"hub:{REPO}", revision="v1.0.0") == DatasetRef(repo=REPO, revision="v1.0.0")
    assert parse_dataset_ref(REPO, revision="v1.0.0") == DatasetRef(repo=REPO, revision="v1.0.0")
    assert parse_dataset_ref(f"hub:{REPO}@v1.0.0", revision="v1.0.0") == DatasetRef(
        repo=REPO, revision="v1.0.0"
    )


@pytest.mark.parametrize(
    ("spec", "revision", "bare_repo", "message"),
    [
        ("", None, True, "no dataset given"),
        (f"hub:{REPO}@v1.0.0", "v2.0.0", True, "names revision v1.0.0, but v2.0.0 was given as well"),
        (f"hub:{REPO}@", None, True, "nothing after @"),
        ("hub:not a repo", None, True, "is not a folder here and not a repo"),
        ("out/release", None, False, "no folder out/release"),  # rl: only hub: names a repo
        ("{folder}", "v1.0.0", True, "applies to dataset repos, not to the folder"),
        ("{file}", None, True, "is a file, not a dataset folder"),
    ],
)
def test_a_name_that_names_nothing_is_refused_in_one_line(
    tmp_path: Path, spec: str, revision: str | None, bare_repo: bool, message: str
) -> None:
    (tmp_path / "file.txt").write_text("x")
    spec = spec.format(folder=tmp_path, file=tmp_path / "file.txt")
    with pytest.raises(ValueError, match=message) as refused:
        parse_dataset_ref(spec, revision, bare_repo=bare_repo)
    assert "\n" not in str(refused.value)


def _release(root: Path, prompt: str) -> Path:
    (root / "rl").mkdir(parents=True)
    rows = {"prompt": [[{"role": "user", "content": prompt}]], "task_id": ["t0"], "task_name": ["relu"],
            "task_source": ["class Model: ..."], "target": ["triton"]}  # fmt: skip
    pq.write_table(pa.table(rows), root / "rl" / "train-00000-of-00001.parquet")
    return root


@pytest.fixture
def local_hub(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> LocalHub:
    monkeypatch.setenv("KV_HUB_DIR", str(tmp_path / "hub"))
    monkeypatch.delenv("KV_HUB", raising=False)
    hub = LocalHub()
    publish(_release(tmp_path / "r1", "first"), REPO, "0.1.0", hub)
    publish(_release(tmp_path / "r2", "second"), REPO, "0.2.0", hub)
    return hub


def test_sft_and_rl_read_the_version_a_name_pins_from_the_local_hub(local_hub: LocalHub) -> None:
    from kernelvault.rl.config import RLConfig
    from kernelvault.rl.train import _dataset_rows
    from kernelvault.sft.data import resolve_source

    for spec, revision in ((f"hub:{REPO}@v0.1.0", None), (REPO, "v0.1.0"), (f"hub:{REPO}", "v0.1.0")):
        source = resolve_source(spec, revision)
        assert (source.kind, source.location, source.revision) == ("local-hub", REPO, "v0.1.0")
        assert source.folder == local_hub.checkout(REPO, "v0.1.0")
    assert resolve_source(f"hub:{REPO}").revision == "v0.2.0"  # no revision: the latest version

    def prompts(**fields: str) -> list[str]:
        return [row["prompt"][0]["content"] for row in _dataset_rows(RLConfig(**fields))]

    assert prompts(dataset=f"hub:{REPO}@v0.1.0") == ["first"]
    assert prompts(dataset=f"hub:{REPO}", dataset_revision="v0.1.0") == ["first"]
    assert prompts(dataset=f"hub:{REPO}") == ["second"]


def test_a_repo_missing_from_the_local_hub_is_one_config_error(local_hub: LocalHub) -> None:
    from kernelvault.rl.config import ConfigError, RLConfig
    from kernelvault.rl.train import _dataset_rows

    with pytest.raises(ConfigError, match="no dataset kv-org/other in the local hub"):
        _dataset_rows(RLConfig(dataset="hub:kv-org/other@v0.1.0"))
    with pytest.raises(ConfigError, match="no revision 'v9.9.9'"):
        _dataset_rows(RLConfig(dataset=f"hub:{REPO}@v9.9.9"))

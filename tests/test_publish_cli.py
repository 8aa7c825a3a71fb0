"""`kernelvault publish` and `kernelvault stats` end to end, on the local hub folder."""

from __future__ import annotations

import contextlib
import io
from pathlib import Path

import datasets
import pytest
from corpus_rows import example_code, row_for

from kernelvault.cli import main
from kernelvault.corpus.shards import ShardWriter
from kernelvault.hub import LocalHub


def run_cli(*argv: str) -> tuple[int, str, str]:
    stdout, stderr = io.StringIO(), io.StringIO()
    with contextlib.redirect_stdout(stdout), contextlib.redirect_stderr(stderr):
        code = main(list(argv))
    return code, stdout.getvalue(), stderr.getvalue()


def write_corpus(folder: Path, run_id: str, rows: list[dict]) -> None:
    with ShardWriter(folder, "triton", run_id) as writer:
        writer.write_many(rows)


def test_published_versions_load_by_tag_for_every_config(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("KV_HUB_DIR", str(tmp_path / "hub"))
    monkeypatch.delenv("KV_HUB", raising=False)
    corpus = tmp_path / "corpus"
    write_corpus(corpus, "run1", [
        row_for("relu", example_code("relu"), True, 0, speedup=1.2),
        row_for("softmax", example_code("softmax"), True, 0, speedup=2.0),
        row_for("silu", example_code("relu"), False, 0),
    ])  # fmt: skip
    code, printed, _ = run_cli(
        "publish", "--dataset", str(corpus), "--repo", "acme/kernels", "--version", "0.1.0"
    )
    assert code == 0 and "published acme/kernels v0.1.0" in printed

    write_corpus(corpus, "run2", [row_for("silu", example_code("silu"), True, 1, speedup=1.1)])
    # the form every command names a version by (sft --dataset, rl dataset:, tasks hub:): --to
    code, printed, _ = run_cli("publish", "--dataset", str(corpus), "--to", "hub:acme/kernels@v0.2.0")
    assert code == 0 and "published acme/kernels v0.2.0" in printed

    hub = LocalHub(tmp_path / "hub")
    assert hub.versions("acme/kernels") == ["v0.1.0", "v0.2.0"]
    expected = {"v0.1.0": {"triton": 3, "sft": 2, "rl": 3, "rl_verl": 3},
                "v0.2.0": {"triton": 4, "sft": 3, "rl": 3, "rl_verl": 3}}  # fmt: skip
    # A cache of our own: `datasets` keys a local folder's cache on its name, here the tag.
    cache = str(tmp_path / "cache")
    for tag, configs in expected.items():
        path = str(hub.checkout("acme/kernels", tag))
        for config, rows in configs.items():
            splits = datasets.load_dataset(path, config, cache_dir=cache)  # every split the card lists
            assert sum(split.num_rows for split in splits.values()) == rows, (tag, config)
            # a task is held out: its prompts are the rl configs' validation split, its sft rows (where it has a
            # correct attempt) sft's test split; by tag too
            held = set(datasets.load_dataset(path, "rl", split="validation", cache_dir=cache)["task_name"])
            solved = {"v0.1.0": {"relu", "softmax"}, "v0.2.0": {"relu", "softmax", "silu"}}[tag]
            expected_splits = {"train"} | ({"validation"} if config.startswith("rl") else set())
            expected_splits |= {"test"} if config == "sft" and held & solved else set()
            assert len(held) == 1 and set(splits) == expected_splits, (tag, config)
    card = (hub.checkout("acme/kernels", "v0.2.0") / "README.md").read_text()
    assert "config_name: sft" in card and "v0.2.0" in card

    code, _, error = run_cli(
        "publish", "--dataset", str(corpus), "--repo", "acme/kernels", "--version", "0.2.0"
    )
    assert code == 2 and "already has version v0.2.0" in error
    code, _, error = run_cli(
        "publish", "--dataset", str(corpus), "--repo", "acme/kernels", "--version", "2.0"
    )
    assert code == 2 and error.count("\n") == 1
    code, _, error = run_cli("publish", "--dataset", str(corpus), "--to", "hub:acme/kernels")
    assert code == 2 and "hub:ORG/NAME@vX.Y.Z" in error and error.count("\n") == 1
    code, _, error = run_cli(
        "publish", "--dataset", str(corpus), "--to", "hub:acme/kernels@v0.3.0", "--version", "0.4.0"
    )
    assert code == 2 and "name different versions" in error
    assert LocalHub(tmp_path / "hub").versions("acme/kernels") == [
        "v0.1.0",
        "v0.2.0",
    ]  # nothing refused was written


def test_stats_prints_the_table_and_writes_plots(tmp_path: Path) -> None:
    corpus = tmp_path / "corpus"
    write_corpus(corpus, "run1", [row_for("relu", example_code("relu"), True, i, speedup=1.0 + i) for i in range(3)]
                 + [row_for("relu", example_code("silu"), False, 3)])  # fmt: skip
    code, printed, _ = run_cli("stats", str(corpus), "--plots", str(tmp_path / "plots"))
    assert code == 0
    assert "triton" in printed and "75" in printed  # 3 of 4 correct
    plots = sorted((tmp_path / "plots").glob("*.png"))
    assert len(plots) == 3 and all(p.read_bytes()[:8] == b"\x89PNG\r\n\x1a\n" for p in plots)

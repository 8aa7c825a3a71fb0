"""Corpus statistics, plots and the dataset card, on hand-made attempt rows with known outcomes."""

from __future__ import annotations

import math
from pathlib import Path

import pyarrow as pa
import pyarrow.parquet as pq
import pytest
import yaml
from huggingface_hub import DatasetCard

from kernelvault.contracts import Candidate, RewardBreakdown, RunEnvironment, Task, Verdict, content_hash
from kernelvault.corpus.card import KNOWN_CONFIGS, build_card, release_configs, size_category
from kernelvault.corpus.schema import (
    ATTEMPT_SCHEMA,
    SCHEMA_VERSION,
    SCHEMA_VERSION_KEY,
    SchemaVersionError,
    attempt_row,
)
from kernelvault.corpus.stats import (
    ConfigStats,
    compute_stats,
    format_table,
    load_attempts,
    per_model_stats,
    write_plots,
)
from kernelvault.toolchain.reward import graded_reward

PNG_SIGNATURE = b"\x89PNG\r\n\x1a\n"

# (compiled, correct, speedup, failure kind, platform, model): ten attempts with outcomes known by hand.
ATTEMPTS = [
    (False, False, None, "compile_error", "cpu", None),
    (False, False, None, "parse_error", "cpu", None),
    (True, False, None, "mismatch", "cpu", "m1"),
    (True, False, None, "runtime_error", "cpu", "m1"),
    (True, None, None, None, "cpu", "m1"),  # compiled where nothing could run it
    (True, True, 0.5, None, "cuda", "m1"),
    (True, True, 1.0, None, "cuda", "m1"),
    (True, True, 2.0, None, "cuda", "m1"),
    (True, True, 4.0, None, "cuda", "m1"),
    (True, True, None, None, "cpu", "m1"),  # correct under the interpreter, never timed
]
EXPECTED_REWARDS = [0.0, 0.0, 0.4, 0.4, 0.4, 1.4, 1.4, 1.4 + 0.375, 2.9, 1.4]


def attempt(index: int, compiled, correct, speedup, failure, platform, model, target="triton") -> dict:
    source = f"class Model:  # task {index % 7}\n    pass\n"
    task = Task(task_id=content_hash(source), name=f"task_{index % 7}", source=source, origin="bundled")
    code = f"class ModelNew:  # {index}\n    pass\n"
    reward = graded_reward(compiled, correct, speedup, failure)
    verdict = Verdict(
        task_id=task.task_id,
        target=target,
        candidate_hash=content_hash(code),
        code=code,
        compiled=compiled,
        correct=correct,
        failure_kind=failure,
        failure_message=failure,
        stages=(),
        speedup=speedup,
        environment=RunEnvironment(platform, "a device", "an arch"),
        reward=RewardBreakdown(reward.compile, reward.correct, reward.speed, reward.total),
    )
    candidate = Candidate(task.task_id, target, code, f"example:{index}")
    return attempt_row("run1", task, candidate, verdict, sample_index=index, model=model)


def attempts_table(target: str = "triton") -> pa.Table:
    rows = [attempt(i, *outcome, target=target) for i, outcome in enumerate(ATTEMPTS)]
    return pa.Table.from_pylist(rows, schema=ATTEMPT_SCHEMA)


def test_stats_of_known_attempts():
    stats = compute_stats(attempts_table(), "triton")
    assert (stats.attempts, stats.compiled, stats.correct, stats.correct_unknown) == (10, 8, 5, 1)
    assert stats.compile_rate == pytest.approx(0.8)
    assert stats.correct_rate == pytest.approx(0.5)
    assert stats.mean_reward == pytest.approx(sum(EXPECTED_REWARDS) / 10)
    # Sorted rewards 0 0 .4 .4 .4 1.4 1.4 1.4 1.775 2.9, linear interpolation between ranks.
    assert (stats.reward_p10, stats.reward_p50, stats.reward_p90) == pytest.approx((0.0, 0.9, 1.8875))
    # Four measured speedups (0.5, 1, 2, 4): the correct-but-untimed row is not one of them.
    assert stats.speedups == 4
    assert stats.speedup_geomean == pytest.approx(math.sqrt(2))
    assert stats.speedup_p50 == pytest.approx(1.5)
    assert (stats.faster_than_1x, stats.faster_than_1_5x, stats.faster_than_2x) == (0.5, 0.5, 0.25)
    assert stats.failures == {"compile_error": 1, "parse_error": 1, "mismatch": 1, "runtime_error": 1}
    assert stats.platforms == {"cpu": 6, "cuda": 4}
    assert stats.models == {"m1": 8, "examples": 2}
    assert stats.tasks == 7


def test_reward_histogram_counts_fixed_bins():
    histogram = compute_stats(attempts_table(), "triton").reward_histogram
    assert len(histogram) == 29  # width 0.1 over [0, 2.9]
    assert sum(histogram) == 10
    assert {index: count for index, count in enumerate(histogram) if count} == {
        0: 2,
        4: 3,
        14: 3,
        17: 1,
        28: 1,
    }


def test_empty_and_partial_tables_give_undefined_figures_not_zeros():
    empty = compute_stats(ATTEMPT_SCHEMA.empty_table(), "hip")
    assert empty.attempts == 0
    assert empty.compile_rate is None and empty.mean_reward is None and empty.speedup_geomean is None
    partial = compute_stats(pa.table({"compiled": [True, False], "reward": [0.4, 0.0]}), "triton")
    assert (partial.attempts, partial.compiled, partial.correct) == (2, 1, 0)
    assert partial.platforms == {} and partial.failures == {} and partial.speedups == 0
    assert "-" in format_table([empty, partial])


def test_table_has_one_column_per_config():
    stats = [compute_stats(attempts_table(), "triton"), compute_stats(ATTEMPT_SCHEMA.empty_table(), "hip")]
    text = format_table(stats)
    lines = text.splitlines()
    assert lines[0].split() == ["triton", "hip"]
    assert lines[3].split() == ["compiled", "8", "(80.0%)", "0", "(-)"]
    assert "speedup geomean" in text and "1.414x" in text
    assert any(
        line.split()[:2] == ["failure:", "mismatch"] and line.split()[2:] == ["1", "0"] for line in lines
    )
    markdown = format_table(stats, markdown=True).splitlines()
    assert markdown[0] == "|  | triton | hip |"
    assert markdown[1] == "|---|---|---|"


def test_plots_are_png_files_and_a_plot_with_nothing_to_draw_is_not_written(tmp_path):
    triton = attempts_table("triton")
    stats = [compute_stats(triton, "triton"), compute_stats(ATTEMPT_SCHEMA.empty_table(), "hip")]
    paths = write_plots(triton, stats, tmp_path / "plots")  # one table, split by target
    # hip has no attempts: no plot at all, rather than three charts saying "no data"
    assert sorted(path.name for path in paths) == [
        "triton-failures.png",
        "triton-reward.png",
        "triton-speedup.png",
    ]
    assert sorted(path.name for path in (tmp_path / "plots").iterdir()) == sorted(path.name for path in paths)
    for path in paths:
        content = path.read_bytes()
        assert content.startswith(PNG_SIGNATURE), path
        assert len(content) > 5000, path  # axes, title and labels, not a blank image


def test_a_corpus_verified_on_cpu_has_no_speedup_plot(tmp_path):
    # Issue #21: a CPU-only corpus published an empty speedup chart. Nothing was timed, so there is none.
    cpu_only = pa.Table.from_pylist(
        [attempt(i, *outcome) for i, outcome in enumerate(ATTEMPTS) if outcome[4] == "cpu"],
        schema=ATTEMPT_SCHEMA,
    )
    stats = [compute_stats(cpu_only, "triton")]
    names = sorted(path.name for path in write_plots({"triton": cpu_only}, stats, tmp_path / "plots"))
    assert names == ["triton-failures.png", "triton-reward.png"]


def test_load_attempts_reads_every_shard(tmp_path):
    table = attempts_table()
    (tmp_path / "a" / "b").mkdir(parents=True)
    pq.write_table(table.slice(0, 4), tmp_path / "a" / "train-0.parquet")
    pq.write_table(table.slice(4), tmp_path / "a" / "b" / "train-1.parquet")
    pq.write_table(table.slice(0, 1), tmp_path / "a" / ".train-2.parquet.tmp.parquet")  # hidden: skipped
    loaded = load_attempts(tmp_path / "a")
    assert loaded.num_rows == 10
    assert sorted(loaded.column("sample_index").to_pylist()) == list(range(10))
    assert load_attempts(tmp_path / "a" / "b").num_rows == 6


def test_newer_schema_version_names_the_file(tmp_path):
    pq.write_table(attempts_table(), tmp_path / "train-0.parquet")
    future = tmp_path / "sub" / "train-9.parquet"
    future.parent.mkdir()
    pq.write_table(attempts_table().replace_schema_metadata({SCHEMA_VERSION_KEY: b"99"}), future)
    with pytest.raises(SchemaVersionError) as info:
        load_attempts(tmp_path)
    assert str(future) in str(info.value) and "v99" in str(info.value)


def make_release(root: Path) -> tuple[list[ConfigStats], list[Path]]:
    (root / "triton").mkdir(parents=True)
    (root / "sft").mkdir()
    table = attempts_table()
    pq.write_table(table, root / "triton" / "train-00000-of-00001.parquet")
    sft = pa.table({
        "messages": [[{"role": "user", "content": "write a kernel"}, {"role": "assistant", "content": "ok"}]],
        "task_id": ["t0"],
    })  # fmt: skip
    pq.write_table(sft, root / "sft" / "train-00000-of-00001.parquet")
    stats = [compute_stats(table, "triton")]
    return stats, write_plots({"triton": table}, stats, root / "plots")


def test_card_metadata_lists_the_configs_present(tmp_path):
    stats, plots = make_release(tmp_path / "release")
    card = build_card(tmp_path / "release", "kv/kernels", "0.3.0", stats, plots)
    card.save(tmp_path / "release" / "README.md")
    loaded = DatasetCard.load(tmp_path / "release" / "README.md")
    assert loaded.data.configs == [
        {"config_name": "triton", "data_files": [{"split": "train", "path": "triton/train-*.parquet"}],
         "default": True},
        {"config_name": "sft", "data_files": [{"split": "train", "path": "sft/train-*.parquet"}]},
    ]  # no hip folder, no hip config; the plots folder is not a config  # fmt: skip
    assert loaded.data.license == "apache-2.0"
    assert loaded.data.language == ["en"]
    assert loaded.data.size_categories == ["n<1K"]  # 10 attempts + 1 sft row
    assert loaded.data.task_categories == ["text-generation"]
    assert set(loaded.data.tags) == {"code", "gpu-kernels", "triton", "hip"}
    metadata = yaml.safe_load((tmp_path / "release" / "README.md").read_text().split("---")[1])
    assert metadata["pretty_name"] == "kernels"
    assert release_configs(tmp_path / "release") == ["triton", "sft"]


def test_card_body_has_loading_schema_stats_plots_and_platforms(tmp_path):
    stats, plots = make_release(tmp_path / "release")
    text = build_card(tmp_path / "release", "kv/kernels", "0.3.0", stats, plots).text
    assert 'datasets.load_dataset("kv/kernels", "triton", revision="v0.3.0", split="train")' in text
    assert f"attempt schema v{SCHEMA_VERSION}" in text
    assert format_table(stats, markdown=True) in text
    assert "![triton-speedup](plots/triton-speedup.png)" in text
    assert "| `cpu` | 6 |" in text and "| `cuda` | 4 |" in text
    assert "claims more than was measured" in text


def test_card_refuses_plots_outside_the_release(tmp_path):
    stats, _ = make_release(tmp_path / "release")
    outside = write_plots({"triton": attempts_table()}, stats, tmp_path / "elsewhere")
    with pytest.raises(ValueError, match="outside the release folder"):
        build_card(tmp_path / "release", "kv/kernels", "0.3.0", stats, outside)


def test_a_release_of_several_models_answers_has_a_column_per_model(tmp_path):
    """`corpus --answers` over several models' answers: the card shows each model's figures."""
    rows = [attempt(i, *outcome[:5], "m2" if i % 2 else "m1") for i, outcome in enumerate(ATTEMPTS)]
    table = pa.Table.from_pylist(rows, schema=ATTEMPT_SCHEMA)
    by_model = {column.config: column for column in per_model_stats(table)}
    assert set(by_model) == {"m1", "m2"}
    assert by_model["m1"].attempts + by_model["m2"].attempts == len(ATTEMPTS)
    odd = [outcome for i, outcome in enumerate(ATTEMPTS) if i % 2]
    assert by_model["m2"].correct == sum(1 for outcome in odd if outcome[1] is True)
    assert per_model_stats(attempts_table()) == [], "one model (and examples) is not a comparison"
    stats, plots = make_release(tmp_path / "release")
    text = build_card(tmp_path / "release", "kv/kernels", "0.3.0", stats, plots,
                      model_stats=list(by_model.values())).text  # fmt: skip
    assert "### Per model" in text and format_table(list(by_model.values()), markdown=True) in text


def test_a_release_loads_without_a_config_name_and_every_known_config_is_described(tmp_path):
    datasets = pytest.importorskip("datasets")
    stats, plots = make_release(tmp_path / "release")
    build_card(tmp_path / "release", "kv/kernels", "0.3.0", stats, plots).save(
        tmp_path / "release" / "README.md"
    )
    # Before issue #21 the card had no default config, and loading without a name failed.
    rows = datasets.load_dataset(str(tmp_path / "release"), split="train", cache_dir=str(tmp_path / "cache"))
    assert rows.num_rows == 10 and "attempt_id" in rows.column_names  # the triton attempts, not sft
    assert size_category(999) == "n<1K" and size_category(1_000) == "1K<n<10K"
    assert size_category(62_153) == "10K<n<100K" and size_category(10**9) == "n>100M"
    assert "rl_verl" in KNOWN_CONFIGS and "additional data" not in KNOWN_CONFIGS["rl_verl"]

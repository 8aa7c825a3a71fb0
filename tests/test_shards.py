"""Corpus shards: zstd Parquet files written atomically, with a versioned schema."""

from __future__ import annotations

from pathlib import Path

import pyarrow as pa
import pyarrow.parquet as pq
import pytest

from kernelvault.contracts import (
    Candidate,
    CaseCheck,
    CaseTiming,
    RewardBreakdown,
    RunEnvironment,
    StageRecord,
    Task,
    TaskCase,
    Verdict,
    content_hash,
)
from kernelvault.corpus.schema import (
    ATTEMPT_SCHEMA,
    SCHEMA_VERSION,
    SCHEMA_VERSION_KEY,
    SchemaVersionError,
    attempt_row,
    check_schema,
)
from kernelvault.corpus.shards import ShardWriter
from kernelvault.toolchain.reward import graded_reward

RUN = "run1"  # no split keyword (train/test/val/dev/eval): datasets infers splits from names


def make_row(index: int, run_id: str = RUN) -> dict:
    """A corpus row for a hand-made attempt; `index` varies the task, the code and the outcome."""
    source = f"class Model:  # task {index}\n    pass\n"
    task = Task(
        task_id=content_hash(source),
        name=f"task_{index}",
        source=source,
        origin="bundled",
        category="activation",
        correctness_cases=(TaskCase("c0:dim=17", "correctness", {"dim": 17}),),
        performance_cases=(TaskCase("p0:defaults", "performance"),),
    )
    code = f"class ModelNew:  # candidate {index}\n    pass\n"
    candidate = Candidate(task.task_id, "triton", f"```python\n{code}```", f"example:{index}.py")
    correct = index % 2 == 0
    speedup = 1.0 + index if correct else None
    reward = graded_reward(True, correct, speedup, None if correct else "mismatch")
    verdict = Verdict(
        task_id=task.task_id,
        target="triton",
        candidate_hash=content_hash(code),
        code=code,
        compiled=True,
        correct=correct,
        failure_kind=None if correct else "mismatch",
        failure_message=None if correct else f"max abs error {index}",
        stages=(
            StageRecord("parse", "passed", 0.001, "fenced block 1 of 1"),
            StageRecord("check", "passed" if correct else "failed", 0.5 + index, ""),
        ),
        checks=(CaseCheck("c0:dim=17", 0, correct, max_abs_error=0.0 if correct else float(index)),),
        timings=(CaseTiming("p0:defaults", 1.0, 1.0 + index, 0.01, 0.02, 100),),
        speedup=speedup,
        kernels=(f"kernel_{index}",),
        environment=RunEnvironment("cuda", "NVIDIA H200", "sm_90", {"torch": "2.8"}),
        reward=RewardBreakdown(reward.compile, reward.correct, reward.speed, reward.total),
    )
    return attempt_row(run_id, task, candidate, verdict, sample_index=index, model="test-model")


def shard_names(folder: Path) -> list[str]:
    return sorted(path.name for path in folder.iterdir())


@pytest.fixture
def hf_cache(tmp_path, monkeypatch):
    import datasets

    monkeypatch.setattr(datasets.config, "HF_DATASETS_CACHE", tmp_path / "hf-cache")


def test_rows_rotate_into_named_zstd_shards(tmp_path):
    with ShardWriter(tmp_path, "triton", RUN, max_rows=2) as writer:
        writer.write_many(make_row(i) for i in range(5))
    folder = tmp_path / "data" / "triton"
    assert shard_names(folder) == [f"train-{RUN}-00000-0000{n}.parquet" for n in range(3)]
    assert [pq.ParquetFile(path).metadata.num_rows for path in sorted(folder.iterdir())] == [2, 2, 1]
    assert writer.rows_written == 5
    for path in folder.iterdir():
        metadata = pq.ParquetFile(path).metadata
        assert metadata.row_group(0).column(0).compression == "ZSTD"


def test_no_temporary_file_remains(tmp_path):
    writer = ShardWriter(tmp_path, "triton", RUN, max_rows=3)
    writer.write_many(make_row(i) for i in range(7))
    writer.close()
    names = shard_names(tmp_path / "data" / "triton")
    assert len(names) == 3
    assert all(name.endswith(".parquet") and not name.startswith(".") for name in names)


def test_nothing_is_written_before_a_shard_fills(tmp_path):
    writer = ShardWriter(tmp_path, "triton", RUN, max_rows=10)
    writer.write(make_row(0))
    assert shard_names(tmp_path / "data" / "triton") == []
    writer.close()
    assert len(shard_names(tmp_path / "data" / "triton")) == 1


def test_second_writer_of_the_same_run_continues_numbering(tmp_path):
    with ShardWriter(tmp_path, "triton", RUN, max_rows=2) as first:
        first.write_many(make_row(i) for i in range(3))
    first_contents = {path.name: path.read_bytes() for path in first.written}
    with ShardWriter(tmp_path, "triton", RUN, max_rows=2) as second:
        second.write_many(make_row(i) for i in range(3, 6))
    folder = tmp_path / "data" / "triton"
    assert shard_names(folder) == [f"train-{RUN}-00000-0000{n}.parquet" for n in range(4)]
    for name, content in first_contents.items():
        assert (folder / name).read_bytes() == content
    table = pq.read_table(folder, schema=ATTEMPT_SCHEMA)
    assert sorted(table.column("sample_index").to_pylist()) == list(range(6))


def test_workers_number_their_shards_independently(tmp_path):
    with ShardWriter(tmp_path, "triton", RUN, worker=0) as zero:
        zero.write(make_row(0))
    with ShardWriter(tmp_path, "triton", RUN, worker=3) as three:
        three.write(make_row(1))
    assert shard_names(tmp_path / "data" / "triton") == [
        f"train-{RUN}-00000-00000.parquet",
        f"train-{RUN}-00003-00000.parquet",
    ]


def test_rows_read_back_equal_the_input(tmp_path):
    rows = [make_row(i) for i in range(4)]
    with ShardWriter(tmp_path, "hip", RUN, max_rows=100) as writer:
        writer.write_many(rows)
    (path,) = writer.written
    back = pq.read_table(path).to_pylist()
    assert len(back) == len(rows)
    keys = [
        "run_id", "attempt_id", "task_id", "task_name", "task_source", "target", "code", "code_hash",
        "compiled", "correct", "failure_kind", "speedup", "kernels", "reward", "reward_speed", "platform",
        "toolchain_versions", "model", "stages", "checks", "timings",
    ]  # fmt: skip
    for written, read in zip(rows, back, strict=True):
        for key in keys:
            assert read[key] == written[key], key
        assert read["created_at"] == written["created_at"]


def test_shards_carry_the_schema_version(tmp_path):
    with ShardWriter(tmp_path, "triton", RUN) as writer:
        writer.write(make_row(0))
    schema = pq.read_schema(writer.written[0])
    assert schema.metadata[SCHEMA_VERSION_KEY] == str(SCHEMA_VERSION).encode()
    assert check_schema(schema) == SCHEMA_VERSION == 2


def test_check_schema_refuses_a_newer_version(tmp_path):
    path = tmp_path / "future.parquet"
    table = pa.Table.from_pylist([make_row(0)], schema=ATTEMPT_SCHEMA)
    pq.write_table(table.replace_schema_metadata({SCHEMA_VERSION_KEY: b"99"}), path)
    with pytest.raises(SchemaVersionError) as info:
        check_schema(pq.read_schema(path))
    assert "99" in str(info.value)


def test_check_schema_refuses_a_plain_parquet_file(tmp_path):
    path = tmp_path / "plain.parquet"
    pq.write_table(pa.table({"a": [1, 2, 3]}), path)
    with pytest.raises(SchemaVersionError):
        check_schema(pq.read_schema(path))


def test_datasets_loads_all_shards_with_nested_columns(tmp_path, hf_cache):
    import datasets

    with ShardWriter(tmp_path, "triton", RUN, max_rows=2) as writer:
        writer.write_many(make_row(i) for i in range(5))
    dataset = datasets.load_dataset("parquet", data_dir=str(tmp_path / "data" / "triton"), split="train")
    assert dataset.num_rows == 5
    assert sorted(dataset["sample_index"]) == list(range(5))
    row = next(r for r in dataset if r["sample_index"] == 1)
    assert isinstance(row["stages"], list)
    assert row["stages"][0] == {
        "name": "parse",
        "outcome": "passed",
        "seconds": 0.001,
        "log": "fenced block 1 of 1",
    }
    assert row["checks"] == [
        {
            "case": "c0:dim=17",
            "seed": 0,
            "passed": False,
            "max_abs_error": 1.0,
            "max_rel_error": None,
            "message": "",
        }
    ]
    assert row["timings"][0]["reference_ms"] == 2.0
    assert row["correct"] is False
    assert row["failure_kind"] == "mismatch"


def _older_layout(table: pa.Table) -> pa.Table:
    """The table as a KernelVault of 2026-12-02 wrote it: no `speedup_over_baseline` column, timings without
    `calls_per_sample` (both added to v1 since, nullable)."""
    timing = pa.struct([field for field in ATTEMPT_SCHEMA.field("timings").type.value_type
                        if field.name != "calls_per_sample"])  # fmt: skip
    table = table.drop_columns(["speedup_over_baseline"])
    index = table.schema.get_field_index("timings")
    older = pa.array([[{k: v for k, v in t.items() if k != "calls_per_sample"} for t in (row or [])]
                      for row in table.column("timings").to_pylist()], type=pa.list_(timing))  # fmt: skip
    return table.set_column(index, "timings", older)


def test_a_resumed_run_brings_older_shards_to_the_current_layout_so_datasets_loads_the_folder(
    tmp_path, hf_cache
):
    """`datasets` refuses a folder whose shards disagree on their schema: a run written before a nullable column
    or timing field was added, resumed by this version, must still load as one dataset."""
    import datasets

    folder = tmp_path / "data" / "triton"
    folder.mkdir(parents=True)
    old = _older_layout(pa.Table.from_pylist([make_row(i) for i in range(3)], schema=ATTEMPT_SCHEMA))
    pq.write_table(old, folder / f"train-{RUN}-00000-00000.parquet", compression="zstd")
    with ShardWriter(tmp_path, "triton", RUN, max_rows=2) as writer:  # the resumed run
        writer.write_many(make_row(i) for i in range(3, 5))
    assert shard_names(folder) == [f"train-{RUN}-00000-0000{n}.parquet" for n in range(2)]
    dataset = datasets.load_dataset("parquet", data_dir=str(folder), split="train")
    assert sorted(dataset["sample_index"]) == list(range(5))
    by_index = {row["sample_index"]: row for row in dataset}
    assert by_index[0]["timings"][0]["calls_per_sample"] is None  # not recorded then: unknown, not 1
    assert by_index[0]["timings"][0]["reference_ms"] == 1.0 and by_index[0]["speedup_over_baseline"] is None
    assert by_index[4]["timings"][0]["calls_per_sample"] == 1
    # a shard already in the current layout is left as it is
    before = (folder / f"train-{RUN}-00000-00001.parquet").stat().st_mtime_ns
    ShardWriter(tmp_path, "triton", RUN).close()
    assert (folder / f"train-{RUN}-00000-00001.parquet").stat().st_mtime_ns == before


def _v1_layout(table: pa.Table) -> pa.Table:
    """The table as schema v1 wrote it: the conversation's reasoning under `reasoning`."""
    message = pa.struct([("role", pa.string()), ("content", pa.string()), ("reasoning", pa.string())])
    messages = [[{"role": m["role"], "content": m["content"], "reasoning": m["reasoning_content"]} for m in row or []]
                for row in table.column("messages").to_pylist()]  # fmt: skip
    table = table.set_column(table.schema.get_field_index("messages"), "messages",
                             pa.array(messages, type=pa.list_(message)))  # fmt: skip
    table = table.set_column(table.schema.get_field_index("schema_version"), "schema_version",
                             pa.array([1] * table.num_rows, type=pa.int16()))  # fmt: skip
    return table.replace_schema_metadata({SCHEMA_VERSION_KEY: b"1"})


def test_v1_shards_read_with_reasoning_content_and_a_resumed_run_rewrites_them(tmp_path, hf_cache):
    """v2 renamed the messages' `reasoning` to `reasoning_content`: a v1 corpus still reads, its reasoning kept,
    and a run resumed by this version leaves a folder that `datasets` loads as one schema."""
    import datasets

    from kernelvault.corpus.stats import load_attempts

    rows = [make_row(i) for i in range(2)]
    rows[0]["messages"] = [{"role": "user", "content": "write relu", "reasoning_content": None},
                           {"role": "assistant", "content": "```python\n...```", "reasoning_content": "mask the tail"}]  # fmt: skip
    folder = tmp_path / "data" / "triton"
    folder.mkdir(parents=True)
    v1 = _v1_layout(pa.Table.from_pylist(rows, schema=ATTEMPT_SCHEMA))
    pq.write_table(v1, folder / f"train-{RUN}-00000-00000.parquet")
    read = load_attempts(folder).to_pylist()
    assert read[0]["messages"][1] == {"role": "assistant", "content": "```python\n...```",
                                      "reasoning_content": "mask the tail"}  # fmt: skip
    assert read[0]["schema_version"] == SCHEMA_VERSION and read[1]["messages"] == []
    with ShardWriter(tmp_path, "triton", RUN) as writer:  # the resumed run
        writer.write(make_row(2))
    assert {check_schema(pq.read_schema(path)) for path in folder.glob("*.parquet")} == {SCHEMA_VERSION}
    dataset = datasets.load_dataset("parquet", data_dir=str(folder), split="train")
    by_index = {row["sample_index"]: row for row in dataset}
    assert sorted(by_index) == [0, 1, 2]
    assert by_index[0]["messages"][1]["reasoning_content"] == "mask the tail"

"""The main job on the bundled examples: shards that `datasets` loads, with the right verdicts."""

from __future__ import annotations

import json
from pathlib import Path

import datasets
import pytest

from kernelvault.cli import main
from kernelvault.pipelines.candidates import ExampleCandidates
from kernelvault.toolchain.tasks import load_tasks

CANDIDATE_FAILURE_KINDS = {
    "parse_error", "static_reject", "compile_error", "interface_error", "runtime_error", "timeout", "mismatch",
    "integrity_reject",
}  # fmt: skip


@pytest.fixture(scope="module")
def corpus_run(tmp_path_factory: pytest.TempPathFactory) -> tuple[Path, str]:
    out = tmp_path_factory.mktemp("corpus")
    import contextlib
    import io

    stdout = io.StringIO()
    with contextlib.redirect_stdout(stdout):
        code = main(["corpus", "--target", "triton", "--out", str(out), "--platform", "cpu", "--timeout", "25",
                     "--no-progress"])  # fmt: skip
    assert code == 0
    return out, stdout.getvalue()


def test_examples_cover_at_least_ten_tasks_and_every_candidate_failure_kind() -> None:
    attempts = list(ExampleCandidates("triton").attempts(load_tasks(None).tasks))
    honest = {a.task.name for a in attempts if a.candidate.expected_failure is None}
    assert len(honest) >= 10
    assert {a.candidate.expected_failure for a in attempts} - {None} == CANDIDATE_FAILURE_KINDS


def test_corpus_rows_load_with_datasets_and_carry_the_right_verdicts(corpus_run: tuple[Path, str]) -> None:
    out, _ = corpus_run
    rows = datasets.load_dataset("parquet", data_dir=str(out / "data" / "triton"), split="train")
    attempts = list(ExampleCandidates("triton").attempts(load_tasks(None).tasks))
    assert rows.num_rows == len(attempts)
    by_origin = {row["candidate_origin"]: row for row in rows}
    for attempt in attempts:
        row = by_origin[attempt.candidate.origin]
        assert row["failure_kind"] == attempt.candidate.expected_failure, (
            row["candidate_origin"],
            row["failure_message"],
        )
        assert row["platform"] == "cpu" and row["arch"] == "gfx942"
        if attempt.candidate.expected_failure is None:
            assert row["correct"] is True and row["compiled"] is True
            assert row["reward"] == pytest.approx(1.4) and row["speedup"] is None
            assert row["kernels"], "an honest row names the kernels it launched"
            assert all(check["passed"] for check in row["checks"])
        else:
            assert row["correct"] is not True
            assert row["reward"] <= 0.4
        assert [stage["name"] for stage in row["stages"]] == [
            "parse",
            "static",
            "compile",
            "check",
            "time",
            "reward",
        ]
        assert json.loads(row["toolchain_versions"])["triton"]


def test_summary_table_and_run_record(corpus_run: tuple[Path, str]) -> None:
    out, printed = corpus_run
    assert "no model endpoint configured" in printed
    assert "mean reward" in printed and "failure: timeout" in printed
    assert "duplicates (exact / near)" in printed
    assert "unexpected:" not in printed
    records = list((out / "runs").glob("*.json"))
    assert len(records) == 1
    record = json.loads(records[0].read_text())
    assert record["attempts"] == record["correct"] + sum(record["failures"].values())
    # Per-stage timings of this session: every attempt is parsed; only those that got that far are checked.
    stages = record["stages"]
    assert stages["parse"]["runs"] == record["attempts"]
    assert 0 < stages["check"]["runs"] < record["attempts"]  # parse errors and static rejects stop earlier
    assert stages["check"]["p50_s"] <= stages["check"]["p90_s"] <= stages["check"]["total_s"]
    assert record["attempts_per_minute"] == pytest.approx(60 * record["attempts"] / record["seconds"])
    assert "throughput (this session)" in printed and "stage check" in printed
    assert not list((out / "data" / "triton").glob(".*.tmp"))

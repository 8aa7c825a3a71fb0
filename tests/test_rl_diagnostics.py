"""Reward diagnostics: the closed form, measured zero-spread and usable shares, and the diagnose command."""

from __future__ import annotations

import argparse
import json
import random
from pathlib import Path

import pyarrow as pa
import pyarrow.parquet as pq
import pytest
from corpus_rows import example_code, row_for

from kernelvault.cli import UsageError
from kernelvault.cli.rl import register as add_rl_parser
from kernelvault.corpus.schema import ATTEMPT_SCHEMA
from kernelvault.rl import diagnostics


def run_cli(*argv: str) -> int:
    parser = argparse.ArgumentParser()
    add_rl_parser(parser.add_subparsers(dest="command", required=True))
    args = parser.parse_args(["rl", *argv])
    return args.handler(args)


def test_closed_form_reproduces_the_061_figure() -> None:
    value = diagnostics.binary_zero_advantage(0.06, 8)
    assert value == pytest.approx(0.94**8 + 0.06**8)
    assert round(value, 2) == 0.61
    # Three graded tiers (no compile 0, compiles 0.4, correct 1.4) with the same 6 % success: far fewer dead groups.
    assert diagnostics.zero_advantage_closed_form([0.5, 0.44, 0.06], 8) == pytest.approx(
        0.5**8 + 0.44**8 + 0.06**8
    )
    assert diagnostics.zero_advantage_closed_form([0.5, 0.44, 0.06], 8) < 0.01
    with pytest.raises(ValueError):
        diagnostics.zero_advantage_closed_form([0.5, 0.4], 8)


def test_measured_zero_spread_matches_the_closed_form_on_simulated_groups() -> None:
    rng = random.Random(7)
    groups = [[1.0 if rng.random() < 0.06 else 0.0 for _ in range(8)] for _ in range(20_000)]
    stats = diagnostics.signal_stats("binary", groups)
    assert stats.zero_spread == pytest.approx(diagnostics.binary_zero_advantage(0.06, 8), abs=0.01)


def test_timing_noise_alone_is_not_usable_signal() -> None:
    noise_only = [1.40, 1.42, 1.41, 1.43]  # four equally correct kernels, speed term wobbling by timing noise
    real_spread = [0.0, 0.4, 1.4, 2.1]
    stats = diagnostics.signal_stats("graded", [noise_only, real_spread], threshold=0.05)
    assert stats.zero_spread == 0.0  # both groups have some spread…
    assert stats.usable == pytest.approx(4 / 8)  # …but only the real one carries usable advantage
    assert (
        diagnostics.signal_stats("graded", [[0.4] * 8, [0.4]]).zero_spread == 1.0
    )  # the single sample is left out
    assert diagnostics.signal_stats("graded", [[0.4] * 8, [0.4]]).skipped_groups == 1


def corpus_rows() -> list[dict]:
    relu, silu = example_code("relu"), example_code("silu")
    rows = [
        row_for("relu", relu, correct=sample == 0, sample=sample) for sample in range(4)
    ]  # 1.4 vs 0.4: spread
    rows += [
        row_for("silu", silu, correct=False, sample=sample) for sample in range(4)
    ]  # all 0.4: dead group
    return rows


def test_groups_from_corpus_attempts_binary_vs_graded() -> None:
    groups = diagnostics.groups_from_attempts(corpus_rows())
    stats = {s.variant: s for s in diagnostics.compare(groups)}
    assert stats["binary"].zero_spread == 0.5 and stats["graded"].zero_spread == 0.5
    assert stats["compile"].zero_spread == 1.0  # every attempt compiled
    assert stats["speed"].usable == 0.0  # no timing on cpu
    trajectories = diagnostics.groups_from_attempts(corpus_rows(), unit="trajectory")
    assert set(trajectories) == {"binary", "graded"} and len(trajectories["graded"]) == 2


def test_diagnose_command_closed_form_and_corpus(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    assert run_cli("diagnose", "--success-rate", "0.06", "--group-size", "8") == 0
    assert "= 0.6096 of groups have zero advantage" in capsys.readouterr().out

    folder = tmp_path / "corpus" / "data" / "triton"
    folder.mkdir(parents=True)
    pq.write_table(pa.Table.from_pylist(corpus_rows(), schema=ATTEMPT_SCHEMA), folder / "shard-0.parquet")
    plot = tmp_path / "signal.png"
    assert run_cli("diagnose", "--dataset", str(tmp_path / "corpus"), "--plot", str(plot), "--markdown") == 0
    out = capsys.readouterr().out
    assert "| binary | 2 | 8 | 50.0% |" in out and "| graded |" in out
    assert plot.read_bytes()[:8] == b"\x89PNG\r\n\x1a\n"

    log = tmp_path / "run" / "rewards-rank0.jsonl"
    log.parent.mkdir()
    lines = [{"rank": 0, "batch": 0, "group": i // 2, "binary": 0.0, "graded": [0.0, 0.4, 0.4, 0.4][i],
              "compile": [0.0, 0.4, 0.4, 0.4][i], "correct": 0.0, "speed": 0.0} for i in range(4)]  # fmt: skip
    log.write_text("".join(json.dumps(line) + "\n" for line in lines))
    assert run_cli("diagnose", "--rewards", str(log.parent)) == 0
    out = capsys.readouterr().out
    assert "binary" in out and "100.0%" in out and "50.0%" in out  # binary: both dead; graded: one of two

    with pytest.raises(UsageError):
        run_cli("diagnose")

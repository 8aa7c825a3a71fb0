"""A throughput run longer than one device call: saves combined into one table (`verify_throughput --combine`).

The peer harness and a fresh process per candidate are sequential, so they can be cut into chunks across calls;
lanes cannot (each chunk would end on its slowest candidate), so they run the whole set in a save of their own.
Combined, every mode must have verified the same candidates once, or the figures would not compare.
"""

from __future__ import annotations

import json
import sys
from pathlib import Path
from typing import Any

import pytest

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))

from bench.verify_throughput import combine, latency_table  # noqa: E402

ORIGINS = [f"bench:tests/adversarial/honest/case{index}.py" for index in range(4)]


def _row(origin: str, latency_ms: float | None = None, peer: bool = False) -> dict[str, Any]:
    row: dict[str, Any] = {"origin": origin, "kind": "success", "got": "correct", "expected": ["correct"],
                           "as_expected": True, "latency_ms": [latency_ms, 1.0] if latency_ms else None}  # fmt: skip
    return row | ({"peer": True, "message": "", "peer_seconds": 1.0} if peer else {})


def _save(
    folder: Path, name: str, chunk: str | None, results: dict[str, tuple[float, list[dict[str, Any]]]]
) -> str:
    path = folder / f"{name}.json"
    count = len(next(iter(results.values()))[1])
    path.write_text(json.dumps({"set": "mixed", "limit": 60, "chunk": chunk, "candidates": count,
                                "where": "cuda NVIDIA H200, devices 0, lanes 1", "results": results}))  # fmt: skip
    return str(path)


def test_a_chunked_sequential_mode_and_whole_lanes_combine_into_one_table(tmp_path: Path) -> None:
    fresh1 = _save(tmp_path, "fresh1", "1/2", {"fresh": (30.0, [_row(o, 2.0) for o in ORIGINS[:2]])})
    fresh2 = _save(tmp_path, "fresh2", "2/2", {"fresh": (50.0, [_row(o, 2.0) for o in ORIGINS[2:]])})
    lanes = _save(
        tmp_path, "lanes", None, {"persistent@0x8": (8.0, [_row(o, 2.02) for o in reversed(ORIGINS)])}
    )
    combined = combine([fresh1, fresh2, lanes])
    assert combined["fresh"][0] == 80.0 and [r["origin"] for r in combined["fresh"][1]] == ORIGINS
    assert combined["persistent@0x8"][0] == 8.0 and len(combined["persistent@0x8"][1]) == 4
    assert "persistent@0x8 against fresh, candidate latency: median |ratio − 1| 1.0%" in latency_table(
        combined
    )


def test_saves_whose_modes_verified_different_candidates_are_refused(tmp_path: Path) -> None:
    fresh = _save(tmp_path, "fresh1", "1/2", {"fresh": (30.0, [_row(o) for o in ORIGINS[:2]])})  # 2/2 missing
    lanes = _save(tmp_path, "lanes", None, {"persistent@0x8": (8.0, [_row(o) for o in ORIGINS])})
    with pytest.raises(
        SystemExit, match="persistent@0x8 verified 4 candidates and fresh 2, not the same ones"
    ):
        combine([fresh, lanes])


def test_a_candidate_verified_twice_by_one_mode_is_refused(tmp_path: Path) -> None:
    first = _save(tmp_path, "a", "1/2", {"fresh": (30.0, [_row(o) for o in ORIGINS[:3]])})
    second = _save(tmp_path, "b", "2/2", {"fresh": (30.0, [_row(o) for o in ORIGINS[2:]])})  # case2 in both
    with pytest.raises(SystemExit, match=r"fresh verified 1 candidate\(s\) twice .*case2.py"):
        combine([first, second])


def test_the_peer_harness_latencies_are_not_a_baseline(tmp_path: Path) -> None:
    """KernelBench times the tasks' own inputs, ours their performance cases: a ratio between them is no check."""
    peer = _save(tmp_path, "peer", None, {"kernelbench": (60.0, [_row(o, 0.01, peer=True) for o in ORIGINS])})
    lanes = _save(tmp_path, "lanes", None, {"persistent@0x8": (8.0, [_row(o, 2.0) for o in ORIGINS])})
    table = latency_table(combine([peer, lanes]))
    # one comparable mode: nothing to compare it with, and no column of the peer's
    assert "kernelbench" not in table and "against" not in table
    assert table.count("| 2.0000 / 1.0000 |") == 4

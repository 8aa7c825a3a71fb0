"""Where a verification's time goes, as the benches read it from the check stage's log (#24 item 2).

The parent records the seconds of each kind of request and of each part of the plan (`ProtocolCosts`); the
check stage's log carries them as text, and `bench/verify_throughput.py` and `bench/reward_path.py` read them
back into their tables. Case names hold commas (`c0:batch=1,dim=17`), so the two lists must stay apart.
"""

from __future__ import annotations

import sys
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))

from bench.reward_path import request_kinds as reward_path_kinds  # noqa: E402
from bench.verify_throughput import (  # noqa: E402
    mode_options,
    option_settings,
    part_group,
    stage_seconds,
    time_breakdown,
)
from kernelvault.toolchain.judge import ProtocolCosts  # noqa: E402


def _costs() -> ProtocolCosts:
    costs = ProtocolCosts(
        messages=9,
        megabytes=3.5,
        transfer_seconds=0.25,
        answer_seconds=0.5,
        gate_seconds=1.5,
        start_seconds=2.0,
    )
    for kind, seconds in (("candidate.forward", 1.25), ("reference.prepare", 0.75), ("candidate.time", 0.5)):
        costs.add_request(kind, seconds)
    for part, seconds in (("check c0:batch=1,dim=17", 0.5), ("check p0:batch=8,dim=4096", 1.0),
                          ("time p0:batch=8,dim=4096", 0.75), ("check c0:batch=1,dim=17", 0.25)):  # fmt: skip
        costs.add_case(part, seconds)
    return costs


def test_the_benches_read_back_the_seconds_per_request_kind_and_per_case() -> None:
    log = "checked 3 case(s)\n" + _costs().summary()
    row = stage_seconds([{"name": "check", "outcome": "passed", "seconds": 4.0, "log": log}])
    assert row["requests"] == {"candidate.forward": 1.25, "candidate.time": 0.5, "reference.prepare": 0.75}
    # a case's two trials add up; the commas in its name do not split it
    assert row["parts"] == {"check c0:batch=1,dim=17": 0.75, "check p0:batch=8,dim=4096": 1.0,
                            "time p0:batch=8,dim=4096": 0.75}  # fmt: skip
    assert row["gate_wait_s"] == 1.5 and row["judge_compare_s"] == 0.5 and row["worker_start_s"] == 2.0
    assert reward_path_kinds(log) == row["requests"]  # reward_path's reader stops where the case list starts


def test_the_breakdown_table_groups_cases_by_what_they_do_and_sums_over_candidates() -> None:
    log = _costs().summary()
    row = stage_seconds([{"name": "check", "outcome": "passed", "seconds": 4.0, "log": log}])
    timed_out = {"check_s": 30.0}  # a worker that ran out of time leaves no record of its parts
    table = time_breakdown({"persistent": (70.0, [row, row, timed_out])})
    lines = {
        line.split(" | ")[0].lstrip("| "): line.split(" | ")[1].rstrip(" |")
        for line in table.splitlines()[2:]
    }
    assert lines["checks that timed out or crashed (no record of their parts)"] == "30.0"
    assert lines["waiting for workers to start"] == "4.0" and lines["check"] == "38.0"
    assert lines["candidate.forward"] == "2.5" and lines["gate wait (lanes)"] == "3.0"
    assert lines["check, correctness cases"] == "1.5" and lines["check, performance cases"] == "2.0"
    assert lines["time (staging, turn, spot checks)"] == "1.5"
    assert part_group("time p1:large") == "time (staging, turn, spot checks)"


def test_mode_suffixes_change_the_verifier_and_leave_the_lanes() -> None:
    assert mode_options("persistent@0x3+shared+percase") == ("persistent@0x3", {"shared", "percase"})
    assert mode_options("persistent@0+1") == ("persistent@0+1", set())  # `+` between GPUs is not an option
    assert mode_options("pool:4+percase") == ("pool:4", {"percase"})
    # the transport: forced either way by a suffix, else the verifier's default (shared on a CUDA GPU)
    assert option_settings("pool:4+shared")["shared_outputs"] is True
    assert option_settings("pool:4+files")["shared_outputs"] is False
    assert option_settings("pool:4")["shared_outputs"] is None
    with pytest.raises(ValueError, match="together"):
        option_settings("pool:4+files+shared")

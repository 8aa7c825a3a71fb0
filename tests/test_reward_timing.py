"""The reward path's timing (`reward_verify_config`): the reference's timed figures reused across verifications
(`toolchain.reference_times`) and the RL timing profile (fewer samples where a case's spread allows).

A reused figure saves the reference's clock, never its results: the reference still runs every timed call's
values and the candidate's outputs are checksummed against it. A figure stands for a bounded number of uses; the
re-timing after them catches a reference whose timing drifted, drops the device's figures and says so in the log.
The CPU runs the protocol through the interpreter (`VerifyConfig.time_on_cpu`), as CI does for every timing test.
"""

from __future__ import annotations

import dataclasses
import logging
import re
from pathlib import Path

import pytest
import small_tasks
from test_cpu_timing import REPLAYS_WHILE_TIMED

from kernelvault.contracts import Candidate, Task
from kernelvault.toolchain import judge
from kernelvault.toolchain.judge import RL_REPETITIONS
from kernelvault.toolchain.lane_pool import verify_once
from kernelvault.toolchain.reference_times import (
    REFERENCE_TIMES,
    ReferenceFigure,
    ReferenceKey,
    ReferenceReuse,
    ReferenceTimes,
    drift_bound,
)
from kernelvault.toolchain.tasks import load_task_file
from kernelvault.toolchain.verify import Verifier, VerifyConfig, reward_verify_config

ROOT = Path(__file__).resolve().parents[1]
RELU = (ROOT / "examples" / "triton" / "relu.py").read_text()
KEY = ReferenceKey("task", "p0", "cuda:0", "torch 2.13.0, triton 3.9.0", (100, 10, 1, 4, 0.5, "fresh"))


class Clock:
    def __init__(self) -> None:
        self.now = 1000.0

    def __call__(self) -> float:
        return self.now


def test_a_figure_is_reused_once_two_timings_agree_then_for_its_uses_and_its_age() -> None:
    clock = Clock()
    times, policy = ReferenceTimes(clock), ReferenceReuse(max_uses=2, max_age_s=60.0)
    assert times.reuse(KEY, policy) is None  # nothing timed yet
    assert times.record(KEY, 1.01, 0.01, policy) is None
    assert times.reuse(KEY, policy) is None  # one timing alone is not reused: it may have been disturbed
    assert (
        times.record(KEY, 1.0, 0.01, policy) is None
    )  # a second one agrees: the smaller median is the figure
    assert [(f.median_ms, f.uses) for f in (times.reuse(KEY, policy), times.reuse(KEY, policy))] == [
        (1.0, 1),
        (1.0, 2),
    ]
    assert times.reuse(KEY, policy) is None  # used up: time it again
    times.record(
        KEY, 1.02, 0.01, policy
    )  # agrees: the figure stands again, unchanged (a re-time never nudges it)
    assert times.reuse(KEY, policy).median_ms == 1.0
    clock.now += 60.0
    assert times.reuse(KEY, policy) is None  # too old, whatever its uses
    # another device, another protocol or another toolchain is another figure
    for other in (
        ReferenceKey(KEY.task_id, KEY.case, "cuda:1", KEY.versions, KEY.protocol),
        ReferenceKey(KEY.task_id, KEY.case, KEY.device, "torch 2.14.0, triton 3.9.0", KEY.protocol),
        ReferenceKey(KEY.task_id, KEY.case, KEY.device, KEY.versions, (100, 10, 2, 4, 0.5, "fresh")),
    ):
        assert times.reuse(other, policy) is None
    assert (times.reused, times.timed, times.drifts) == (3, 3, 0)


def test_a_drift_beyond_twice_the_spread_drops_every_figure_of_the_device_and_is_logged(caplog) -> None:  # noqa: ANN001
    times, policy = ReferenceTimes(Clock()), ReferenceReuse(max_uses=1)
    other_case = ReferenceKey(KEY.task_id, "p1", KEY.device, KEY.versions, KEY.protocol)
    other_device = ReferenceKey(KEY.task_id, KEY.case, "cuda:1", KEY.versions, KEY.protocol)
    for key in (KEY, other_case, other_device):
        times.record(key, 1.0, 0.01, policy)
        times.record(key, 1.0, 0.01, policy)
    # the bound is twice the figure's spread, never under 3%
    assert drift_bound(ReferenceFigure(1.0, 0.01, 0.0)) == pytest.approx(0.03)
    assert drift_bound(ReferenceFigure(1.0, 0.04, 0.0)) == pytest.approx(0.08)
    assert times.record(KEY, 1.025, 0.01, policy) is None  # 2.5%: within
    with caplog.at_level(logging.WARNING, logger="kernelvault.reference_times"):
        message = times.record(KEY, 1.2, 0.01, policy)  # 20%: the device changed
    assert message is not None and "reference timing drift on cuda:0" in message and "+20.0%" in message
    assert message in caplog.text
    assert times.reuse(other_case, policy) is None  # the device's other figures went with it
    assert times.reuse(KEY, policy) is None  # and the new timing waits for a second one to agree
    assert times.record(KEY, 1.21, 0.01, policy) is None
    assert times.reuse(KEY, policy).median_ms == 1.2
    assert times.reuse(other_device, policy).median_ms == 1.0  # another device's figures stay
    assert times.drifts == 1


def test_a_disturbed_timing_neither_moves_nor_confirms_a_figure_and_a_slow_drift_adds_up() -> None:
    """The red-team's routes: a timing whose slowed samples widen its own spread must not pass as agreeing (the
    bound is the figure's spread alone), and re-times of +2.8% each must not walk the figure away unseen."""
    times, policy = ReferenceTimes(Clock()), ReferenceReuse(max_uses=10)
    times.record(KEY, 1.0, 0.01, policy)
    assert times.record(KEY, 1.12, 0.09, policy) is None  # half its samples 15% slower: set aside
    assert times.reuse(KEY, policy) is None and times.disturbed == 1  # the first timing is still unconfirmed
    times.record(KEY, 1.0, 0.01, policy)
    assert times.reuse(KEY, policy).median_ms == 1.0
    assert times.record(KEY, 1.12, 0.09, policy) is None and times.reuse(KEY, policy).median_ms == 1.0
    drifts = [times.record(KEY, 1.0 + 0.028 * step, 0.01, policy) for step in (1, 2)]
    assert (
        drifts[0] is None and drifts[1] is not None
    )  # +2.8% agrees; +5.6% against the same figure is a drift


# A reference that becomes five times slower after its 90th call (its worker's process keeps the count between
# jobs): the timing of the same case drifts between one verification and a later one, as a device's would when its
# clocks drop. A verification makes 24 to 28 calls of the reference, so the step falls inside the fourth
# verification of the test below, whose reference runs untimed (its figure is reused).
DRIFTING = """
import sys
import time


def _slower_after_a_while() -> None:
    calls = sys.__dict__.setdefault("_kv_reference_calls", [0])
    calls[0] += 1
    time.sleep(0.01 if calls[0] <= 90 else 0.05)
"""


@pytest.fixture(scope="module")
def drifting_relu(tmp_path_factory: pytest.TempPathFactory) -> Task:
    task = small_tasks.small_relu(tmp_path_factory.mktemp("task"), small_tasks.TINY_CASES)
    source = task.source.replace("import torch.nn as nn\n", "import torch.nn as nn\n" + DRIFTING, 1)
    source = source.replace(
        "        return torch.relu(x)", "        _slower_after_a_while()\n        return torch.relu(x)"
    )
    assert "_slower_after_a_while()\n" in source
    path = tmp_path_factory.mktemp("drifting") / "relu.py"
    path.write_text(source)
    return load_task_file(path)


def test_the_reward_path_reuses_the_reference_figure_checks_every_timed_call_and_catches_a_drift(
    drifting_relu: Task, tmp_path: Path, caplog
) -> None:  # noqa: ANN001
    # A lane of its own (a memory limit no other test uses): its reference worker counts only this test's calls.
    # A loaded 2-core machine's sleeps jitter far past the 3% floor (CI: two test processes and their workers on two
    # cores): the step here is fivefold, the floor 100%, so only the mechanism is under test.
    verifier = Verifier(VerifyConfig(platform="cpu", time_on_cpu=True, repetitions=6, warmup=1, input_sets=2,
                                     memory_limit_mb=8191, hip_cache=tmp_path / "hip",
                                     reference_reuse=ReferenceReuse(max_uses=2, drift_floor=1.0)))  # fmt: skip
    REFERENCE_TIMES.clear()
    drifts = REFERENCE_TIMES.drifts

    def verify(code: str):  # noqa: ANN202
        return verify_once(verifier, drifting_relu, Candidate(drifting_relu.task_id, "triton", code, "test"))

    with caplog.at_level(logging.WARNING, logger="kernelvault.reference_times"):
        verdicts = [verify(RELU) for _ in range(7)]
    for verdict in verdicts:
        assert verdict.correct is True, verdict.failure_message
        # every timed call's output was still checksummed against the reference's run of its values
        assert all(t.checked_calls == 6 * t.calls_per_sample for t in verdict.timings)
    timing = [[t.reference_timing for t in verdict.timings] for verdict in verdicts]
    # timed until two timings agree, reused twice, timed again: the reference slowed, so its new timing is a
    # drift and waits for a second one, which agrees; then reused again
    assert timing == [["timed"] * 2] * 2 + [["reused"] * 2] * 2 + [["timed"] * 2] * 2 + [["reused"] * 2], (
        timing
    )
    reference_ms = [[t.reference_ms for t in verdict.timings] for verdict in verdicts]
    # the figure two agreeing timings make is the smaller of their medians (a disturbance only slows)
    assert reference_ms[2] == reference_ms[3] == [min(pair) for pair in zip(*reference_ms[:2], strict=True)]
    assert re.search(r"reference timing drift on cpu:default: p0:\S+ of task \w+ took", caplog.text), (
        caplog.text
    )
    assert REFERENCE_TIMES.drifts > drifts
    assert all(slow > 2 * fast for slow, fast in zip(reference_ms[4], reference_ms[1], strict=True))
    # the figure confirmed after the drift stands
    assert reference_ms[6] == [min(pair) for pair in zip(*reference_ms[4:6], strict=True)]
    # a candidate that replays its results while the reference's figure is reused is caught by the same checksums:
    # the reference's untimed run of the timed calls' values is what they are compared with
    reused = REFERENCE_TIMES.reused
    caught = verify(REPLAYS_WHILE_TIMED)
    assert REFERENCE_TIMES.reused > reused  # its cases met reused figures
    assert caught.failure_kind == "integrity_reject", caught.failure_message
    assert caught.failure_message.startswith("cached_results: timed call ")
    assert "not the result of this call's inputs" in caught.failure_message
    # the figure is used up now: the next one re-times the reference, and a rejected job's timing is never kept
    timed = REFERENCE_TIMES.timed
    again = verify(REPLAYS_WHILE_TIMED)
    assert again.failure_kind == "integrity_reject" and REFERENCE_TIMES.timed == timed
    REFERENCE_TIMES.clear()


# Per case: the first (batch 4) sleeps a steady 20 ms, the second 2 ms and 20 ms by turns (a spread of about 100%).
STEADY_OR_NOT = """
import sys
import time


def _steady_or_not(x) -> None:
    calls = sys.__dict__.setdefault("_kv_steady_calls", [0])
    calls[0] += 1
    time.sleep(0.02 if x.shape[0] == 4 or calls[0] % 2 else 0.002)
"""


def test_the_rl_profile_times_fewer_samples_only_where_the_pilot_spread_is_small(
    tmp_path_factory: pytest.TempPathFactory, monkeypatch: pytest.MonkeyPatch
) -> None:
    # A loaded CI machine's 20 ms sleeps spread by more than 5% at times: the line moves to 30%, between the two cases
    # (the 5% itself is arithmetic, beside `RL_REPETITIONS`).
    monkeypatch.setattr(judge, "RL_PILOT_SPREAD", 0.3)
    task = small_tasks.small_relu(tmp_path_factory.mktemp("task"), small_tasks.TINY_CASES)
    source = task.source.replace("import torch.nn as nn\n", "import torch.nn as nn\n" + STEADY_OR_NOT, 1)
    source = source.replace(
        "        return torch.relu(x)", "        _steady_or_not(x)\n        return torch.relu(x)"
    )
    path = tmp_path_factory.mktemp("steady") / "relu.py"
    path.write_text(source)
    task = load_task_file(path)
    config = reward_verify_config("cpu", 60.0, "rl")
    verifier = Verifier(dataclasses.replace(config, time_on_cpu=True, repetitions=40, warmup=1, input_sets=2,
                                            hip_cache=tmp_path_factory.mktemp("hip")))  # fmt: skip
    verdict = verify_once(verifier, task, Candidate(task.task_id, "triton", RELU, "test"))
    assert verdict.correct is True, verdict.failure_message
    steady, noisy = verdict.timings
    assert (steady.timing_profile, steady.repetitions) == ("rl", RL_REPETITIONS)
    assert (noisy.timing_profile, noisy.repetitions) == ("full", 40)
    # fewer samples, every one still checked
    assert [t.checked_calls for t in verdict.timings] == [RL_REPETITIONS, 40]
    assert reward_verify_config("cpu", 60.0, "full").timing_profile == "full"
    with pytest.raises(ValueError, match="one of"):
        reward_verify_config("cpu", 60.0, "fast")

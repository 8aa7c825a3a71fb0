"""The graded execution reward (ARCHITECTURE.md, Reward) and its helpers."""

from __future__ import annotations

import math

import pytest

from kernelvault.contracts import FAILURE_KINDS
from kernelvault.toolchain.reward import (
    RewardConfig,
    binary_reward,
    graded_reward,
    speed_bonus,
    task_speedup,
    trajectory_return,
)

MAX_TOTAL = 0.4 + 1.0 + 1.5


def test_not_compiled_earns_nothing():
    for correct in (True, False, None):
        reward = graded_reward(compiled=False, correct=correct, speedup=3.0)
        assert reward.total == 0.0
        assert (reward.compile, reward.correct, reward.speed) == (0.0, 0.0, 0.0)


@pytest.mark.parametrize("kind", ["parse_error", "static_reject", "compile_error", "interface_error"])
def test_pre_build_failures_earn_nothing_even_if_compiled_is_claimed(kind):
    reward = graded_reward(compiled=True, correct=True, speedup=8.0, failure_kind=kind)
    assert reward.total == 0.0
    assert reward.compile == 0.0


@pytest.mark.parametrize(
    ("correct", "kind"),
    [
        (False, "mismatch"),
        (False, "runtime_error"),
        (False, "timeout"),
        (False, "integrity_reject"),
        (None, None),
    ],
)
def test_compiled_but_not_correct_earns_compile_credit_only(correct, kind):
    reward = graded_reward(compiled=True, correct=correct, speedup=10.0, failure_kind=kind)
    assert reward.total == pytest.approx(0.4)
    assert reward.compile == pytest.approx(0.4)
    assert reward.correct == 0.0
    assert reward.speed == 0.0


@pytest.mark.parametrize("speedup", [None, 0.5, 0.999, 1.0, math.nan, math.inf, -math.inf, -2.0, 0.0])
def test_correct_without_a_usable_speedup_earns_1_4(speedup):
    reward = graded_reward(compiled=True, correct=True, speedup=speedup)
    assert reward.total == pytest.approx(1.4)
    assert reward.speed == 0.0
    assert reward.correct == pytest.approx(1.0)


def test_speed_term_at_2x_is_0_375():
    reward = graded_reward(compiled=True, correct=True, speedup=2.0)
    assert reward.speed == pytest.approx(0.375)
    assert reward.total == pytest.approx(1.775)


def test_speed_term_at_4x_reaches_the_cap_exactly():
    reward = graded_reward(compiled=True, correct=True, speedup=4.0)
    assert reward.speed == pytest.approx(1.5)
    assert reward.total == pytest.approx(2.9)


def test_speed_term_is_capped_beyond_4x():
    for speedup in (16.0, 1e6):
        reward = graded_reward(compiled=True, correct=True, speedup=speedup)
        assert reward.speed == pytest.approx(1.5)
        assert reward.total == pytest.approx(2.9)


def test_speed_term_grows_between_1x_and_4x():
    values = [speed_bonus(1.0 + 0.25 * step) for step in range(13)]  # 1.0 .. 4.0
    assert values[0] == 0.0
    assert all(later > earlier for earlier, later in zip(values[:-1], values[1:], strict=True))


def test_total_stays_within_bounds_over_a_sweep():
    speedups = [None, math.nan, math.inf, -math.inf, -1.0, 0.0]
    speedups += [10 ** (exponent / 10) for exponent in range(-60, 61)]  # 1e-6 .. 1e6
    kinds = [None, *FAILURE_KINDS]
    seen = set()
    for compiled in (True, False):
        for correct in (True, False, None):
            for kind in kinds:
                for speedup in speedups:
                    reward = graded_reward(compiled, correct, speedup, kind)
                    assert 0.0 <= reward.total <= MAX_TOTAL + 1e-12, (compiled, correct, kind, speedup)
                    assert reward.total == pytest.approx(reward.compile + reward.correct + reward.speed)
                    seen.add(round(reward.total, 6))
    assert {0.0, 0.4, 1.4, 2.9} <= seen


def test_every_constant_is_configurable():
    config = RewardConfig(compile_reward=0.2, correct_reward=2.0, speed_coefficient=1.0, speed_cap=1.0)
    assert graded_reward(True, False, None, "mismatch", config).total == pytest.approx(0.2)
    assert graded_reward(True, True, None, None, config).total == pytest.approx(2.2)
    # log2(sqrt 2) = 0.5, so 1.0 * 0.5**2 = 0.25, below the cap
    assert graded_reward(True, True, math.sqrt(2.0), None, config).speed == pytest.approx(0.25)
    # 1.0 * log2(4)**2 = 4 would exceed the cap of 1.0
    capped = graded_reward(True, True, 4.0, None, config)
    assert capped.speed == pytest.approx(1.0)
    assert capped.total == pytest.approx(3.2)
    assert graded_reward(False, True, 4.0, None, config).total == 0.0


def test_trajectory_return_uses_discount_0_6_by_default():
    assert trajectory_return([1.0, 2.0, 3.0]) == pytest.approx(1.0 + 0.6 * 2.0 + 0.36 * 3.0)
    assert trajectory_return([0.4, 0.4, 2.9]) == pytest.approx(0.4 + 0.24 + 0.36 * 2.9)


def test_trajectory_return_with_custom_discount():
    config = RewardConfig(discount=0.5)
    assert trajectory_return([1.0, 1.0, 1.0, 1.0], config) == pytest.approx(1.875)
    assert trajectory_return([2.0, 4.0], RewardConfig(discount=1.0)) == pytest.approx(6.0)


def test_trajectory_return_of_no_turns_is_zero():
    assert trajectory_return([]) == 0.0


def test_binary_reward():
    assert binary_reward(True) == 1.0
    assert binary_reward(False) == 0.0
    assert binary_reward(None) == 0.0


def test_task_speedup_is_ratio_of_sums():
    # a mean of per-case ratios would give (2 + 0.5) / 2 = 1.25; the sum ratio is 12 / 11
    assert task_speedup([2.0, 10.0], [1.0, 10.0]) == pytest.approx(12.0 / 11.0)
    assert task_speedup([3.0], [1.5]) == pytest.approx(2.0)


@pytest.mark.parametrize(
    ("reference", "candidate"),
    [
        ([], []),
        ([1.0, 2.0], [1.0]),
        ([1.0], [1.0, 2.0]),
        ([1.0, 2.0], [0.0, 0.0]),
        ([1.0], [math.inf]),
        ([math.nan], [1.0]),
        ([1.0], [math.nan]),
        ([math.inf], [1.0]),
    ],
)
def test_task_speedup_is_none_when_not_measurable(reference, candidate):
    assert task_speedup(reference, candidate) is None


def test_task_speedup_is_none_when_reference_total_is_zero():
    # A reference that took no measurable time gives no speedup to report (not a speedup of 0).
    assert task_speedup([0.0, 0.0], [1.0, 2.0]) is None

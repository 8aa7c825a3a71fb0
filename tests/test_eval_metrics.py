"""The evaluation metrics on hand-made attempt rows, against values worked out by hand (no verification)."""

from __future__ import annotations

import itertools
import math
from typing import Any

import pytest

from kernelvault.pipelines.eval_metrics import (
    EvalSettings,
    Prices,
    SuiteTask,
    compute_eval_metrics,
    format_results,
    metric_rows,
    pass_at_k,
    pass_k_values,
)
from kernelvault.toolchain.reward import graded_reward

NO_COMPILE = ("parse_error", "static_reject", "compile_error", "interface_error", "infrastructure_error")
CATEGORY = {"softmax": "softmax", "row_sum": "reduction", "relu": "activation"}


def trajectory(task: str, sample: int, outcomes: list[tuple[str, float | None]],
               platform: str = "cuda") -> list[dict[str, Any]]:  # fmt: skip
    """Rows of one trajectory: ("correct", speedup), ("unknown", None) for a compiled attempt whose
    correctness could not be established, or (failure kind, None)."""
    rows = []
    for turn, (outcome, speedup) in enumerate(outcomes):
        compiled = outcome not in NO_COMPILE
        correct = {"correct": True, "unknown": None}.get(outcome, False)
        kind = None if outcome in ("correct", "unknown") else outcome
        rows.append({
            "run_id": "run", "task_id": task, "task_name": task, "task_category": CATEGORY[task],
            "task_origin": "bundled", "sample_index": sample, "turn": turn, "compiled": compiled,
            "correct": correct, "failure_kind": kind, "speedup": speedup,
            "reward": graded_reward(compiled, correct, speedup, kind).total, "trajectory_return": None,
            "prompt_tokens": 1000, "completion_tokens": 200, "platform": platform, "model": "m",
            "target": "triton", "sampling": None,
        })  # fmt: skip
    return rows


def settings(*tasks: str, samples: int = 2, turns: int = 2, prices: Prices | None = None) -> EvalSettings:
    return EvalSettings(model="m", suite="bundled", target="triton", samples=samples, turns=turns,
                        tasks=tuple(SuiteTask(t, t, CATEGORY[t]) for t in tasks), prices=prices or Prices())  # fmt: skip


def cells(metrics: Any) -> dict[str, str]:
    return {label: values[0] for label, values in metric_rows([metrics])}


def test_pass_at_k_is_the_probability_that_k_of_n_draws_include_a_correct_one() -> None:
    assert [pass_at_k(5, 2, k) for k in range(1, 6)] == pytest.approx([0.4, 0.7, 0.9, 1.0, 1.0])
    assert pass_at_k(4, 0, 2) == 0.0 and pass_at_k(1, 1, 1) == 1.0
    for n in range(1, 7):  # against enumeration of every k-subset of n trajectories, c of them correct
        for c in range(n + 1):
            outcomes = [True] * c + [False] * (n - c)
            for k in range(1, n + 1):
                subsets = list(itertools.combinations(outcomes, k))
                assert pass_at_k(n, c, k) == pytest.approx(sum(any(s) for s in subsets) / len(subsets))
    with pytest.raises(ValueError):
        pass_at_k(2, 1, 3)  # k > n: not estimable
    assert pass_at_k(200, 10, 100) == pytest.approx(1 - math.comb(190, 100) / math.comb(200, 100))


def test_reported_k_are_standard_values_up_to_the_sample_count() -> None:
    assert pass_k_values(1) == (1,) and pass_k_values(2) == (1, 2) and pass_k_values(4) == (1, 3, 4)
    assert pass_k_values(10) == (1, 3, 5, 10) and pass_k_values(12) == (1, 3, 5, 10, 12)


def test_timed_run_by_hand() -> None:
    rows = [
        *trajectory("softmax", 0, [("correct", 1.8)]),
        *trajectory("softmax", 1, [("mismatch", None), ("correct", 0.9)]),
        *trajectory("row_sum", 0, [("compile_error", None), ("correct", 3.0)]),
        *trajectory("row_sum", 1, [("correct", 1.2)]),
    ]
    m = compute_eval_metrics(rows, settings("softmax", "row_sum", prices=Prices(1.0, 4.0)))
    assert (m.attempts, m.compiled, m.correct_attempts, m.trajectories) == (6, 5, 4, 4)
    assert m.compile_rate == pytest.approx(5 / 6)
    assert m.pass_at == {1: 0.5, 2: 1.0}  # each task: c=1 of n=2 correct at attempt 1
    assert m.corr_at == {1: 0.5, 2: 1.0}
    # Fastest correct kernel per trajectory: softmax 1.8, 0.9; row_sum 3.0, 1.2 (strictly faster than p).
    assert m.fast == {0.0: 1.0, 1.0: 0.75, 1.5: 0.5, 2.0: 0.25}
    assert m.geomean_speedup == pytest.approx((1.8 * 0.9 * 3.0 * 1.2) ** 0.25)
    assert m.mean_reward == pytest.approx(sum(r["reward"] for r in rows) / 6)
    assert m.failures == {"mismatch": 1, "compile_error": 1}
    assert m.first_correct_histogram == {"1": 2, "2": 2, "never": 0}
    assert (m.prompt_tokens, m.completion_tokens) == (6000, 1200)
    assert m.tokens_per_correct == pytest.approx(7200 / 4)
    assert m.cost_usd == pytest.approx((6000 * 1.0 + 1200 * 4.0) / 1e6)
    assert m.cost_per_correct_usd == pytest.approx(m.cost_usd / 4)
    assert m.lower_bounds == () and m.notes == ()
    assert cells(m)["fast_1.5"] == "50.0%" and cells(m)["cost (USD)"] == "$0.0108"


def test_untimed_correct_kernels_make_speed_metrics_not_measured_not_zero() -> None:
    rows = [
        *trajectory("relu", 0, [("correct", None)], "cpu"),
        *trajectory("relu", 1, [("mismatch", None)] * 2, "cpu"),
    ]
    m = compute_eval_metrics(rows, settings("relu"))
    assert m.fast == {0.0: 0.5, 1.0: None, 1.5: None, 2.0: None} and m.geomean_speedup is None
    assert any("speed was not measured (platform cpu" in note for note in m.notes)
    row = cells(m)
    assert row["fast_1"] == "not measured" and row["geomean speedup (correct)"] == "not measured"
    assert row["fast_0"] == "50.0%" and row["cost (USD)"] == "no prices given"


def test_partly_timed_runs_give_lower_bounds() -> None:
    rows = [*trajectory("relu", 0, [("correct", 2.5)]), *trajectory("relu", 1, [("correct", None)])]
    m = compute_eval_metrics(rows, settings("relu"))
    assert m.fast[2.0] == 0.5 and "fast_2" in m.lower_bounds and "fast_0" not in m.lower_bounds
    assert m.geomean_speedup == pytest.approx(2.5) and (m.speed_measured, m.speed_unmeasured) == (1, 1)
    assert cells(m)["fast_2"] == "≥ 50.0%" and cells(m)["fast_0"] == "100.0%"


def test_unknown_correctness_is_never_counted_as_wrong() -> None:
    # HIP kernels compiled on a machine that cannot run them: correctness unknown everywhere.
    rows = [row for s in range(2) for row in trajectory("relu", s, [("unknown", None)] * 2, "cpu")]
    m = compute_eval_metrics(rows, settings("relu"))
    assert m.pass_at == {1: None, 2: None} and m.corr_at == {1: None, 2: None} and m.fast[0.0] is None
    assert m.correctness_unknown == 4 and m.compile_rate == 1.0
    assert cells(m)["Pass@1"] == "-" and any("not measured" in note for note in m.notes)
    assert m.per_task[0].pass_at_1 is None and m.per_category[0].corr_at_budget is None
    # Some known correct: the correctness metrics are lower bounds.
    rows = [
        *trajectory("relu", 0, [("correct", None)], "cpu"),
        *trajectory("relu", 1, [("unknown", None)] * 2, "cpu"),
    ]
    m = compute_eval_metrics(rows, settings("relu"))
    assert m.pass_at[1] == 0.5 and "pass@1" in m.lower_bounds and cells(m)["Pass@1"] == "≥ 50.0%"


def test_unrecorded_trajectories_are_counted_and_named() -> None:
    rows = trajectory("relu", 0, [("correct", 1.1)])  # sample 1 lost to provider errors; row_sum entirely
    m = compute_eval_metrics(rows, settings("relu", "row_sum"))
    assert m.missing_trajectories == 3 and m.trajectories == 1
    assert m.pass_at == {1: 1.0, 2: None}  # pass@2 needs 2 trajectories of a task
    assert any("3 of 4 trajectories were not recorded" in note for note in m.notes)
    assert "missing" in format_results([m]) and "| trajectories (missing) | 1 (3) |" in format_results(
        [m], True
    )


def test_rows_of_other_tasks_are_ignored() -> None:
    rows = [*trajectory("relu", 0, [("correct", None)]), *trajectory("softmax", 0, [("mismatch", None)])]
    m = compute_eval_metrics(rows, settings("relu", samples=1))
    assert m.attempts == 1 and m.tasks == 1 and m.pass_at == {1: 1.0}


def test_attempts_that_failed_on_our_side_are_called_out() -> None:
    rows = trajectory("relu", 0, [("infrastructure_error", None), ("correct", None)])
    m = compute_eval_metrics(rows, settings("relu", samples=1))
    assert m.corr_at == {1: 0.0, 2: 1.0} and m.failures == {"infrastructure_error": 1}
    assert any("1 attempt(s) failed on our side" in note for note in m.notes)


def test_an_optimisation_suite_judges_speed_over_each_tasks_baseline() -> None:
    """Kernel-to-kernel rows carry a baseline: fast_p and the geometric mean are over it (fast_1 is the share
    beating the baseline), whatever the speedup over PyTorch; the report says so."""
    rows = [
        *trajectory("softmax", 0, [("correct", 0.5)]),  # 0.5x PyTorch, but 2.5x its baseline
        *trajectory("softmax", 1, [("correct", 3.0)]),  # 3x PyTorch, 0.9x its baseline
        *trajectory("row_sum", 0, [("correct", 1.1)]),
        *trajectory("row_sum", 1, [("mismatch", None)]),
    ]
    over_baseline = {("softmax", 0): 2.5, ("softmax", 1): 0.9, ("row_sum", 0): 1.6}
    for row in rows:
        row["baseline_hash"] = "b" + row["task_id"]
        row["speedup_over_baseline"] = over_baseline.get((row["task_id"], row["sample_index"]))
    m = compute_eval_metrics(rows, settings("softmax", "row_sum"))
    assert m.speedup_basis == "baseline"
    assert m.fast == {
        0.0: 0.75,
        1.0: 0.5,
        1.5: 0.5,
        2.0: 0.25,
    }  # per task: softmax 1/2, row_sum 1/2 beat theirs
    assert m.geomean_speedup == pytest.approx((2.5 * 0.9 * 1.6) ** (1 / 3))
    assert cells(m)["fast_1 over the baseline"] == "50.0%"
    assert any("over each optimisation task's baseline kernel" in note for note in m.notes)
    plain = compute_eval_metrics(
        [{**row, "baseline_hash": None} for row in rows], settings("softmax", "row_sum")
    )
    assert plain.speedup_basis == "pytorch" and plain.fast[1.0] == pytest.approx(
        0.5
    )  # 3.0 and 1.1 beat PyTorch

"""Does the reward leave GRPO anything to learn from? Zero-spread groups and usable advantages.

GRPO's advantage of a sample is its reward minus its group's mean (then scaled). A group whose rewards are
all equal has zero advantage everywhere and contributes no gradient. With a binary reward, success rate p
and groups of G, that happens with probability (1-p)^G + p^G: 0.94^8 + 0.06^8 ≈ 0.61 for p = 0.06, G = 8.
For a reward with discrete tiers of probabilities q_k the same closed form is Σ_k q_k^G.

Measured here, on any set of groups (a GRPO run's logged rewards, or corpus attempts grouped by task):
- `zero_spread`: the fraction of groups whose rewards are all equal (within 1e-9);
- `usable`: the share of samples whose advantage |r - mean(group)| exceeds a threshold in reward units
  (default 0.05), so that a spread made only of timing noise in the speed term does not count as signal.
  The advantage is measured before any scaling: dividing by a group's std (`scale_rewards="group"`) would
  blow noise up to full size, which is exactly what the threshold is meant to see through.
Groups with fewer than two samples carry no advantage by construction; they are counted and left out.
"""

from __future__ import annotations

import json
import math
from collections import defaultdict
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

DEFAULT_THRESHOLD = 0.05  # reward units; the speed term moves ~0.02 for a 4% timing wobble at 2x speedup
SPREAD_EPSILON = 1e-9
# The reward variants compared, in table order: the binary baseline, the graded total, and its parts.
VARIANTS = ("binary", "graded", "compile", "correct", "speed")


@dataclass(frozen=True)
class SignalStats:
    variant: str  # "binary", "graded", "compile", "correct", "speed"
    groups: int  # groups of two or more samples
    samples: int
    zero_spread: float  # fraction of groups with all rewards equal
    usable: float  # fraction of samples with |advantage| > threshold
    mean_reward: float
    skipped_groups: int = 0  # groups of one sample (no advantage possible)


def zero_advantage_closed_form(tier_probabilities: Sequence[float], group_size: int) -> float:
    """Σ_k q_k^G: the chance that all G samples of a group land on the same reward tier."""
    total = sum(tier_probabilities)
    if any(q < 0 for q in tier_probabilities) or not math.isclose(total, 1.0, abs_tol=1e-6):
        raise ValueError(f"tier probabilities must be non-negative and sum to 1 (got sum {total:.6g})")
    if group_size < 1:
        raise ValueError("the group size must be at least 1")
    return sum(q**group_size for q in tier_probabilities)


def binary_zero_advantage(success_rate: float, group_size: int) -> float:
    """(1-p)^G + p^G: the share of GRPO groups with zero advantage under a binary reward."""
    if not 0.0 <= success_rate <= 1.0:
        raise ValueError("the success rate must lie in [0, 1]")
    return zero_advantage_closed_form([1.0 - success_rate, success_rate], group_size)


def advantages(group: Sequence[float]) -> list[float]:
    """Rewards minus the group mean: GRPO's advantage before any scaling."""
    mean = sum(group) / len(group)
    return [reward - mean for reward in group]


def signal_stats(
    variant: str, groups: Iterable[Sequence[float]], threshold: float = DEFAULT_THRESHOLD
) -> SignalStats:
    usable_groups = [list(group) for group in groups]
    skipped = sum(1 for group in usable_groups if len(group) < 2)
    kept = [group for group in usable_groups if len(group) >= 2]
    samples = sum(len(group) for group in kept)
    zero = sum(1 for group in kept if max(group) - min(group) <= SPREAD_EPSILON)
    floor = max(threshold, SPREAD_EPSILON)  # a mean of equal floats can differ from them in the last bit
    usable = sum(1 for group in kept for advantage in advantages(group) if abs(advantage) > floor)
    rewards = [reward for group in kept for reward in group]
    return SignalStats(
        variant=variant, groups=len(kept), samples=samples,
        zero_spread=zero / len(kept) if kept else float("nan"),
        usable=usable / samples if samples else float("nan"),
        mean_reward=sum(rewards) / len(rewards) if rewards else float("nan"), skipped_groups=skipped,
    )  # fmt: skip


def compare(
    groups_by_variant: Mapping[str, Sequence[Sequence[float]]], threshold: float = DEFAULT_THRESHOLD
) -> list[SignalStats]:
    order = [v for v in VARIANTS if v in groups_by_variant] + [
        v for v in groups_by_variant if v not in VARIANTS
    ]
    return [signal_stats(variant, groups_by_variant[variant], threshold) for variant in order]


def _group_rows(
    rows: Iterable[Mapping[str, Any]], key_fields: Sequence[str]
) -> list[list[Mapping[str, Any]]]:
    grouped: dict[tuple[Any, ...], list[Mapping[str, Any]]] = defaultdict(list)
    for row in rows:
        grouped[tuple(row[field] for field in key_fields)].append(row)
    return [grouped[key] for key in sorted(grouped, key=str)]


def groups_from_attempts(
    rows: Sequence[Mapping[str, Any]], unit: str = "attempt"
) -> dict[str, list[list[float]]]:
    """Corpus rows (ATTEMPT_SCHEMA) as GRPO-style groups, one reward list per variant.

    unit="attempt": a group is every sample of one task at one turn (what single-turn GRPO would see).
    unit="trajectory": a group is every trajectory of one task; the reward is the trajectory return and
    the binary reward is "solved at any turn" (what multi-turn GRPO sees). Components are per attempt only.
    """
    if unit == "attempt":
        groups = _group_rows(rows, ("task_id", "target", "turn"))
        return {
            "binary": [[1.0 if row["correct"] is True else 0.0 for row in group] for group in groups],
            "graded": [[float(row["reward"]) for row in group] for group in groups],
            "compile": [[float(row["reward_compile"]) for row in group] for group in groups],
            "correct": [[float(row["reward_correct"]) for row in group] for group in groups],
            "speed": [[float(row["reward_speed"]) for row in group] for group in groups],
        }
    if unit == "trajectory":
        trajectories = _group_rows(rows, ("task_id", "target", "run_id", "sample_index"))
        summary = [{
            "task_id": turns[0]["task_id"], "target": turns[0]["target"],
            "return": float(turns[0]["trajectory_return"] if turns[0]["trajectory_return"] is not None
                            else max(float(t["reward"]) for t in turns)),
            "solved": any(t["correct"] is True for t in turns),
        } for turns in trajectories]  # fmt: skip
        groups = _group_rows(summary, ("task_id", "target"))
        return {
            "binary": [[1.0 if row["solved"] else 0.0 for row in group] for group in groups],
            "graded": [[row["return"] for row in group] for group in groups],
        }
    raise ValueError(f"unknown unit {unit!r}: use 'attempt' or 'trajectory'")


def groups_from_reward_log(paths: Sequence[Path]) -> dict[str, list[list[float]]]:
    """The JSONL reward log of a GRPO run (rl.rewards writes one line per scored completion)."""
    rows = []
    for path in paths:
        with Path(path).open(encoding="utf-8") as handle:
            rows += [json.loads(line) for line in handle if line.strip()]
    groups = _group_rows(rows, ("rank", "batch", "group"))
    variants = [v for v in VARIANTS if rows and v in rows[0]]
    return {variant: [[float(row[variant]) for row in group] for group in groups] for variant in variants}


def format_table(stats: Sequence[SignalStats], markdown: bool = False) -> str:
    header = ["reward", "groups", "samples", "zero-spread groups", "usable samples", "mean reward"]
    rows = [[s.variant, str(s.groups), str(s.samples), _percent(s.zero_spread), _percent(s.usable),
             f"{s.mean_reward:.3f}"] for s in stats]  # fmt: skip
    if markdown:
        lines = ["| " + " | ".join(header) + " |", "|" + "---|" * len(header)]
        return "\n".join(lines + ["| " + " | ".join(row) + " |" for row in rows])
    widths = [max(len(cell) for cell in column) for column in zip(header, *rows, strict=True)]
    return "\n".join("  ".join(cell.ljust(width) for cell, width in zip(row, widths, strict=True))
                     for row in [header, *rows])  # fmt: skip


def _percent(value: float) -> str:
    return "-" if math.isnan(value) else f"{100 * value:.1f}%"


def plot_signal(stats: Sequence[SignalStats], path: Path, title: str = "GRPO signal") -> Path:
    """Two bars per reward variant: groups with zero spread, samples with a usable advantage."""
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    path = Path(path)
    path.parent.mkdir(parents=True, exist_ok=True)
    figure, axis = plt.subplots(figsize=(7, 3.6))
    positions = range(len(stats))
    axis.bar(
        [p - 0.2 for p in positions],
        [100 * s.zero_spread for s in stats],
        width=0.4,
        label="zero-spread groups",
    )
    axis.bar([p + 0.2 for p in positions], [100 * s.usable for s in stats], width=0.4, label="usable samples")
    axis.set_xticks(list(positions), [s.variant for s in stats])
    axis.set_ylabel("%")
    axis.set_ylim(0, 105)
    axis.set_title(title)
    axis.legend(loc="upper center", bbox_to_anchor=(0.5, -0.1), ncol=2, frameon=False)
    figure.tight_layout()
    figure.savefig(path, dpi=120)
    plt.close(figure)
    return path

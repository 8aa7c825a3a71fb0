"""Does the graded reward keep GRPO groups alive where a binary one leaves them dead? Prints Markdown tables.

    python bench/grpo_signal.py [--dataset CORPUS_DIR] [--plot PATH] [--groups 20000] [--seed 0]

1. Closed form: the share of groups with zero advantage, Σ_k q_k^G, for a binary reward at the issue's
   6 % success rate (0.94⁸ + 0.06⁸ ≈ 0.61) and for the graded reward's three tiers at assumed splits.
2. Simulation (NOT measured rollouts): groups of G = 8 drawn from assumed tier probabilities (no compile /
   compiles but wrong / correct, 6 % correct throughout); a correct sample's speedup is drawn from the
   speedups measured for the bundled Triton examples on an H200 (bench/results/2026-11-29-h200-examples.md)
   times log-normal timing noise (3 %). Rewards come from `kernelvault.toolchain.reward` (the one reward function).
3. Measured: a corpus folder of real verified attempts (`kernelvault corpus` output), grouped by task, when
   `--dataset` is given. On cpu there is no timing, so the speed term is 0 there.

Columns: zero-advantage groups (all rewards equal), samples with a nonzero advantage (r ≠ group mean), and
samples with a usable advantage (|r - group mean| > 0.05: timing noise alone does not count).
"""

from __future__ import annotations

import argparse
import math
import random
import sys
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

from kernelvault.rl import diagnostics  # noqa: E402
from kernelvault.toolchain.reward import binary_reward, graded_reward  # noqa: E402

# Speedups of the 12 bundled Triton examples measured on an NVIDIA H200 (2026-11-29, see the results file).
H200_EXAMPLE_SPEEDUPS = (2.94, 1.58, 0.97, 0.82, 0.84, 2.48, 0.97, 4.44, 1.44, 2.29, 1.35, 0.99)
TIMING_NOISE = 0.03  # log-normal sigma of one speedup measurement
SUCCESS = 0.06
GROUP = 8
# (no compile, compiles but wrong, correct): assumed splits, the correct share fixed at the 6 %.
TIER_SPLITS = ((0.74, 0.20, SUCCESS), (0.50, 0.44, SUCCESS), (0.24, 0.70, SUCCESS))


def simulate(
    split: tuple[float, float, float], groups: int, rng: random.Random
) -> dict[str, list[list[float]]]:
    variants: dict[str, list[list[float]]] = {v: [] for v in diagnostics.VARIANTS}
    for _ in range(groups):
        rewards = []
        for _ in range(GROUP):
            draw = rng.random()
            if draw < split[0]:
                rewards.append((graded_reward(False, None, None, "compile_error"), False))
            elif draw < split[0] + split[1]:
                rewards.append((graded_reward(True, False, None, "mismatch"), False))
            else:
                speedup = rng.choice(H200_EXAMPLE_SPEEDUPS) * math.exp(rng.gauss(0.0, TIMING_NOISE))
                rewards.append((graded_reward(True, True, speedup), True))
        variants["binary"].append([binary_reward(correct) for _, correct in rewards])
        variants["graded"].append([reward.total for reward, _ in rewards])
        for part in ("compile", "correct", "speed"):
            variants[part].append([getattr(reward, part) for reward, _ in rewards])
    return variants


def table(
    groups: dict[str, list[list[float]]], threshold: float
) -> tuple[str, list[diagnostics.SignalStats]]:
    nonzero = {s.variant: s for s in diagnostics.compare(groups, threshold=0.0)}
    usable = diagnostics.compare(groups, threshold=threshold)
    lines = ["| reward | groups | samples | zero-advantage groups | nonzero-advantage samples | usable samples | mean |",
             "|---|---|---|---|---|---|---|"]  # fmt: skip
    for stats in usable:
        lines.append(f"| {stats.variant} | {stats.groups} | {stats.samples} | {100 * stats.zero_spread:.1f}% | "
                     f"{100 * nonzero[stats.variant].usable:.1f}% | {100 * stats.usable:.1f}% | {stats.mean_reward:.3f} |")  # fmt: skip
    return "\n".join(lines), usable


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--dataset", help="corpus folder of verified attempts (data/triton/*.parquet)")
    parser.add_argument("--plot", help="PNG of the measured (or else the middle simulated) comparison")
    parser.add_argument("--groups", type=int, default=20_000, help="simulated groups per tier split")
    parser.add_argument("--threshold", type=float, default=diagnostics.DEFAULT_THRESHOLD)
    parser.add_argument("--seed", type=int, default=0)
    args = parser.parse_args()
    rng = random.Random(args.seed)

    print(f"## Closed form, groups of G = {GROUP}\n")
    print("| reward | tier probabilities | zero-advantage groups Σ q_k^G |\n|---|---|---|")
    print(
        f"| binary | correct {SUCCESS:g}, not {1 - SUCCESS:g} | {100 * diagnostics.binary_zero_advantage(SUCCESS, GROUP):.2f}% |"
    )
    for split in TIER_SPLITS:
        value = diagnostics.zero_advantage_closed_form(split, GROUP)
        print(
            f"| graded tiers | no compile {split[0]:g}, compiles {split[1]:g}, correct {split[2]:g} | {100 * value:.2f}% |"
        )

    plotted = None
    for split in TIER_SPLITS:
        print(f"\n## Simulated: {args.groups} groups of {GROUP}; no compile {split[0]:g}, compiles {split[1]:g}, "
              f"correct {split[2]:g}; speedups from the H200 examples × {TIMING_NOISE:.0%} noise\n")  # fmt: skip
        text, stats = table(simulate(split, args.groups, rng), args.threshold)
        print(text)
        plotted = stats if split == TIER_SPLITS[1] else plotted

    if args.dataset:
        from kernelvault.cli.rl import _attempt_rows

        groups = diagnostics.groups_from_attempts(_attempt_rows(Path(args.dataset)), "attempt")
        text, stats = table(groups, args.threshold)
        print(f"\n## Measured: verified attempts in {args.dataset}, grouped by task "
              f"({stats[0].skipped_groups} single-attempt tasks left out)\n")  # fmt: skip
        print(text)
        plotted = stats
    if args.plot and plotted is not None:
        print(f"\nplot: {diagnostics.plot_signal(plotted, Path(args.plot), 'GRPO signal: binary vs graded')}")
    return 0


if __name__ == "__main__":
    sys.exit(main())

"""The graded execution reward, one pure function of a verification result.

r = 0                                           does not compile, or breaks the interface
r = 0.4                                         compiles, not correct (or correctness unknown)
r = 0.4 + 1.0 + min(1.5, 0.375 * log2(s)^2)     correct, speedup s >= 1
r = 0.4 + 1.0                                   correct, speedup < 1, unknown, or not finite

The total lies in [0, 2.9]. Every constant is a field of `RewardConfig`. A multi-turn trajectory
returns G = r1 + d*r2 + d^2*r3 (discount d = 0.6). `binary_reward` (1 if correct) is kept for
comparison: the graded reward exists because binary rewards leave most GRPO groups with zero
advantage when success is rare.

Everything else in the project (corpus rows, agents' feedback, the RL adapters) calls these
functions; there is no second implementation.
"""

from __future__ import annotations

import math
from collections.abc import Sequence
from dataclasses import dataclass

from kernelvault.contracts import QAScore, RewardBreakdown

# Failures that mean "did not compile or broke the interface": no compile credit. A mismatch, a
# runtime error, a timeout or an integrity reject happen after a successful build and keep it.
_NO_COMPILE_CREDIT = frozenset({"parse_error", "static_reject", "compile_error", "interface_error"})


@dataclass(frozen=True)
class RewardConfig:
    compile_reward: float = 0.4
    correct_reward: float = 1.0
    speed_coefficient: float = 0.375  # multiplies log2(speedup)^2
    speed_cap: float = 1.5  # the speed term never exceeds this
    discount: float = 0.6  # per-turn discount of the trajectory return


DEFAULT_REWARD = RewardConfig()


def speed_bonus(speedup: float | None, config: RewardConfig = DEFAULT_REWARD) -> float:
    """min(cap, c * log2(s)^2) for a finite speedup s >= 1, else 0 (no reward for being slower)."""
    if speedup is None or not math.isfinite(speedup) or speedup < 1.0:
        return 0.0
    return min(config.speed_cap, config.speed_coefficient * math.log2(speedup) ** 2)


def graded_reward(
    compiled: bool,
    correct: bool | None,
    speedup: float | None,
    failure_kind: str | None = None,
    config: RewardConfig = DEFAULT_REWARD,
) -> RewardBreakdown:
    """The per-attempt reward. `correct=None` (platform could not run it) earns no correctness credit."""
    if not compiled or failure_kind in _NO_COMPILE_CREDIT:
        return RewardBreakdown(compile=0.0, correct=0.0, speed=0.0, total=0.0)
    if correct is not True:
        return RewardBreakdown(
            compile=config.compile_reward, correct=0.0, speed=0.0, total=config.compile_reward
        )
    speed = speed_bonus(speedup, config)
    total = config.compile_reward + config.correct_reward + speed
    return RewardBreakdown(
        compile=config.compile_reward, correct=config.correct_reward, speed=speed, total=total
    )


def binary_reward(correct: bool | None) -> float:
    return 1.0 if correct is True else 0.0


def trajectory_return(turn_rewards: Sequence[float], config: RewardConfig = DEFAULT_REWARD) -> float:
    """G = r1 + d*r2 + d^2*r3 + ... for the rewards of one multi-turn trajectory, first turn first."""
    return sum(reward * config.discount**turn for turn, reward in enumerate(turn_rewards))


def task_speedup(reference_ms: Sequence[float], candidate_ms: Sequence[float]) -> float | None:
    """Speedup over several performance cases: sum(reference) / sum(candidate); None if not measurable."""
    if not reference_ms or len(reference_ms) != len(candidate_ms):
        return None
    total_candidate = sum(candidate_ms)
    total_reference = sum(reference_ms)
    if not (math.isfinite(total_candidate) and math.isfinite(total_reference)):
        return None
    if total_candidate <= 0 or total_reference <= 0:
        return None
    return total_reference / total_candidate


# The QA score: the same idea for ROCm library question-answer entries (`qa` rows). It rewards what was
# verified, rung by rung, and nothing for prose:
#
#   q = 0                    the answer names an identifier the headers do not declare (invented, or CUDA-only)
#   q = 0.5                  nothing invented
#   q = 0.5 + 0.5            and its snippet compiles for gfx90a against the real headers
#   q = 0.5 + 0.5 + 0.5      and, a program, it links against the real libraries
#   q = 0.5 + 0.5 + 0.5 + 0.5   and it ran on a GPU (through the HIP-to-CUDA header) and printed what it states
#
# A rung that fails or does not apply ends the climb: a prose-only answer tops out at 0.5, a kernel at 1.0, a
# library program (which cannot run without an AMD GPU) at 1.5. The total lies in [0, 2.0].
@dataclass(frozen=True)
class QAScoreConfig:
    existence_reward: float = 0.5
    compile_reward: float = 0.5
    link_reward: float = 0.5
    run_reward: float = 0.5


DEFAULT_QA_SCORE = QAScoreConfig()
_RUN_PASSES = frozenset({"passed", "ran"})


def qa_score(
    invented: int, compile: str, link: str, run: str, config: QAScoreConfig = DEFAULT_QA_SCORE
) -> QAScore:
    """The score of one QA entry from its checks' outcomes (`invented`: how many invented or CUDA-only names)."""
    if invented:
        return QAScore(existence=0.0, compile=0.0, link=0.0, run=0.0, total=0.0)
    rungs = [config.existence_reward, 0.0, 0.0, 0.0]
    for index, (passed, reward) in enumerate(((compile == "passed", config.compile_reward),
                                              (link == "passed", config.link_reward),
                                              (run in _RUN_PASSES, config.run_reward)), start=1):  # fmt: skip
        if not passed:
            break
        rungs[index] = reward
    return QAScore(existence=rungs[0], compile=rungs[1], link=rungs[2], run=rungs[3], total=sum(rungs))

"""verl reward functions: `compute_score` (one response) and `compute_score_batch` (a batch, concurrently).

verl calls a custom reward function by file path and name (`custom_reward_function.path=rl/verl_score.py`,
`custom_reward_function.name=compute_score`, or `compute_score_batch` with `reward_model.reward_manager=batch`).
It imports nothing from verl. Rows come from the release's `rl_verl` config: `reward_model.ground_truth` is the
task's reference program, `extra_info` names the task and the target; `data_source` is "kernelvault/<target>".

The score is the toolchain's graded reward (`Verdict.reward.total`, from `kernelvault.toolchain.reward`). The returned
dict carries the components beside it (verl logs every key): `compile`, `correct`, `speed`, `binary`, and
`parsed`. Where the multi-turn agent loop (`kernelvault.rl.verl_agent`) already verified every turn, its discounted
return arrives in `extra_info["rollout_reward_scores"]` and is used as is: re-verifying the concatenated
turns would score text the model never submitted as one answer.

Verification runs where the environment says (`kernelvault.rl.verifiers`): a reward service at KV_REWARD_URL (the
usual choice on a multi-node run: GPU nodes that train do not also time kernels), else this process's
toolchain on KV_PLATFORM.
"""

from __future__ import annotations

from collections.abc import Sequence
from concurrent.futures import ThreadPoolExecutor
from typing import Any

from kernelvault.contracts import TARGETS, Candidate
from kernelvault.rl.rewards import TaskBook
from kernelvault.toolchain.reward import binary_reward

_TASKS = TaskBook()


def target_of(data_source: str, extra_info: dict[str, Any]) -> str:
    target = extra_info.get("target") or data_source.rpartition("/")[2] or "triton"
    if target not in TARGETS:
        raise ValueError(f"{data_source}: target must be one of {', '.join(TARGETS)} (got {target!r})")
    return target


def compute_score(data_source: str, solution_str: str, ground_truth: str, extra_info: dict[str, Any] | None = None) -> dict[str, float]:  # fmt: skip
    """verl's reward-function signature: the graded reward of one response, with its components."""
    from kernelvault.rl.verifiers import verdict_source_from_env

    extra_info = dict(extra_info or {})
    rollout_scores = extra_info.get("rollout_reward_scores") or {}
    if "trajectory_return" in rollout_scores:
        scores = {
            key: float(value) for key, value in rollout_scores.items() if isinstance(value, (int, float))
        }
        return {**scores, "score": float(rollout_scores["trajectory_return"])}
    target = target_of(data_source, extra_info)
    task = _TASKS.get(ground_truth, extra_info.get("task_name"))
    candidate = Candidate(task.task_id, target, solution_str, "model:verl")  # type: ignore[arg-type]
    verdict = verdict_source_from_env().verify(task, candidate)
    reward = verdict.reward
    assert reward is not None, "the toolchain always attaches a reward to a verdict"
    return {
        "score": reward.total, "compile": reward.compile, "correct": reward.correct, "speed": reward.speed,
        "binary": binary_reward(verdict.correct), "parsed": float(verdict.failure_kind != "parse_error"),
    }  # fmt: skip


def compute_score_batch(data_sources: Sequence[str], solution_strs: Sequence[str], ground_truths: Sequence[str],
                        extra_infos: Sequence[dict[str, Any] | None], max_workers: int = 16) -> list[dict[str, float]]:  # fmt: skip
    """verl's batch reward manager signature: the batch verified `max_workers` at a time (threads: each
    verification waits on a sandboxed worker process or on the reward service)."""
    with ThreadPoolExecutor(max_workers=max(1, max_workers)) as pool:
        return list(pool.map(compute_score, data_sources, solution_strs, ground_truths, extra_infos))

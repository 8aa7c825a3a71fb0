"""verl reward functions: `compute_score_async` for verl's reward loop, `compute_score` for a plain call.

verl 0.9.1 (the `verl` extra pins it) scores rollouts in its reward loop: `RewardLoopWorker` actors run the
registered reward manager (`naive` by default) on every sample of a batch concurrently, and the manager awaits
a custom reward function that is a coroutine. So:

    reward.custom_reward_function.path=rl/verl_score.py reward.custom_reward_function.name=compute_score_async

and leave `reward.reward_manager.name` at `naive`. Every sample of a batch is then in flight at once, and this
process's lane pool (`kernelvault.rl.verifiers`: persistent lanes on each GPU the worker may use) verifies
them side by side. Nothing here imports verl; tests/verl/ runs these functions through verl's own
`load_reward_manager`, registry and `RewardLoopWorker`. (verl's old `batch` reward manager is not in its reward
loop, so there is no batch function any more.)

Rows come from the release's `rl_verl` config: `reward_model.ground_truth` is the task's reference program,
`extra_info` names the task and the target; `data_source` is "kernelvault/<target>". The score is the
toolchain's graded reward (`Verdict.reward.total`, from `kernelvault.toolchain.reward`); the returned dict carries
the components beside it (verl logs every key): `compile`, `correct`, `speed`, `binary` and `parsed`. Where
the multi-turn agent loop (`kernelvault.rl.verl_agent`) already verified every turn, its discounted return
arrives in `extra_info["rollout_reward_scores"]` and is used as is: re-verifying the concatenated turns would
score text the model never submitted as one answer.

Verification runs where the environment says (`kernelvault.rl.verifiers`): a reward service at KV_REWARD_URL
(the usual choice on a multi-node run: GPU nodes that train do not also time kernels), else this process's
toolchain on KV_PLATFORM.
"""

from __future__ import annotations

import asyncio
from typing import Any

from kernelvault.contracts import TARGETS, Candidate, Task, Verdict
from kernelvault.rl.rewards import TaskBook
from kernelvault.toolchain.reward import binary_reward

_TASKS = TaskBook()


def target_of(data_source: str, extra_info: dict[str, Any]) -> str:
    target = extra_info.get("target") or data_source.rpartition("/")[2] or "triton"
    if target not in TARGETS:
        raise ValueError(f"{data_source}: target must be one of {', '.join(TARGETS)} (got {target!r})")
    return target


def _rollout_score(extra_info: dict[str, Any]) -> dict[str, float] | None:
    """The agent loop's own score of a multi-turn trajectory, where there is one."""
    rollout_scores = extra_info.get("rollout_reward_scores") or {}
    if "trajectory_return" not in rollout_scores:
        return None
    scores = {key: float(value) for key, value in rollout_scores.items() if isinstance(value, (int, float))}
    return {**scores, "score": float(rollout_scores["trajectory_return"])}


def _attempt(data_source: str, solution_str: str, ground_truth: str, extra_info: dict[str, Any]) -> tuple[Task, Candidate]:  # fmt: skip
    target = target_of(data_source, extra_info)
    task = _TASKS.get(ground_truth, extra_info.get("task_name"))
    return task, Candidate(task.task_id, target, solution_str, "model:verl")  # type: ignore[arg-type]


def _scores(verdict: Verdict) -> dict[str, float]:
    reward = verdict.reward
    assert reward is not None, "the toolchain always attaches a reward to a verdict"
    return {
        "score": reward.total, "compile": reward.compile, "correct": reward.correct, "speed": reward.speed,
        "binary": binary_reward(verdict.correct), "parsed": float(verdict.failure_kind != "parse_error"),
    }  # fmt: skip


def compute_score(data_source: str, solution_str: str, ground_truth: str, extra_info: dict[str, Any] | None = None,
                  **_: Any) -> dict[str, float]:  # fmt: skip
    """verl's reward-function signature: the graded reward of one response, with its components (blocking)."""
    from kernelvault.rl.verifiers import verdict_source_from_env

    extra_info = dict(extra_info or {})
    shortcut = _rollout_score(extra_info)
    if shortcut is not None:
        return shortcut
    task, candidate = _attempt(data_source, solution_str, ground_truth, extra_info)
    return _scores(verdict_source_from_env().verify(task, candidate))


async def compute_score_async(data_source: str, solution_str: str, ground_truth: str,
                              extra_info: dict[str, Any] | None = None, **_: Any) -> dict[str, float]:  # fmt: skip
    """The same score as a coroutine, for verl's reward loop: it never blocks the worker's event loop, so the
    loop keeps every sample of the batch in flight (the local pool's `averify`, or a reward service call in a
    thread). Extra keyword arguments verl passes (a reward router's address) are not used."""
    from kernelvault.rl.verifiers import verdict_source_from_env

    extra_info = dict(extra_info or {})
    shortcut = _rollout_score(extra_info)
    if shortcut is not None:
        return shortcut
    task, candidate = _attempt(data_source, solution_str, ground_truth, extra_info)
    source = verdict_source_from_env()
    if source.pool is not None:
        verdict = await source.pool.averify(task, candidate)
    else:
        verdict = await asyncio.to_thread(source.verify, task, candidate)
    return _scores(verdict)

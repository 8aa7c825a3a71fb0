"""TRL reward functions around the toolchain: a completion's reward is the verdict's graded reward.

There is no reward arithmetic here. The toolchain's `verify` (a local lane pool's `LanePool.verify`, or
`kernelvault.rl.reward_service.RemoteVerifier.verify` on other machines) returns a `Verdict` whose `reward` was computed
by `kernelvault.toolchain.reward.graded_reward`; the binary reward shown beside it is `kernelvault.toolchain.reward.binary_reward`.

- `ExecutionReward` (single turn): verifies every completion of a batch concurrently (a thread per
  verification, each running its candidate in a sandboxed worker process; at most `concurrency` at once, by
  default what the lane pool behind `verify` keeps busy;
  identical completions of one task are verified once) and returns the graded totals. A plain call returns
  the list of floats, so GRPOTrainer runs it as a synchronous reward function; `acall` is the same, awaitable,
  for callers with an event loop of their own. `kernelvault.rl.verifiers.execution_reward("hub:ORG/NAME@vX.Y.Z")`
  (or a release folder) is the one-line way in: the reward, with the version's `rl` prompts beside it (`.dataset`).
- `TrajectoryReward` (multi-turn): the rollout (`kernelvault.rl.rollout`) already verified every turn; this returns the
  discounted trajectory return it computed and logs the per-turn components.

Both follow GRPOTrainer's contract (TRL 1.16): called with `prompts`, `completions`, `completion_ids` and
every dataset column as a keyword list (`task_source`, `task_name`, …), plus `log_metric`/`log_extra`. They
log each reward component (`reward/compile`, `reward/correct`, `reward/speed`), the verification outcome,
and, per group of `group_size` consecutive samples, the zero-spread and usable-advantage shares under the
graded and the binary reward (`signal/…`; see `kernelvault.rl.diagnostics`). TRL's own `frac_reward_zero_std` reads
per group only with `scale_rewards="group"`; `signal/graded_zero_spread` is per group whatever the scaling.
A reward log (`rewards-rank{R}.jsonl`, one line per sample) feeds `kernelvault rl diagnose --rewards`.

A verification that cannot be obtained (the reward service unreachable after its retries) raises and stops
the step: scoring it 0 would teach the policy that good kernels are worthless.
"""

from __future__ import annotations

import asyncio
import json
import os
import time
from collections.abc import Callable, Sequence
from concurrent.futures import Future, ThreadPoolExecutor
from dataclasses import asdict, dataclass
from pathlib import Path
from typing import Any

from kernelvault.contracts import Candidate, Task, Verdict, content_hash
from kernelvault.rl.diagnostics import DEFAULT_THRESHOLD, signal_stats
from kernelvault.toolchain.reward import binary_reward
from kernelvault.toolchain.tasks import parse_task

VerifyFunction = Callable[[Task, Candidate], Verdict]
REMOTE_IN_FLIGHT = (
    16  # verifications in flight when the verifier's own capacity is not known (a reward service)
)


class TaskBook:
    """Tasks by reference source: RL datasets carry the reference program (`task_source`), not a `Task`."""

    def __init__(self) -> None:
        self._tasks: dict[str, Task] = {}

    def get(self, source: str, name: str | None = None) -> Task:
        key = content_hash(source)
        if key not in self._tasks:
            # A task that does not parse is a broken dataset, not a bad completion: TaskFormatError propagates.
            self._tasks[key] = parse_task(source, name or key, "rl")
        return self._tasks[key]


def completion_text(completion: Any) -> str:
    """The answer text of a TRL completion: a string, or a list of chat messages (conversational)."""
    if isinstance(completion, str):
        return completion
    return "".join(m.get("content") or "" for m in completion if m.get("role", "assistant") == "assistant")


@dataclass(frozen=True)
class ScoredSample:
    """One line of the reward log and one row of the signal statistics."""

    task_id: str
    task_name: str
    graded: float  # the reward GRPO optimises (a trajectory return in multi-turn runs)
    binary: float
    compile: float
    correct: float
    speed: float
    failure_kind: str | None
    speedup: float | None
    turns: int = 1


def scored_from_verdict(task: Task, verdict: Verdict) -> ScoredSample:
    reward = verdict.reward
    assert reward is not None, "the toolchain always attaches a reward to a verdict"
    return ScoredSample(task.task_id, task.name, reward.total, binary_reward(verdict.correct), reward.compile,
                        reward.correct, reward.speed, verdict.failure_kind, verdict.speedup)  # fmt: skip


class RewardReporter:
    """Metrics, completion-table columns and the JSONL reward log for one reward function."""

    def __init__(
        self, group_size: int | None, log_dir: Path | None, threshold: float = DEFAULT_THRESHOLD
    ) -> None:
        self.group_size = group_size
        self.threshold = threshold
        rank = os.environ.get("RANK", "0")
        self.rank = int(rank) if rank.isdigit() else 0
        self.log_path = Path(log_dir) / f"rewards-rank{self.rank}.jsonl" if log_dir else None
        self.batches = 0

    def report(
        self, samples: Sequence[ScoredSample], columns: dict[str, Any], extra_metrics: dict[str, float]
    ) -> None:
        log_metric = columns.get("log_metric")
        log_extra = columns.get("log_extra")
        metrics = dict(extra_metrics)
        count = max(1, len(samples))
        for part in ("compile", "correct", "speed", "binary"):
            metrics[f"reward/{part}"] = sum(getattr(s, part) for s in samples) / count
        metrics["verify/frac_parsed"] = sum(s.failure_kind != "parse_error" for s in samples) / count
        metrics["verify/frac_compiled"] = sum(s.compile > 0 for s in samples) / count
        metrics["verify/frac_correct"] = sum(s.binary > 0 for s in samples) / count
        groups = self._groups(samples)
        if groups:
            for variant in ("graded", "binary"):
                stats = signal_stats(
                    variant, [[getattr(s, variant) for s in g] for g in groups], self.threshold
                )
                metrics[f"signal/{variant}_zero_spread"] = stats.zero_spread
                metrics[f"signal/{variant}_usable"] = stats.usable
        if log_metric is not None:
            for name, value in metrics.items():
                log_metric(name, value)
        if log_extra is not None:
            log_extra("failure_kind", [s.failure_kind or "correct" for s in samples])
            log_extra("speedup", [s.speedup for s in samples])
        self._write_log(samples, columns.get("trainer_state"))
        self.batches += 1

    def _groups(self, samples: Sequence[ScoredSample]) -> list[Sequence[ScoredSample]]:
        """Consecutive runs of `group_size` samples: GRPOTrainer's RepeatSampler keeps a prompt's G together."""
        size = self.group_size
        if not size or size < 2 or len(samples) % size:
            return []
        return [samples[start : start + size] for start in range(0, len(samples), size)]

    def _write_log(self, samples: Sequence[ScoredSample], trainer_state: Any) -> None:
        if self.log_path is None:
            return
        self.log_path.parent.mkdir(parents=True, exist_ok=True)
        step = getattr(trainer_state, "global_step", None)
        size = self.group_size or len(samples) or 1
        with self.log_path.open("a", encoding="utf-8") as handle:
            for index, sample in enumerate(samples):
                line = {"rank": self.rank, "batch": self.batches, "step": step, "group": index // size,
                        "index": index, **asdict(sample)}  # fmt: skip
                handle.write(json.dumps(line) + "\n")


class ExecutionReward:
    """Single-turn GRPO reward: verify each completion with the toolchain, return the graded total.

    `target` is the language a completion is verified as where the dataset has no `target` column (a release's
    `rl` config has one, per row)."""

    def __init__(
        self,
        verify: VerifyFunction,
        target: str = "triton",
        concurrency: int | None = None,
        group_size: int | None = None,
        log_dir: Path | None = None,
        threshold: float = DEFAULT_THRESHOLD,
        model_name: str = "policy",
    ) -> None:
        self.__name__ = "execution"  # TRL names its metrics after the function: rewards/execution/mean
        self.verify = verify
        self.target = target
        # None: what the verifier can keep busy, the lane pool's `slots` where `verify` is a pool's (a whole GRPO
        # batch goes out at once and the pool's lanes take it), else REMOTE_IN_FLIGHT
        owner_slots = getattr(getattr(verify, "__self__", None), "slots", None)
        self.concurrency = concurrency or (owner_slots if isinstance(owner_slots, int) else REMOTE_IN_FLIGHT)
        self.model_name = model_name
        self.tasks = TaskBook()
        self.reporter = RewardReporter(group_size, log_dir, threshold)
        self.dataset: Any = None  # the version's `rl` splits (a datasets.DatasetDict), when made from one
        self.platform: str | None = None  # where the verdicts come from, when known

    def __call__(self, prompts: list[Any], completions: list[Any], completion_ids: list[list[int]] | None = None,
                 **columns: Any) -> list[float]:  # fmt: skip
        """GRPOTrainer's reward function contract (TRL 1.16): the batch's prompts and completions, every dataset
        column as a keyword list (`task_source` is required), `log_metric`/`log_extra`/`trainer_state`."""
        sources = columns.get("task_source")
        if sources is None:
            raise ValueError(
                "the RL dataset needs a task_source column (the reference program) to verify against"
            )
        names = columns.get("task_name") or [None] * len(sources)
        targets = columns.get("target") or [self.target] * len(sources)
        tasks = [self.tasks.get(source, name) for source, name in zip(sources, names, strict=True)]
        texts = [completion_text(completion) for completion in completions]
        started = time.perf_counter()
        verdicts = self.verify_all(tasks, texts, targets)
        seconds = time.perf_counter() - started
        samples = [scored_from_verdict(task, verdict) for task, verdict in zip(tasks, verdicts, strict=True)]
        self.reporter.report(samples, columns, {"verify/batch_seconds": seconds})
        return [sample.graded for sample in samples]

    async def acall(self, prompts: list[Any], completions: list[Any],
                    completion_ids: list[list[int]] | None = None, **columns: Any) -> list[float]:  # fmt: skip
        """The same call, awaitable: the batch is verified in a worker thread, so the event loop stays free."""
        return await asyncio.to_thread(self.__call__, prompts, completions, completion_ids, **columns)

    def verify_all(self, tasks: Sequence[Task], texts: Sequence[str], targets: Sequence[str] | None = None
                   ) -> list[Verdict]:  # fmt: skip
        """Verify (task, text) pairs concurrently, at most `concurrency` at once; equal pairs share one
        verification."""
        targets = list(targets) if targets is not None else [self.target] * len(tasks)
        keys = [
            (task.task_id, target, text) for task, target, text in zip(tasks, targets, texts, strict=True)
        ]
        pending: dict[tuple[str, str, str], Future[Verdict]] = {}
        with ThreadPoolExecutor(max_workers=max(1, self.concurrency), thread_name_prefix="kv-reward") as pool:
            for task, (task_id, target, text) in zip(tasks, keys, strict=True):
                if (task_id, target, text) not in pending:
                    candidate = Candidate(task_id, target, text, f"model:{self.model_name}")  # type: ignore[arg-type]
                    pending[(task_id, target, text)] = pool.submit(self.verify, task, candidate)
            return [pending[key].result() for key in keys]


class TrajectoryReward:
    """Multi-turn GRPO reward: the discounted return the rollout computed from its per-turn verdicts."""

    def __init__(self, group_size: int | None = None, log_dir: Path | None = None,
                 threshold: float = DEFAULT_THRESHOLD) -> None:  # fmt: skip
        self.__name__ = "trajectory_return"
        self.reporter = RewardReporter(group_size, log_dir, threshold)

    def __call__(self, prompts: list[Any], completions: list[Any], completion_ids: list[list[int]] | None = None,
                 **columns: Any) -> list[float]:  # fmt: skip
        if "trajectory_return" not in columns:
            raise ValueError(
                "TrajectoryReward needs the multi-turn rollout (rl.rollout) to supply trajectory_return"
            )
        samples = []
        for index, returned in enumerate(columns["trajectory_return"]):
            turns = columns["turn_rewards"][index]
            samples.append(ScoredSample(
                task_id=str(columns["task_id"][index]), task_name=str(columns["task_name"][index]), graded=float(returned),
                binary=1.0 if columns["solved"][index] else 0.0,
                compile=sum(columns["turn_compile"][index]) / len(turns),
                correct=sum(columns["turn_correct"][index]) / len(turns),
                speed=sum(columns["turn_speed"][index]) / len(turns),
                failure_kind=columns["turn_failure_kinds"][index][-1], speedup=columns["final_speedup"][index],
                turns=len(turns),
            ))  # fmt: skip
        count = max(1, len(samples))
        extra = {
            "rollout/turns": sum(s.turns for s in samples) / count,
            "rollout/first_turn_reward": sum(columns["turn_rewards"][i][0] for i in range(len(samples)))
            / count,
            "rollout/masked_tokens": sum(columns["feedback_tokens"]) / count,
        }
        for name in ("generation_seconds", "verification_seconds"):
            if name in columns:
                extra[f"rollout/{name}"] = float(
                    columns[name][0] if isinstance(columns[name], list) else columns[name]
                )
        self.reporter.report(samples, columns, extra)
        return [sample.graded for sample in samples]

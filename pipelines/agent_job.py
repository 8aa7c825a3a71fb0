"""The main job with a model: K agent trajectories per task, every turn written as a corpus row.

    tasks × samples ──► KernelAgent (LangGraph: draft → verify → reflect, N trajectories at once)
                           │ model requests: async, bounded by --concurrency
                           │ each turn's candidate: an attempt of the one engine (`kernelvault.pipelines.engine`:
                           │ compile processes, lanes pinned to GPUs, local or Ray), its verdict back to the turn
                           ▼
                     ShardWriter (a trajectory's turns land in one shard) ◄─► run ledger

The trajectories are a candidate source of the engine (`kernelvault.pipelines.trajectory_source`), so
`--devices`, `--lanes-per-gpu`, `--compile-workers`, `--workers` and `--executor ray` do what they do for the
corpus job. A trajectory is the unit of resume: its rows are written together, so after a kill it is either
wholly in a shard (skipped on resume) or not at all (redone). A trajectory whose endpoint stays down
(`ProviderError`), or one of whose turns failed on our side (`infrastructure_error`: a lane lost), is recorded
in the ledger and left for the resume; it is not written, and its model is not asked again in this run.

A first SIGINT/SIGTERM (`kernelvault.pipelines.intake`) stops the job within seconds: the trajectories in progress
are cancelled (their model requests too) and left `started` in the ledger, unwritten, so the same command does
them again; the summary counts them as abandoned. A time limit is not offered: trajectories start together.
"""

from __future__ import annotations

import asyncio
import functools
import hashlib
import time
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from kernelvault import progress as kv_progress
from kernelvault.agents.client import EndpointConfig, ModelClient, ProviderError, RunBudget, SamplingSettings
from kernelvault.agents.graph import KernelAgent, Trajectory
from kernelvault.agents.prompting import PROMPT_FILES, check_prompts
from kernelvault.contracts import Candidate, Task, Verdict
from kernelvault.corpus.ledger import AttemptInfo, attempt_key
from kernelvault.corpus.schema import attempt_row
from kernelvault.corpus.shards import ShardWriter
from kernelvault.pipelines.candidates import Attempt
from kernelvault.pipelines.corpus_job import RunSummary, _count, close_run, job_identity, open_run
from kernelvault.pipelines.corpus_stages import RETRIED_FAILURES, VerifiedAttempt
from kernelvault.pipelines.engine import EngineOptions, verify_attempts
from kernelvault.pipelines.intake import Intake
from kernelvault.pipelines.trajectory_source import AsyncVerify, TrajectorySource
from kernelvault.toolchain.tasks import LoadedTasks
from kernelvault.toolchain.verify import Verifier, require_jail_for_model_output


@dataclass(frozen=True)
class AgentJobConfig:
    endpoint: EndpointConfig
    samples: int = 1  # independent trajectories per task (Pass@k, GRPO-style groups)
    max_turns: int = 3
    stop_on_correct: bool = True
    concurrency: int = 16  # model requests in flight
    sampling: SamplingSettings = SamplingSettings()
    max_requests: int | None = None
    max_tokens: int | None = None
    engine: EngineOptions = EngineOptions()  # where and how the candidates are verified
    allow_unjailed: bool = False  # verify the model's kernels even where the machine has no OS jail


def prompts_fingerprint() -> str:
    digest = hashlib.sha256()
    for path in sorted(PROMPT_FILES.glob("*")):
        digest.update(path.name.encode() + path.read_bytes())
    return digest.hexdigest()[:16]


def agent_source_identity(config: AgentJobConfig) -> dict[str, Any]:
    """The model side of a run's identity (the verification side is `job_identity`'s)."""
    return {
        "kind": "agent", "base_url": config.endpoint.base_url, "model": config.endpoint.model,
        "samples": config.samples, "max_turns": config.max_turns, "stop_on_correct": config.stop_on_correct,
        "sampling": vars(config.sampling), "prompts": prompts_fingerprint(),
    }  # fmt: skip


def trajectory_rows(
    run_id: str, trajectory: Trajectory, config: AgentJobConfig, target: str
) -> list[dict[str, Any]]:
    rows = []
    for record in trajectory.turns:
        messages = [
            {"role": m["role"], "content": m["content"], "reasoning_content": m.get("reasoning_content")}
            for m in record.messages
        ]
        candidate = Candidate(trajectory.task.task_id, target, record.reply.content,  # type: ignore[arg-type]
                              f"model:{config.endpoint.model}")  # fmt: skip
        rows.append(attempt_row(
            run_id, trajectory.task, candidate, record.verdict, sample_index=trajectory.sample_index,
            turn=record.turn, model=config.endpoint.model,
            sampling={**vars(config.sampling), "max_turns": config.max_turns, "stop_on_correct": config.stop_on_correct},
            messages=messages, prompt_tokens=record.reply.prompt_tokens,
            completion_tokens=record.reply.completion_tokens, finish_reason=record.reply.finish_reason,
            trajectory_return=trajectory.trajectory_return,
        ))  # fmt: skip
    return rows


class TrajectoryAborted(Exception):
    """A turn's verification failed on our side: the trajectory stops and is redone on resume."""


def run_agent_job(
    loaded: LoadedTasks,
    verifier: Verifier,
    out_dir: Path,
    target: str,
    config: AgentJobConfig,
    progress: bool = True,
    new_run: bool = False,
    shard_rows: int = 1000,
    flush_interval_s: float = 60.0,
    on_pool: Callable[[Any], None] = lambda pool: None,
    intake: Intake | None = None,
) -> RunSummary:
    """Run `config.samples` trajectories per task through the engine; write every turn; return the summary.

    `on_pool` receives the local executor's lane pool (bench/gpu_busy.py reads its timeline). `intake`: a signal
    it received (`Intake.closed_by_signals`) stops the job (see the module docstring).
    Raises corpus.ledger.ConfigurationChanged when out_dir holds a run with another configuration.
    """
    require_jail_for_model_output(verifier, config.allow_unjailed)  # raises before any model call
    check_prompts(loaded.tasks, target)  # likewise: HIP for a function task is refused by the toolchain
    config.engine.check()
    started = time.monotonic()
    platform = verifier.choice.platform
    identity = job_identity(loaded, agent_source_identity(config), verifier, target)
    run = open_run(out_dir, identity, target, platform, new_run)
    work = [
        (task, sample)
        for task in loaded.tasks
        for sample in range(config.samples)
        if attempt_key(task.task_id, sample, 0) not in run.done
    ]

    def record_shard(path: Path, rows: list[dict[str, Any]]) -> None:
        keys = [attempt_key(r["task_id"], r["sample_index"], r["turn"]) for r in rows]
        run.ledger.mark_finished(run.run_id, keys, path.name)

    writer = ShardWriter(out_dir, config=target, run_id=run.run_id, max_rows=shard_rows,
                         flush_interval_s=flush_interval_s, on_shard=record_shard)  # fmt: skip
    # Rows written (a trajectory's turns land together), with the trajectories done beside them.
    bar = kv_progress.bar(
        None, "verifying", "row", progress, status=f"trajectories 0/{len(work)}, workers starting"
    )
    intake = intake or Intake()
    counts = TrajectoryCounts()
    source = TrajectorySource(
        functools.partial(
            _run_trajectories, work, target, platform, config, run, writer, bar, intake, counts
        ),
        halt=intake.halt,
    )

    def deliver(item: VerifiedAttempt) -> None:
        run.summary.record_stages(item.verdict)
        source.deliver(item)

    try:
        with writer:
            stats = verify_attempts(
                source, verifier, config.engine, deliver, on_pool=on_pool, halt=intake.halt
            )
    finally:
        source.close()
    run.summary.executor = stats
    bar.close()
    if intake.signal_number is not None:
        run.summary.stopped_by = intake.reason
        run.summary.not_started = len(work) - counts.started
        run.summary.abandoned = counts.started - counts.ended
    return close_run(run, out_dir / "data" / target, started)


@dataclass
class TrajectoryCounts:
    started: int = 0  # marked started in the ledger
    ended: int = 0  # written, or recorded in the ledger for the resume


async def _halted(intake: Intake) -> None:
    while not intake.halt.is_set():
        await asyncio.sleep(0.1)


async def _run_trajectories(work: list[tuple[Task, int]], target: str, platform: str, config: AgentJobConfig,
                            run: Any, writer: ShardWriter, bar: Any, intake: Intake, counts: TrajectoryCounts,
                            verify: AsyncVerify) -> None:  # fmt: skip
    """Every trajectory of the job, on the source's event loop; `verify` hands a turn to the engine. A halt
    cancels the trajectories still running, whichever executor verifies them."""
    budget = RunBudget(max_requests=config.max_requests, max_tokens=config.max_tokens)
    client = ModelClient(config.endpoint, concurrency=config.concurrency, budget=budget)

    async def verify_turn(task: Task, candidate: Candidate, sample: int, turn: int) -> Verdict:
        verdict = await verify(Attempt(task, candidate, sample, turn, config.endpoint.model))
        if verdict.failure_kind in RETRIED_FAILURES:
            raise TrajectoryAborted(f"turn {turn}: {verdict.failure_kind}: {verdict.failure_message}")
        return verdict

    agent = KernelAgent(
        target=target, platform=platform, client=client, submit=verify_turn, sampling=config.sampling,
        max_turns=config.max_turns, stop_on_correct=config.stop_on_correct,
    )  # fmt: skip

    async def one(task: Task, sample: int) -> None:
        if intake.closed:
            return
        counts.started += 1
        key = attempt_key(task.task_id, sample, 0)
        rows: list[dict[str, Any]] = []
        run.ledger.mark_started(run.run_id, AttemptInfo(key, task.task_id, task.name, sample, 0, platform,
                                                        config.endpoint.model, vars(config.sampling)))  # fmt: skip
        try:
            trajectory = await agent.run(task, sample)
        except ProviderError as error:
            run.ledger.mark_failed(run.run_id, key, "provider_error", str(error))
            run.summary.retry_later.append(f"{task.name}/{sample}: provider_error: {error}")
        except TrajectoryAborted as error:
            run.ledger.mark_failed(run.run_id, key, "infrastructure_error", str(error))
            run.summary.retry_later.append(f"{task.name}/{sample}: {error}")
        else:
            rows = trajectory_rows(run.run_id, trajectory, config, target)
            writer.write_group(rows)
        counts.ended += 1
        _count(bar, len(rows), f"trajectories {counts.ended}/{len(work)}")

    # Trajectories are cheap coroutines; the client's semaphore and the engine's queues bound the work.
    everything = asyncio.gather(*(one(task, sample) for task, sample in work))
    halted = asyncio.ensure_future(_halted(intake))
    try:
        await asyncio.wait([everything, halted], return_when=asyncio.FIRST_COMPLETED)
        if not everything.done():
            everything.cancel()
        await asyncio.gather(everything, return_exceptions=True)
        if not everything.cancelled() and everything.exception() is not None:
            raise everything.exception()  # type: ignore[misc]
    finally:
        halted.cancel()
        await client.close()

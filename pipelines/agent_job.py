"""The main job with a model: K agent trajectories per task, every turn written as a corpus row.

    tasks × samples ──► KernelAgent (LangGraph: draft → verify → reflect, N trajectories at once)
                           │ model requests: async, bounded by --concurrency
                           │ verification: a LanePool, persistent lanes pinned to GPUs (toolchain/lane_pool.py)
                           ▼
                     ShardWriter (a trajectory's turns land in one shard) ◄─► run ledger

A trajectory is the unit of resume: its rows are written together, so after a kill it is either
wholly in a shard (skipped on resume) or not at all (redone). A trajectory whose endpoint stays down
(`ProviderError`) is recorded in the ledger as `provider_error` and left for the resume.
"""

from __future__ import annotations

import asyncio
import hashlib
import time
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING, Any

from kernelvault.agents.client import EndpointConfig, ModelClient, ProviderError, RunBudget, SamplingSettings
from kernelvault.agents.graph import KernelAgent, Trajectory
from kernelvault.agents.prompting import PROMPT_FILES, check_prompts
from kernelvault.contracts import Candidate, Task
from kernelvault.corpus.ledger import AttemptInfo, attempt_key
from kernelvault.corpus.schema import attempt_row
from kernelvault.corpus.shards import ShardWriter
from kernelvault.pipelines.corpus_job import (
    RunSummary,
    _progress_bar,
    close_run,
    default_workers,
    job_identity,
    open_run,
)
from kernelvault.toolchain.lane_pool import LanePool, pool_lanes, visible_gpus
from kernelvault.toolchain.tasks import LoadedTasks
from kernelvault.toolchain.verify import Verifier, require_jail_for_model_output

if TYPE_CHECKING:
    from kernelvault.pipelines.ray_verify_pool import RayVerifierPool


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
    verify_workers: int | None = None  # verifications at once (default: cores on cpu, 1 per GPU)
    lanes_per_gpu: int = 1  # verification lanes per GPU: checks overlap, timings take turns (device_gate)
    # GPU ids (`0,1`) the lanes go on; default: every visible GPU, or the first verify_workers of them
    devices: str | None = None
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
            {"role": m["role"], "content": m["content"], "reasoning": m.get("reasoning")}
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
    executor: str = "local",
    address: str | None = None,
) -> RunSummary:
    """`executor`: "local" (a LanePool of this machine's lanes) or "ray" (a RayVerifierPool: one actor
    per GPU of the cluster at `address`). `on_pool` receives the pool (bench/gpu_busy.py reads its timeline)."""
    require_jail_for_model_output(verifier, config.allow_unjailed)  # raises before any model call
    check_prompts(loaded.tasks, target)  # likewise: HIP for a function task is refused by the toolchain
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
    bar = _progress_bar(len(work), progress)
    with writer:
        asyncio.run(_run_trajectories(work, verifier, target, platform, config, run, writer, bar, on_pool,
                                      executor, address))  # fmt: skip
    bar.close()
    return close_run(run, out_dir / "data" / target, started)


async def _run_trajectories(work: list[tuple[Task, int]], verifier: Verifier, target: str, platform: str,
                            config: AgentJobConfig, run: Any, writer: ShardWriter, bar: Any,
                            on_pool: Callable[[Any], None], executor: str, address: str | None) -> None:  # fmt: skip
    budget = RunBudget(max_requests=config.max_requests, max_tokens=config.max_tokens)
    client = ModelClient(config.endpoint, concurrency=config.concurrency, budget=budget)
    slots = config.verify_workers or default_workers(platform)
    pool: LanePool | RayVerifierPool
    if executor == "ray":
        from kernelvault.pipelines.ray_executor import RayOptions
        from kernelvault.pipelines.ray_verify_pool import RayVerifierPool

        pool = RayVerifierPool(verifier, slots, RayOptions(address=address))
        slots = len(pool.actors)
    else:  # interpreter lanes on cpu; on a GPU platform lanes_per_gpu lanes on each of the job's GPUs
        devices = config.devices
        if devices is None and platform != "cpu" and config.verify_workers:
            devices = ",".join(visible_gpus()[: config.verify_workers])
        pool = LanePool(verifier, pool_lanes(platform, devices, config.lanes_per_gpu, cpu_lanes=slots))
        slots = len(pool.devices)
    on_pool(pool)
    # Twice the lanes in flight: while a lane runs one candidate, the next one's CPU stages (parse, static,
    # HIP build) run on a caller's thread, so a lane finds work waiting when it finishes.
    agent = KernelAgent(
        target=target, platform=platform, client=client, verify=pool.verify, sampling=config.sampling,
        max_turns=config.max_turns, stop_on_correct=config.stop_on_correct, verify_slots=2 * slots,
    )  # fmt: skip

    async def one(task: Task, sample: int) -> None:
        key = attempt_key(task.task_id, sample, 0)
        run.ledger.mark_started(run.run_id, AttemptInfo(key, task.task_id, task.name, sample, 0, platform,
                                                        config.endpoint.model, vars(config.sampling)))  # fmt: skip
        try:
            trajectory = await agent.run(task, sample)
        except ProviderError as error:
            run.ledger.mark_failed(run.run_id, key, "provider_error", str(error))
            run.summary.retry_later.append(f"{task.name}/{sample}: provider_error: {error}")
        else:
            writer.write_group(trajectory_rows(run.run_id, trajectory, config, target))
        bar.update(1)

    try:
        # Trajectories are cheap coroutines; the client's semaphore and the verifier's slots bound the work.
        await asyncio.gather(*(one(task, sample) for task, sample in work))
    finally:
        await client.close()
        await asyncio.to_thread(pool.close)

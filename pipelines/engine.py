"""The one engine every main job runs on: attempts in, verified attempts out, on the local or the Ray executor.

    attempts ──► prepare (compile processes) ──► lanes (persistent workers, pinned to devices) ──► write

The corpus job feeds it the attempts of a candidate source (bundled examples, answers files); the agent job
feeds it the turns of its trajectories as the model writes them (`kernelvault.pipelines.trajectory_source`),
and gets each verdict back through `write`. Either way `--devices`, `--lanes-per-gpu`, `--compile-workers`,
`--workers` and `--executor ray` mean the same thing: this module is where they are read.

Lanes: `devices` names them (`cpu`, or GPU ids `0,1`, `lanes_per_gpu` each). Without it, the CPU platform gets
`workers` interpreter lanes (default: one per core) and a GPU platform a lane on every visible GPU (the first
`workers` of them when `workers` is given); on Ray, one actor per GPU of the cluster.
"""

from __future__ import annotations

import functools
import os
import threading
from collections.abc import Callable, Iterable
from dataclasses import dataclass
from typing import Any

from kernelvault.pipelines.candidates import Attempt
from kernelvault.pipelines.corpus_stages import (
    PoolStage,
    VerifiedAttempt,
    discard_prepared,
    job_pool,
    lost_attempt,
    own_pool_stage,
    prepare_attempt,
)
from kernelvault.pipelines.executor import ExecutorConfig, ExecutorStats, LocalExecutor
from kernelvault.toolchain.lane_pool import (
    LanePool,
    check_lanes_per_gpu,
    parse_devices,
    pool_lanes,
    visible_gpus,
)
from kernelvault.toolchain.verify import Verifier

EXECUTORS = ("local", "ray")


@dataclass(frozen=True)
class EngineOptions:
    """How a job's attempts are verified (the command line's `--workers`, `--devices`, … of every main job)."""

    workers: int | None = (
        None  # CPU platform: interpreter lanes; GPU platform: how many visible GPUs get lanes
    )
    devices: str | None = None  # `cpu` or GPU ids `0,1`; None: see the module docstring
    lanes_per_gpu: int = 1  # lanes of one GPU check side by side and time one at a time (device_gate)
    compile_workers: int | None = None  # processes of the prepare stage (default: one per core); 0: in-thread
    persistent: bool = True  # False: a fresh worker process per candidate (the benchmarks' baseline)
    queue_size: int | None = None  # prepared items waiting for a lane (default: two per lane)
    executor: str = "local"  # or "ray"
    address: str | None = None  # with ray: the cluster to join (None: start a local instance)

    def check(self) -> None:
        """Refuse what no executor can honour (ValueError, one line), before anything starts."""
        if self.executor not in EXECUTORS:
            raise ValueError(f"the executor is one of {', '.join(EXECUTORS)}, not {self.executor!r}")
        check_lanes_per_gpu(self.lanes_per_gpu, self.executor)
        if self.devices:
            parse_devices(self.devices, 1, self.lanes_per_gpu)
        if self.workers is not None and self.workers < 1:
            raise ValueError(f"--workers is at least 1, not {self.workers}")
        if self.compile_workers is not None and self.compile_workers < 0:
            raise ValueError(f"--compile-workers is at least 0, not {self.compile_workers}")


def default_workers(platform: str) -> int:
    return 1 if platform in ("cuda", "rocm") else max(1, os.cpu_count() or 1)


def engine_lanes(platform: str, options: EngineOptions) -> tuple[str, ...]:
    """The local executor's lanes: one device id (or `cpu`) per lane (`pool_lanes`, with `workers` choosing
    how many of the visible GPUs get lanes when no device is named)."""
    devices = options.devices
    if not devices and platform != "cpu" and options.workers:
        devices = ",".join(visible_gpus()[: options.workers]) or None
    workers = options.workers or default_workers(platform)
    return pool_lanes(platform, devices, options.lanes_per_gpu, cpu_lanes=workers)


def verify_attempts(
    attempts: Iterable[Attempt],
    verifier: Verifier,
    options: EngineOptions,
    write: Callable[[VerifiedAttempt], None],
    writing: Any = None,
    on_pool: Callable[[LanePool], None] = lambda pool: None,
    halt: threading.Event | None = None,
) -> ExecutorStats:
    """Verify every attempt; `write` gets each result on the calling thread, in the order they finish.

    `writing` (Ray only): the lane actors write their own rows (`kernelvault.pipelines.ray_executor.ActorWriting`).
    `on_pool` receives the local executor's lane pool once it is open (bench/gpu_busy.py reads its timeline).
    `halt`: once set, the run stops within a few seconds (`kernelvault.pipelines.executor`), on either executor.
    Raises what a stage raised (a programming error); a candidate's failures are verdicts, never raised.
    """
    options.check()
    platform = verifier.choice.platform
    compile_workers = (os.cpu_count() or 1) if options.compile_workers is None else options.compile_workers
    prepare = functools.partial(prepare_attempt, verifier)
    if options.executor == "ray":
        return _verify_on_ray(attempts, verifier, options, compile_workers, prepare, write, writing, halt)
    lanes = engine_lanes(platform, options)
    config = ExecutorConfig(lanes=lanes, compile_workers=compile_workers,
                            queue_size=options.queue_size or 2 * len(lanes))  # fmt: skip
    with job_pool(verifier, lanes, options.persistent) as pool:
        on_pool(pool)
        stats = LocalExecutor(config).run(attempts, prepare, PoolStage(pool), write, halt)
        pool.close(abandon=halt is not None and halt.is_set())
    stats.add_workers(pool.lanes)  # after close: every lane's thread has ended, unless the run was halted
    for job in pool.timeline:
        name = f"{pool.devices[job.lane]}#{job.lane}"
        stats.lane_items[name] = stats.lane_items.get(name, 0) + 1
    return stats


def _verify_on_ray(attempts: Iterable[Attempt], verifier: Verifier, options: EngineOptions, compile_workers: int,
                   prepare: Any, write: Callable[[VerifiedAttempt], None], writing: Any,
                   halt: threading.Event | None) -> ExecutorStats:  # fmt: skip
    from kernelvault.pipelines.ray_executor import RayExecutor, RayOptions

    platform = verifier.choice.platform
    ray_executor = RayExecutor(ExecutorConfig(), RayOptions(address=options.address))
    try:
        if (
            platform != "cpu" and not options.devices
        ):  # every GPU of the cluster; GPU indices mean nothing there
            gpus = ray_executor.cluster_gpus()
            if gpus == 0:
                raise ValueError(f"the platform is {platform}, but the Ray cluster has no GPUs")
            lanes: tuple[str, ...] = ("gpu",) * gpus
        else:
            lanes = parse_devices(options.devices or "cpu", options.workers or default_workers(platform))
        ray_executor.config = ExecutorConfig(lanes=lanes, compile_workers=compile_workers,
                                             queue_size=options.queue_size or 2 * len(lanes))  # fmt: skip
        # One pool per lane actor.
        open_stage = functools.partial(own_pool_stage, verifier, persistent=options.persistent)
        return ray_executor.run(attempts, prepare, open_stage, write, give_up=functools.partial(lost_attempt, verifier),
                                affinity=lambda attempt: attempt.task.task_id,
                                discard=functools.partial(discard_prepared, verifier), writing=writing,
                                halt=halt)  # fmt: skip
    finally:
        ray_executor.shutdown()

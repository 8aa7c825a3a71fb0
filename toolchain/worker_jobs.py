"""The jobs the verifier hands a lane (`kernelvault.toolchain.worker_lane.WorkerLane.run`), as typed records.

A `CheckJob` checks one candidate and, on a GPU, times it; a `CompileJob` cross-compiles the kernels a CPU check
launched. Each carries the `WorkerSetup` its workers start with, so no worker of either kind can be started
without the isolation the verifier chose (a compile job once travelled without it, and its worker ran the
candidate's module outside the jail). The lane turns a job into requests to its workers: those cross the
process boundary and live with the workers, in `kernelvault.toolchain.sandboxed.requests`.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Literal

from kernelvault.contracts import TaskCase
from kernelvault.toolchain.jail import Isolation
from kernelvault.toolchain.reference_times import ReferenceReuse


@dataclass(frozen=True)
class WorkerSetup:
    """How a lane starts the workers of a job: the platform, the isolation the verifier probed, where worker
    homes go, and the extra read-only paths they see (the native HIP libraries)."""

    platform: str
    isolation: Isolation
    work_root: str | None = None
    read_only_paths: tuple[str, ...] = ()

    @property
    def gpu(self) -> bool:
        return self.platform in ("cuda", "rocm")


@dataclass(frozen=True)
class HipBuild:
    """A HIP candidate's build: a library compiled before the worker (`native`), or built inside it from the
    KernelBench load_inline form."""

    form: Literal["native", "load_inline"]
    library: str | None = None  # native: the shared library the worker loads
    source_sha: str | None = None  # native: the hash the library is registered under
    compile_log: str = ""


@dataclass(frozen=True)
class CheckJob:
    """Check one candidate against its task (and, where `timed`, time both)."""

    setup: WorkerSetup
    task_id: str  # the task's content hash: what the parent keys per-task choices by (calls per timed sample)
    task_path: str
    candidate_path: str
    launches_path: str  # the kernels the check launched, written back here for the verifier
    correctness_cases: tuple[TaskCase, ...]  # the task's own: this record stays in the parent's process
    performance_cases: tuple[TaskCase, ...]
    atol: float | None
    rtol: float | None
    allow_tf32: bool
    entry: str | None  # a function task: the function the candidate defines (None: ModelNew)
    entries: tuple[str, ...]  # ... and every other one its test calls
    kernel_entries: bool  # ... as Triton kernels the test launches (`kernel_tasks`)
    test_imports: tuple[str, ...]  # in scope for the candidate, as in TritonBench's file
    trials: int
    timed: bool
    repetitions: int
    warmup: int
    input_sets: int
    allowed_ops: tuple[str, ...]
    sample_ms: float = 0.0  # timing: the least device time one sample covers (0: one call per sample)
    hip: HipBuild | None = None
    shared_outputs: bool = (
        False  # outputs and expected outputs as shared memory, judged where they are (`bundles`)
    )
    turn_staged_mb: float = 4096.0  # staged inputs one turn alone on the device times (`VerifyConfig`)
    timing_inputs: str = "fresh"  # the timing protocol (`VerifyConfig.timing_inputs`)
    # the reference's timed figures reused across jobs (`toolchain.reference_times`); None: timed every job
    reference_reuse: ReferenceReuse | None = None
    timing_profile: str = "full"  # "rl": fewer timed samples where the pilot's spread allows (`VerifyConfig`)


@dataclass(frozen=True)
class CompileJob:
    """Cross-compile, for a GPU target, the Triton kernels that a CPU check recorded."""

    setup: WorkerSetup
    candidate_path: str
    launches_path: str
    backend: str
    arch: str
    warp_size: int
    allowed_ops: tuple[str, ...] = ()


WorkerJob = CheckJob | CompileJob

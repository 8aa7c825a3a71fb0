"""What the parent asks of its workers, as typed records that both sides import (issue #20).

Two layers:

- **Jobs**, which the verifier hands a lane (`WorkerLane.run`, or a one-job lane on the bare path): a
  `CheckJob` (check one candidate and, on a GPU, time it) or a `CompileJob` (cross-compile the kernels a CPU
  check launched). Each carries the `WorkerSetup` its workers start with, so no worker of either kind can be
  started without the isolation the verifier chose (a compile job once travelled without it, and its
  worker ran the candidate's module outside the jail).
- **Requests**, which cross the process boundary on the authenticated channel of
  `kernelvault.toolchain.device_worker`: one record per operation of each worker kind. `to_wire` writes one as
  a JSON object (its fields and `op`); `from_wire` reads one back, refusing an unknown operation or a
  missing or unknown field with a one-line `WireError`, so the two sides cannot drift apart silently.

Replies stay JSON objects: the parent reads them as untrusted data (`kernelvault.toolchain.judge`).
"""

from __future__ import annotations

import dataclasses
from dataclasses import dataclass, field
from typing import Any, ClassVar, Literal

from kernelvault.toolchain.jail import Isolation

# ----------------------------------------------------------------------------------------------------
# Jobs: verifier -> lane (one process).


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
class CaseSpec:
    """One of a task's cases: its name, kind and the module attributes it overrides (sizes)."""

    name: str
    kind: Literal["correctness", "performance"]
    overrides: dict[str, Any] = field(default_factory=dict)


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
    task_path: str
    candidate_path: str
    launches_path: str  # the kernels the check launched, written back here for the verifier
    correctness_cases: tuple[CaseSpec, ...]
    performance_cases: tuple[CaseSpec, ...]
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
    hip: HipBuild | None = None


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

# ----------------------------------------------------------------------------------------------------
# Requests: parent -> worker process (JSON on the authenticated channel).


@dataclass(frozen=True)
class Load:
    """Import the candidate under the guards, for one job (candidate worker)."""

    OP: ClassVar[str] = "load"
    platform: str
    candidate_path: str
    launches_path: str
    job_dir: str
    module_name: str
    triton_cache: str
    inline_build_root: str
    allow_tf32: bool
    entry: str | None
    entries: list[str]
    kernel_entries: bool
    test_imports: list[str]
    allowed_ops: list[str]
    language: Literal["triton", "hip"] = "triton"
    hip_form: str | None = None
    hip_library: str | None = None
    hip_source_sha: str | None = None


@dataclass(frozen=True)
class Build:
    """Construct ModelNew from the reference's init inputs with the parent's weight seed."""

    OP: ClassVar[str] = "build"
    init_path: str
    weight_seed: int


@dataclass(frozen=True)
class Forward:
    """One call on one input file, over poisoned fresh memory; the output goes to `output_path`."""

    OP: ClassVar[str] = "forward"
    inputs_path: str
    output_path: str
    poison: float | str = "nan"  # "nan", or the value fresh allocations are filled with
    reuse_inputs: bool = False  # the last call's tensors, refilled with these values


@dataclass(frozen=True)
class Time:
    """The performance case's timed calls; the outputs of `spot_outputs`' calls are kept for judging."""

    OP: ClassVar[str] = "time"
    init_path: str
    weight_seed: int
    inputs_paths: list[str]
    repetitions: int
    warmup: int
    spot_outputs: dict[str, str]  # call index -> output file
    fresh_arguments: bool = False


@dataclass(frozen=True)
class End:
    """The job is over: what ran, and whether this process may serve another job."""

    OP: ClassVar[str] = "end"


@dataclass(frozen=True)
class Prepare:
    """The reference's inputs and expected outputs for one case and the parent's seeds (reference worker)."""

    OP: ClassVar[str] = "prepare"
    task_path: str
    platform: str
    allow_tf32: bool
    entry: str | None
    case: str
    overrides: dict[str, Any]
    weight_seed: int
    sets: list[dict[str, Any]]  # {"name", "seed", "expected": whether its expected output is computed}
    out_dir: str


@dataclass(frozen=True)
class TimeReference:
    """The reference timed on input sets it prepared, the way the candidate is timed."""

    OP: ClassVar[str] = "time"
    task_path: str
    platform: str
    allow_tf32: bool
    entry: str | None
    case: str
    overrides: dict[str, Any]
    weight_seed: int
    init_path: str
    inputs_paths: list[str]
    repetitions: int
    warmup: int
    fresh_arguments: bool = False


@dataclass(frozen=True)
class Compile:
    """Import the candidate (launches skipped) and compile each recorded launch for `arch` (cross-compiler)."""

    OP: ClassVar[str] = "compile"
    candidate_path: str
    launches_path: str
    module_name: str
    backend: str
    arch: str
    warp_size: int
    allowed_ops: list[str]


@dataclass(frozen=True)
class CheckTask:
    """`tasks check`: run a task's reference on its cases and report what looks broken (task checker)."""

    OP: ClassVar[str] = "check_task"
    task_path: str
    result_path: str
    cases: list[dict[str, Any]]  # {"name", "overrides"}
    entry: str | None = None


CandidateRequest = Load | Build | Forward | Time | End
ReferenceRequest = Prepare | TimeReference
Request = CandidateRequest | ReferenceRequest | Compile | CheckTask

# Which operations each worker kind answers: the same op name means different records for different kinds.
OPERATIONS: dict[str, dict[str, type]] = {
    "candidate": {record.OP: record for record in (Load, Build, Forward, Time, End)},
    "reference": {record.OP: record for record in (Prepare, TimeReference)},
    "cross_compile": {Compile.OP: Compile},
    "task_check": {CheckTask.OP: CheckTask},
}


class WireError(ValueError):
    """A request that is not one of this worker kind's records."""


def to_wire(request: Request) -> dict[str, Any]:
    """The request as the JSON object the channel carries."""
    return {"op": request.OP, **{f.name: getattr(request, f.name) for f in dataclasses.fields(request)}}


def from_wire(kind: str, body: Any) -> Request:
    """The record a worker of `kind` received; `WireError` (one line) when it is not one of its own."""
    if not isinstance(body, dict):
        raise WireError(f"a request is a JSON object, not {type(body).__name__}")
    operations = OPERATIONS.get(kind)
    if operations is None:
        raise WireError(f"no worker kind {kind!r}")
    op = body.get("op")
    record = operations.get(op) if isinstance(op, str) else None
    if record is None:
        raise WireError(f"the {kind} worker has no request {op!r}")
    fields = {f.name: f for f in dataclasses.fields(record)}
    given = {key: value for key, value in body.items() if key != "op"}
    unknown = sorted(set(given) - set(fields))
    required = {
        name
        for name, f in fields.items()
        if f.default is dataclasses.MISSING and f.default_factory is dataclasses.MISSING
    }
    missing = sorted(required - set(given))
    if unknown or missing:
        raise WireError(
            f"{kind} request {op!r}: "
            + "; ".join(
                filter(
                    None,
                    [
                        unknown and f"unknown field(s) {', '.join(unknown)}",
                        missing and f"missing field(s) {', '.join(missing)}",
                    ],
                )
            )  # fmt: skip
        )
    return record(**given)

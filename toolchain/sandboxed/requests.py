"""What the parent asks of its workers: one typed record per operation of each worker kind.

Both sides import this module: the parent (`kernelvault.toolchain.judge`, `kernelvault.toolchain.worker_lane`)
writes a request with `to_wire`, a JSON object of its fields and `op`, sent on the authenticated channel
(`kernelvault.toolchain.sandboxed.channel`); the worker (`kernelvault.toolchain.sandboxed.serve`) reads it
back with `from_wire`, which refuses an unknown operation or a missing or unknown field with a one-line
`WireError`, so the two sides cannot drift apart silently. Replies stay JSON objects: the parent reads them
as untrusted data.
"""

from __future__ import annotations

import dataclasses
from dataclasses import dataclass
from typing import Any, ClassVar, Literal


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
    share: bool = (
        False  # send the output as a bundle named output_path (`bundles`) instead of writing the file
    )


@dataclass(frozen=True)
class StageTime:
    """Everything of a performance case's timing that is not the timed calls: build ModelNew, put the input
    sets on the device, run it once with launches observed and close the device's record. The parent sends it
    while the device is shared (check phase), so that only `Time` needs the device alone."""

    OP: ClassVar[str] = "stage_time"
    init_path: str
    weight_seed: int
    inputs_paths: list[str]
    fresh_arguments: bool = False
    case: str = ""  # the performance case: a turn alone on the device may time several staged cases


@dataclass(frozen=True)
class Time:
    """A staged performance case's timed calls (`StageTime` first), under the protocol `inputs` names
    (`kernelvault.toolchain.sandboxed.timing`): the reply says which samples' outputs the worker kept (drawn
    there) and, with fresh inputs, every timed call's checksums; `WriteKept` writes the ones the parent draws."""

    OP: ClassVar[str] = "time"
    repetitions: int
    warmup: int
    timing_seed: int  # the parent's, per performance case: every timed call's fresh values (`timed_values`)
    calls_per_sample: int = 1  # the case's, chosen by the parent for every side (`timing.calls_for`)
    case: str = ""  # which staged case (`StageTime.case`)
    inputs: Literal["fresh", "rotate"] = "fresh"  # `VerifyConfig.timing_inputs`


@dataclass(frozen=True)
class WriteKept:
    """Write outputs that `Time` kept, for the parent's full checks: sample index -> output file (or, with
    `share`, the bundle named by it, as `Forward.share`)."""

    OP: ClassVar[str] = "write_kept"
    case: str
    outputs: dict[str, str]
    share: bool = False


@dataclass(frozen=True)
class End:
    """The job is over: what ran, and whether this process may serve another job."""

    OP: ClassVar[str] = "end"


@dataclass(frozen=True)
class _ReferenceCase:
    """What every request to the reference worker names: the task, how it runs, the case and its weights."""

    task_path: str
    platform: str
    allow_tf32: bool
    entry: str | None  # a function task's function (None: a Model class)
    case: str
    overrides: dict[str, Any]
    weight_seed: int


@dataclass(frozen=True)
class Prepare(_ReferenceCase):
    """The reference's inputs and expected outputs for one case and the parent's seeds (reference worker)."""

    OP: ClassVar[str] = "prepare"
    sets: list[dict[str, Any]]  # {"name", "seed", "expected": whether its expected output is computed}
    out_dir: str
    share: bool = False  # expected outputs as bundles named by their paths (`bundles`); inputs stay files
    # False: the job's earlier stagings and shared expected outputs are done with (freed here); True: they are
    # not (cases staged for one turn alone on the device, their spot checks not judged yet)
    keep_earlier: bool = False


@dataclass(frozen=True)
class StageReference(_ReferenceCase):
    """The reference built and the input sets it prepared put on the device, for `TimeReference` (sent while
    the device is shared, like `StageTime`)."""

    OP: ClassVar[str] = "stage_time"
    init_path: str
    inputs_paths: list[str]
    fresh_arguments: bool = False


@dataclass(frozen=True)
class TimeReference(_ReferenceCase):
    """The staged reference (`StageReference` first) timed the way the candidate was: the same protocol, seed
    and calls per sample, keeping the samples the candidate's worker kept; with fresh inputs, every timed call's
    checksums and tolerance scale under the task's tolerance (None: the dtype's default, as `compare_outputs`)."""

    OP: ClassVar[str] = "time"
    repetitions: int
    warmup: int
    timing_seed: int
    keep: list[int]
    calls_per_sample: int = 1
    inputs: Literal["fresh", "rotate"] = "fresh"
    atol: float | None = None
    rtol: float | None = None
    # False: the same calls, checksums and kept outputs without the clock (`timing.run_staged_untimed`), for a
    # reference whose timed figure the parent reuses (`toolchain.reference_times`); sent outside the turn
    timed: bool = True


@dataclass(frozen=True)
class PilotReference(_ReferenceCase):
    """A few one-call samples of the staged reference (`StageReference` first; the staging stays for
    `TimeReference`): the parent chooses the case's calls per sample from their median. Sent in the lane's turn
    alone on the device, like the timed requests."""

    OP: ClassVar[str] = "pilot"
    warmup: int
    inputs: Literal["fresh", "rotate"] = "fresh"


@dataclass(frozen=True)
class WriteKeptReference(_ReferenceCase):
    """Write outputs that `TimeReference` kept (the expected outputs of the parent's draws), as `WriteKept`."""

    OP: ClassVar[str] = "write_kept"
    outputs: dict[str, str]
    share: bool = False


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
    device: str = "cpu"  # torch's device for the reference: `cpu` (under Triton's interpreter) or `cuda`
    timeout_s: float = 300.0  # past it the task's check is killed and reported as timed out


CandidateRequest = Load | Build | Forward | StageTime | Time | WriteKept | End
ReferenceRequest = Prepare | StageReference | PilotReference | TimeReference | WriteKeptReference
Request = CandidateRequest | ReferenceRequest | Compile | CheckTask

# Which operations each worker kind answers: the same op name means different records for different kinds.
OPERATIONS: dict[str, dict[str, type]] = {
    "candidate": {record.OP: record for record in (Load, Build, Forward, StageTime, Time, WriteKept, End)},
    "reference": {
        record.OP: record
        for record in (Prepare, StageReference, PilotReference, TimeReference, WriteKeptReference)
    },
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

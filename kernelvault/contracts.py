"""The plain data objects passed between KernelVault's packages.

Every arrow in the architecture map carries one of these: a `Task` goes from the loaders to the
pipeline, a `Candidate` from a candidate source (bundled examples, later the LLM agents) to the
toolchain, and a `Verdict` from the toolchain to the reward, the corpus writer and the agents'
feedback. They are frozen dataclasses of plain values so they pickle across process boundaries and
serialise to JSON without custom code.
"""

from __future__ import annotations

import dataclasses
import hashlib
from dataclasses import dataclass, field
from typing import Any, Literal

Target = Literal["triton", "hip"]
Platform = Literal["cpu", "cuda", "rocm"]
StageName = Literal["parse", "static", "compile", "check", "time", "reward"]
StageOutcome = Literal["passed", "failed", "skipped"]

TARGETS: tuple[str, ...] = ("triton", "hip")
PLATFORMS: tuple[str, ...] = ("cpu", "cuda", "rocm")
STAGES: tuple[str, ...] = ("parse", "static", "compile", "check", "time", "reward")

# Stable names used in the corpus and in reports. Never rename one: published shards carry them.
FAILURE_KINDS: tuple[str, ...] = (
    "parse_error",  # the answer held no usable code block
    "static_reject",  # code that is not a candidate (no ModelNew, no kernel, forbidden construct)
    "compile_error",  # the kernel (or the Python around it) does not compile for the target
    "interface_error",  # ModelNew cannot be built with the task's arguments, or returns the wrong shape/dtype
    "runtime_error",  # an exception or a crash while running the candidate
    "timeout",  # the candidate did not finish within the wall-clock limit
    "mismatch",  # ran, but the values differ from the reference beyond tolerance
    "integrity_reject",  # the result was obtained without doing the work (reward hacking)
    "infrastructure_error",  # our side failed (worker could not start, bad task); not the candidate's fault
    "provider_error",  # the model endpoint failed; the attempt is to be retried by a later run
)


# The task file's literal that makes it an optimisation task (`kernelvault.toolchain.optimisation`): target -> the
# baseline candidate's source. Read by the task loader and by the prompts, which show it apart from the reference.
BASELINES_NAME = "KERNELVAULT_BASELINES"


def content_hash(text: str) -> str:
    """Short, stable identifier of a piece of source code (sha256, 16 hex digits)."""
    return hashlib.sha256(text.encode("utf-8")).hexdigest()[:16]


@dataclass(frozen=True)
class TaskCase:
    """One input configuration of a task: overrides of the task module's size globals.

    `overrides` maps module-level names (`batch`, `dim`, ...) to new values; the harness assigns them
    before calling `get_init_inputs()` and `get_inputs()`. An empty mapping means the module's own
    defaults, which is how a plain KernelBench file gets its single case.
    """

    name: str
    kind: Literal["correctness", "performance"]
    overrides: dict[str, Any] = field(default_factory=dict)


@dataclass(frozen=True)
class Task:
    """A PyTorch reference program in KernelBench form, with the optional KernelVault extras."""

    task_id: str  # content_hash(source): the same program has the same id wherever it comes from
    name: str
    source: str
    origin: str  # "bundled", "folder:<path>", "kernelbench:<level>", "hub:<repo>"
    category: str | None = None
    correctness_cases: tuple[TaskCase, ...] = ()
    performance_cases: tuple[TaskCase, ...] = ()
    atol: float | None = None  # None: the default for the output dtype (fp32 1e-4, fp16/bf16 1e-2)
    rtol: float | None = None
    allow_tf32: bool = False
    dtype: str | None = None  # informational: the dtype the task's inputs use
    provenance: str | None = None
    license: str | None = None
    # A function task (`kernelvault.toolchain.function_tasks`): the reference function a candidate defines under the
    # same name. None: a module task (class Model; a candidate defines ModelNew).
    entry: str | None = None
    # True: the entries are Triton kernels the task's test launches as `name[grid](...)` (ROCmBench's layout,
    # `kernelvault.toolchain.kernel_tasks`); a candidate defines kernels of those names.
    kernel_entry: bool = False
    # An optimisation task (`kernelvault.toolchain.optimisation`): per target, the source of a correct, slow
    # candidate that a candidate must match and beat. Empty: a PyTorch-to-kernel task.
    baselines: dict[str, str] = field(default_factory=dict)

    @property
    def form(self) -> str:
        return "kernel" if self.kernel_entry else "function" if self.entry else "module"

    def baseline(self, target: str) -> str | None:
        """The baseline candidate's source for `target`: this is an optimisation task for that target."""
        return self.baselines.get(target)


@dataclass(frozen=True)
class Candidate:
    """A proposed kernel for one task: the model's raw answer or a ready source file."""

    task_id: str
    target: Target
    text: str  # raw answer (markdown with a fenced block) or plain Python source
    origin: str  # "example:<path>", "model:<name>", "file:<path>"
    expected_failure: str | None = None  # set on deliberately broken examples, for tests and summaries


@dataclass(frozen=True)
class StageRecord:
    name: StageName
    outcome: StageOutcome
    seconds: float
    log: str = ""


@dataclass(frozen=True)
class CaseCheck:
    """Correctness evidence for one case and one seed."""

    case: str
    seed: int
    passed: bool
    max_abs_error: float | None = None
    max_rel_error: float | None = None
    message: str = ""


@dataclass(frozen=True)
class CaseTiming:
    """Latency of candidate and reference on one performance case, measured the same way in one process."""

    case: str
    candidate_ms: float  # median over `repetitions`
    reference_ms: float
    candidate_spread: float  # (p75 - p25) / median, a dimensionless spread
    reference_spread: float
    repetitions: int  # timed samples
    # calls per sample, the same on both sides: 1 times each call alone after an L2 flush; more (kernels of a few
    # microseconds) times consecutive calls between one pair of events, only the first after the flush
    calls_per_sample: int = 1
    # the timing protocol (`toolchain.sandboxed.timing`): "fresh" (every timed call on new values, its output
    # checksummed against the reference's) or "rotate" (fixed input sets: a fidelity benchmark's); None: not
    # recorded (rows written before the protocol was)
    inputs: str | None = None
    checked_calls: int | None = None  # timed calls whose checksums matched the reference's (fresh)
    # the device time per call of the timed run's watched first sample: every kernel, copy and fill its calls caused
    # (a GPU); a median timed call may not be much shorter (`toolchain.sandboxed.own_work`), and on a GPU a case
    # without it earns no speed term. None: not measured (the CPU)
    own_kernel_ms: float | None = None
    # "timed": the reference was timed in this verification's turn; "reused": its figure came from an earlier
    # timing of the same case on the same device and protocol (`toolchain.reference_times`, the reward path), its
    # results from an untimed run of this verification's values. None: not recorded (rows written before)
    reference_timing: str | None = None
    # "full": the protocol's samples; "rl": fewer, where the case's pilot spread allowed (the reward path's profile,
    # `VerifyConfig.timing_profile`). None: not recorded (rows written before)
    timing_profile: str | None = None


@dataclass(frozen=True)
class BaselineRun:
    """An optimisation task's baseline, checked and timed on the candidate's lane just before the candidate."""

    code_hash: str  # content_hash of the baseline's code
    timings: tuple[CaseTiming, ...] = ()  # its own: `candidate_ms` is the baseline's
    speedup: float | None = None  # the baseline over PyTorch


@dataclass(frozen=True)
class RunEnvironment:
    """Where a verdict was obtained. Every corpus row carries it; nothing claims more than was measured."""

    platform: Platform
    device: str  # "cpu (Triton interpreter)", "NVIDIA H200", "AMD Instinct MI300X"
    arch: str  # the compile target: "gfx942", "sm_90", ...
    versions: dict[str, str] = field(default_factory=dict)  # python, torch, triton, hipcc, nvcc
    # what candidate code ran inside: "jail" (namespaces, unprivileged, read-only system, seccomp),
    # "jail-no-seccomp", or "process" (a plain child process: no jail on that machine); see toolchain.jail
    isolation: str = ""


@dataclass(frozen=True)
class RewardBreakdown:
    compile: float
    correct: float
    speed: float
    total: float


@dataclass(frozen=True)
class Verdict:
    """Everything the toolchain learned about one candidate. Failures are values, never exceptions."""

    task_id: str
    target: Target
    candidate_hash: str  # content_hash of the extracted code ("" when nothing could be extracted)
    code: str  # the extracted candidate code that was verified
    compiled: bool
    correct: bool | None  # None: this platform cannot run the candidate (so correctness is unknown)
    failure_kind: str | None
    failure_message: str | None
    stages: tuple[StageRecord, ...]
    checks: tuple[CaseCheck, ...] = ()
    timings: tuple[CaseTiming, ...] = ()
    speedup: float | None = None  # sum(reference_ms) / sum(candidate_ms) over the performance cases
    kernels: tuple[str, ...] = ()  # names of the kernels the candidate launched
    compile_log: str = ""
    environment: RunEnvironment | None = None
    reward: RewardBreakdown | None = None
    audit: tuple[str, ...] = ()  # flags for a human to look at (e.g. "speedup_over_10x"); no effect on reward
    # Optimisation tasks only: the baseline's run, and sum(baseline_ms) / sum(candidate_ms), which the reward's
    # speed term uses there instead of `speedup` (still over PyTorch).
    baseline: BaselineRun | None = None
    speedup_over_baseline: float | None = None

    def to_dict(self) -> dict[str, Any]:
        return dataclasses.asdict(self)


def verdict_from_dict(data: dict[str, Any]) -> Verdict:
    """Inverse of `Verdict.to_dict` (used for worker results and `--json` round trips)."""
    env = data.get("environment")
    reward = data.get("reward")
    return Verdict(
        task_id=data["task_id"],
        target=data["target"],
        candidate_hash=data["candidate_hash"],
        code=data["code"],
        compiled=data["compiled"],
        correct=data["correct"],
        failure_kind=data["failure_kind"],
        failure_message=data["failure_message"],
        stages=tuple(StageRecord(**s) for s in data["stages"]),
        checks=tuple(CaseCheck(**c) for c in data.get("checks", ())),
        timings=tuple(CaseTiming(**t) for t in data.get("timings", ())),
        speedup=data.get("speedup"),
        kernels=tuple(data.get("kernels", ())),
        compile_log=data.get("compile_log", ""),
        environment=RunEnvironment(**env) if env else None,
        reward=RewardBreakdown(**reward) if reward else None,
        audit=tuple(data.get("audit", ())),
        baseline=_baseline_from_dict(data.get("baseline")),
        speedup_over_baseline=data.get("speedup_over_baseline"),
    )


def _baseline_from_dict(data: dict[str, Any] | None) -> BaselineRun | None:
    if not data:
        return None
    timings = tuple(CaseTiming(**t) for t in data.get("timings", ()))
    return BaselineRun(code_hash=data["code_hash"], timings=timings, speedup=data.get("speedup"))


# ROCm library question-answer entries (the `qa` part of the corpus): an entry goes from a QA source (the bundled
# examples, or the QA agent) to the toolchain's checks, and a QAVerdict from there to the score and the corpus.
QA_CHECK_OUTCOMES: tuple[str, ...] = (
    "passed", "failed", "timeout",  # every check
    "fragment", "no_code",  # compile: statements missing their declarations (nothing claimed); no code block
    "not_applicable",  # link and run of a snippet that is not a program
    "ran", "mismatch",  # run: exit 0 with no stated output to compare; printed something else than stated
    "library_calls", "no_gpu",  # run: calls a library that needs an AMD GPU; no GPU on this machine
)  # fmt: skip


@dataclass(frozen=True)
class QAEntry:
    """One question about a ROCm library and its answer (prose with at most one code snippet that counts)."""

    question: str
    answer: str
    library: str  # hip, rocprim, rocsparse, hipsparse, rocrand, hiprand
    topic: str  # the API element asked about, as the inventory names it ("rocprim::block_scan")
    origin: str  # "example:<id>" or "model:<name>"
    reasoning: str | None = None  # the model's thinking, where it gave one
    mistake: str | None = None  # bundled examples only: the deliberate mistake the entry carries

    @property
    def entry_id(self) -> str:
        return content_hash(f"{self.question}\n\x00{self.answer}")


@dataclass(frozen=True)
class IdentifierCheck:
    name: str  # as looked up: qualified, template arguments dropped
    where: str  # "code" or "text" (its first appearance)
    status: str  # found | internal | invented | cuda_only (used in code) | cuda_named (prose only) | not_installed
    library: str | None  # where the inventory has it
    header: str | None


@dataclass(frozen=True)
class QAStep:
    status: str  # one of QA_CHECK_OUTCOMES
    log: str  # compiler messages, or the program's output
    seconds: float


@dataclass(frozen=True)
class QAScore:
    existence: float
    compile: float
    link: float
    run: float
    total: float


@dataclass(frozen=True)
class QAVerdict:
    """What the checks found about one QA entry. `verified`: nothing invented, and no check that applied failed."""

    entry_id: str
    identifiers: tuple[IdentifierCheck, ...]
    snippet: str | None  # the answer's code block
    translation_unit: (
        str | None
    )  # what the compiler was given (the snippet completed by the documented rules)
    stated_output: str | None
    compile: QAStep
    link: QAStep
    run: QAStep
    score: QAScore
    verified: bool
    environment: RunEnvironment

    @property
    def invented(self) -> tuple[str, ...]:
        return tuple(item.name for item in self.identifiers if item.status in ("invented", "cuda_only"))

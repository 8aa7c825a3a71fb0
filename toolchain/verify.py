"""The stages of a verdict: parse → static → compile → check → time → reward, for one candidate (Triton or HIP)
of one task (module, function or kernel form).

`Verifier.prepare` runs the CPU stages, `Verifier.complete` the device stage on a lane's workers
(`kernelvault.toolchain.worker_lane`); the lane pool (`kernelvault.toolchain.lane_pool`) is what calls them,
for every consumer. Neither raises for anything the candidate does; every outcome is a `Verdict`. Candidate
code runs only in sandboxed worker processes (`kernelvault.toolchain.sandbox`):

- `cpu`: the check worker runs kernels under the Triton interpreter and records each launch; a
  second worker cross-compiles the recorded launches for the AMD target. Nothing is timed, so the
  speedup is unknown and the reward has no speed term.
- `cuda` / `rocm`: one worker JIT-compiles on the device, checks, and times candidate and reference.
"""

from __future__ import annotations

import dataclasses
import functools
import os
import shutil
import sys
import tempfile
import time
import traceback
from collections.abc import Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import kernelvault
from kernelvault.contracts import (
    Candidate,
    CaseCheck,
    CaseTiming,
    RunEnvironment,
    StageRecord,
    Task,
    Verdict,
    content_hash,
)
from kernelvault.toolchain.extract import extract_code
from kernelvault.toolchain.function_tasks import function_entries, test_imports
from kernelvault.toolchain.hip_build import (
    DEFAULT_CPU_HIP_ARCH,
    HipBuildCache,
    HipToolchainMissing,
    compile_hip,
    find_hip_compiler,
    portability_issues,
)
from kernelvault.toolchain.hip_interface import source_hash
from kernelvault.toolchain.jail import ISOLATION_PROCESS, Isolation, probe_isolation
from kernelvault.toolchain.judge import ProtocolCosts
from kernelvault.toolchain.optimisation import (
    BASELINE_ORIGIN,
    against_baseline,
    baseline_candidate,
    baseline_failure,
)
from kernelvault.toolchain.platforms import AMD_WAVEFRONT, PlatformChoice, detect_platform, run_environment
from kernelvault.toolchain.reference_times import REWARD_REFERENCE_REUSE, REWARD_TIMINGS, ReferenceReuse
from kernelvault.toolchain.reward import DEFAULT_REWARD, RewardConfig, graded_reward, task_speedup
from kernelvault.toolchain.sandbox import SandboxLimits, SandboxResult
from kernelvault.toolchain.sandboxed.timing import DEFAULT_GPU_SAMPLE_MS, TIMING_INPUTS
from kernelvault.toolchain.static_check import check_hip_candidate, check_triton_candidate
from kernelvault.toolchain.static_wall import check_candidate
from kernelvault.toolchain.worker_jobs import CheckJob, CompileJob, HipBuild, WorkerSetup
from kernelvault.toolchain.worker_lane import WorkerLane

TIMING_PROFILES = ("full", "rl")  # `VerifyConfig.timing_profile`
LOG_LIMIT = 4000  # characters of compiler/runtime log kept per stage (the agents' feedback reads it)


@dataclass(frozen=True)
class VerifyConfig:
    platform: str | None = None  # None: detect (cuda/rocm when a GPU is visible, else cpu)
    arch: str | None = None  # None: the device's arch, or gfx942 for the CPU cross-compile
    timeout_s: float = 60.0  # wall clock for the check (and timing) worker
    compile_timeout_s: float = 120.0
    memory_limit_mb: int | None = 8192  # CPU workers only; GPU runtimes need unlimited address space
    trials: int = 2  # seeds per correctness case
    repetitions: int = 100  # timed repetitions per performance case
    warmup: int = 10
    input_sets: int = 4  # timing rotates over this many freshly drawn input sets
    # The least device time one timed sample covers: a case whose reference runs shorter is timed several calls
    # per sample, the same number on every side (`toolchain.sandboxed.timing`). None: 0.5 ms on a GPU, and on
    # the CPU one call per sample (its wall clock times the interpreter; batching would only slow CI down).
    sample_ms: float | None = None
    # Outputs and expected outputs as shared memory instead of files (`toolchain.sandboxed.bundles`): on a CUDA
    # GPU the parent maps both and compares them on the device, with no copy to its CPU; on the
    # CPU, sealed memfds. None (the default): on a CUDA GPU whose driver exports device memory as a file
    # descriptor (`device_share.exportable`), files elsewhere: the CPU keeps files, and ROCm too (the export is
    # written against CUDA's driver). On the H200 both ways gave the same verdicts on every bundled example,
    # and the comparing went from 0.3-2.3 s to 0.01-0.18 s a verification
    # (bench/results/2026-12-03-h200-suites-baseline-reward-path.md).
    shared_outputs: bool | None = None
    # Staged inputs (MB of their files) one turn alone on the device may time: a verification's performance
    # cases share one turn where they fit, since every turn first drains the other lanes' requests in flight
    # (`toolchain.device_gate`). Both sides hold their copy on the device until the turn ends, so a lane holds
    # about twice this at most, beside the models. 0: one turn per performance case.
    turn_staged_mb: float = 4096.0
    # The timing protocol (`toolchain.sandboxed.timing`): "fresh", every timed call on values never used before
    # in the run (written outside the timed span) and every timed output checksummed against the reference's;
    # "rotate", the protocol before it (a few fixed input sets, two outputs spot-checked, no checksums), which
    # a cache can answer: only for side-by-side fidelity benchmarks (bench/small_case_spread.py).
    timing_inputs: str = "fresh"
    # The reference's timed figure of a case reused by later verifications of it on the same device and protocol,
    # within limits and with a drift check (`toolchain.reference_times`): the reward path's setting, where a GRPO
    # batch verifies many completions of few tasks. None (the corpus): the reference is timed in every verification.
    reference_reuse: ReferenceReuse | None = None
    # "full": every performance case timed over `repetitions` samples. "rl" (the reward path): 30 samples where the
    # pilot of the case's reference spreads by at most 5%, the full count elsewhere (`judge.RL_REPETITIONS`; the
    # arithmetic is there); each timing records the profile it was taken under.
    timing_profile: str = "full"
    reward: RewardConfig = field(default_factory=lambda: DEFAULT_REWARD)
    python: str = sys.executable
    keep_workdir: bool = False
    work_root: Path | None = None  # where each candidate's folder is made (None: the system's temp folder)
    allowed_ops: tuple[
        str, ...
    ] = ()  # aten ops allowed in forward beyond toolchain.sandboxed.integrity.GLUE_OPS
    audit_speedup: float = 10.0  # speedups above this are flagged for a human to audit
    # cpu only: run the timing stage through the interpreter too (wall clock; never a speedup), so that the
    # timing protocol (timed spot checks judged by the parent) is exercised without a GPU, as in CI
    time_on_cpu: bool = False
    hip_cache: Path = field(
        default_factory=lambda: Path(
            os.environ.get("KV_HIP_CACHE", Path.home() / ".cache" / "kernelvault" / "hip")
        )
    )
    hip_cache_bytes: int = 2 << 30
    # "auto": the OS jail where this machine can build one (toolchain.jail), else a plain process with a
    # loud warning; "jail": refuse to verify without one; "process": no jail (benchmarks, debugging)
    isolation: str = field(default_factory=lambda: os.environ.get("KV_ISOLATION", "auto"))
    # the static rules of toolchain.static_wall (off only to test the layers behind it)
    static_wall: bool = True


def trim(text: str, limit: int = LOG_LIMIT) -> str:
    """Keep the head and the tail of a long log: the first error and the last context matter most."""
    text = text.strip()
    if len(text) <= limit:
        return text
    half = limit // 2
    return f"{text[:half]}\n… [{len(text) - limit} characters cut] …\n{text[-half:]}"


_WARNED: set[str] = set()


def reward_verify_config(platform: str | None, timeout_s: float, timing: str = "rl") -> VerifyConfig:
    """The reward path's verifier (`kernelvault rl serve`, a trainer's local lanes). `timing` "rl": a case's
    reference figure reused (`toolchain.reference_times`) and the RL timing profile (`timing_profile`), where a
    GRPO batch verifies many completions of few tasks; "full": the corpus's protocol."""
    if timing not in REWARD_TIMINGS:
        raise ValueError(f"the reward's timing is one of {REWARD_TIMINGS}, not {timing!r}")
    if timing == "full":
        return VerifyConfig(platform=platform, timeout_s=timeout_s)
    return VerifyConfig(platform=platform, timeout_s=timeout_s, reference_reuse=REWARD_REFERENCE_REUSE,
                        timing_profile="rl")  # fmt: skip


def resolve_isolation(choice: str, python: str) -> Isolation:
    """The isolation `VerifyConfig.isolation` asks for, as this machine can give it (probed once per process).

    "auto" without a jail says so on stderr, once: every verdict records it too (`RunEnvironment.isolation`).
    """
    if choice == "process":
        return Isolation(ISOLATION_PROCESS, "the jail is switched off (VerifyConfig.isolation='process')")
    if choice not in ("auto", "jail"):
        raise ValueError(f"isolation must be 'auto', 'jail' or 'process', not {choice!r}")
    found = _probe(python)
    if not found.jailed:
        if choice == "jail":
            raise RuntimeError(f"isolation 'jail' was asked for, but {found.detail}")
        if found.detail not in _WARNED:
            _WARNED.add(found.detail)
            print(f"WARNING: candidate code runs WITHOUT an OS jail: {found.detail}. Verdicts record "
                  "isolation='process'. See toolchain/jail.py.", file=sys.stderr)  # fmt: skip
    return found


class UnjailedModelOutput(RuntimeError):
    """Model output would run without an OS jail, and nobody opted in (`require_jail_for_model_output`)."""


def require_jail_for_model_output(verifier: Verifier, allow_unjailed: bool = False) -> None:
    """Refuse to verify candidates a model wrote on a machine that cannot jail them, unless the user opted
    in (`allow_unjailed`, `--allow-unjailed`, or KV_ALLOW_UNJAILED=1). Bundled and local files run either way:
    their author is the user."""
    if verifier.isolation.jailed or allow_unjailed or os.environ.get("KV_ALLOW_UNJAILED") == "1":
        return
    raise UnjailedModelOutput(
        f"refusing to run model-written kernels without an OS jail ({verifier.isolation.detail}); "
        "run as root or where user namespaces are enabled, or opt in with --allow-unjailed (KV_ALLOW_UNJAILED=1)"
    )


_probe = functools.cache(probe_isolation)  # once per process and interpreter: building a jail costs ~0.2 s


# Names whose values are secrets wherever they are set: a value of one of these, found in the verify
# process's environment, never reaches a row or a prompt (the jail keeps the environment out of the
# candidate's process; this is the second line, for what a compiler or a crash prints).
_SECRET_NAME_PARTS = ("KEY", "TOKEN", "SECRET", "PASSWORD", "PASSWD", "CREDENTIAL", "AUTH")


def scrub_secrets(text: str, environ: dict[str, str] | None = None) -> str:
    """`text` with the values of the verify process's secret-looking environment variables redacted."""
    environ = os.environ if environ is None else environ
    for name, value in environ.items():
        if len(value) >= 8 and any(part in name.upper() for part in _SECRET_NAME_PARTS) and value in text:
            text = text.replace(value, f"[{name} redacted]")
    return text


class _Stages:
    def __init__(self) -> None:
        self.records: list[StageRecord] = []

    def add(self, name: str, outcome: str, seconds: float, log: str = "") -> None:
        self.records.append(StageRecord(name=name, outcome=outcome, seconds=round(seconds, 4), log=trim(log)))  # type: ignore[arg-type]

    def skip_rest(self) -> None:
        done = {record.name for record in self.records}
        for name in ("parse", "static", "compile", "check", "time"):
            if name not in done:
                self.add(name, "skipped", 0.0)


def _crash_message(run: SandboxResult, what: str) -> tuple[str, str]:
    if run.timed_out:
        return "timeout", f"{what} did not finish within {run.seconds:.0f} s"
    if run.signal_name:
        detail = run.stderr_tail.strip().splitlines()[-1:] or [""]
        return "runtime_error", f"{what} was killed by {run.signal_name} {detail[0]}".strip()
    last = run.stderr_tail.strip().splitlines()[-1:] or ["(no output)"]
    return "runtime_error", f"{what} exited with code {run.returncode} before reporting: {last[0]}"


@dataclass(frozen=True)
class DeviceCheck:
    """What the device stage learnt of a candidate from its check job: the worker's report, or how its worker
    ended when it sent none (`failure_kind` then says timeout or runtime_error)."""

    failure_kind: str | None
    failure_message: str | None
    checks: tuple[CaseCheck, ...] = ()
    kernels: tuple[str, ...] = ()
    compile_seconds: float | None = None
    timings: tuple[CaseTiming, ...] = ()
    traceback: str = ""
    # set by the parent's lane (`worker_lane`), never read from the worker's own report
    protocol_costs: ProtocolCosts | None = None

    @property
    def passed(self) -> bool:
        return self.failure_kind is None

    @classmethod
    def from_worker(cls, run: SandboxResult, result: dict[str, Any] | None) -> DeviceCheck:
        if result is None:
            kind, message = _crash_message(run, "the candidate's worker process")
            return cls(kind, message)
        costs = result.get("protocol_costs")
        return cls(
            failure_kind=result.get("failure_kind"),
            failure_message=result.get("failure_message"),
            checks=tuple(CaseCheck(**check) for check in result.get("checks", ())),
            kernels=tuple(result.get("kernels", ())),
            compile_seconds=result.get("compile_seconds"),
            timings=tuple(CaseTiming(**timing) for timing in result.get("timings", ())),
            traceback=result.get("traceback", ""),
            protocol_costs=costs if isinstance(costs, ProtocolCosts) else None,
        )


@dataclass(frozen=True)
class Prepared:
    """A candidate after the CPU stages (parse, static, HIP compile): a final verdict, or work for a device.

    Picklable, so a compile pool in other processes can produce it. `workdir` holds the files the device
    stage needs; `Verifier.complete` removes it.
    """

    task: Task
    target: str
    verdict: Verdict | None = None
    route: str = ""  # "cpu" | "gpu": which device stage finishes it
    code: str = ""
    stages: tuple[StageRecord, ...] = ()
    workdir: str = ""
    hip: HipBuild | None = None
    # An optimisation task's baseline, prepared the same way: `complete` runs it first on the same lane
    # (`kernelvault.toolchain.optimisation`).
    baseline: Prepared | None = None

    @property
    def decided(self) -> Verdict | None:
        """The final verdict when no device stage is left to run (neither the candidate's nor a baseline's)."""
        return self.verdict if self.baseline is None else None


class Verifier:
    """Verifies candidates on one platform; cheap to build, safe to share across threads.

    Two stages: `prepare` (the CPU stages, in any process) and `complete` (the device stage, on a lane's
    workers). What runs them is the lane pool (`kernelvault.toolchain.lane_pool`): a job's, a service's, or a
    pool of one for a single candidate (`lane_pool.verify_once`).
    """

    def __init__(self, config: VerifyConfig | None = None) -> None:
        self.config = config or VerifyConfig()
        if self.config.timing_inputs not in TIMING_INPUTS:
            choice = self.config.timing_inputs
            raise ValueError(f"timing_inputs must be one of {TIMING_INPUTS}, not {choice!r}")
        if self.config.timing_profile not in TIMING_PROFILES:
            choice = self.config.timing_profile
            raise ValueError(f"timing_profile must be one of {TIMING_PROFILES}, not {choice!r}")
        self.choice: PlatformChoice = detect_platform(self.config.platform, self.config.arch)
        self.isolation: Isolation = resolve_isolation(self.config.isolation, self.config.python)
        self.environment: RunEnvironment = dataclasses.replace(run_environment(self.choice),
                                                               isolation=self.isolation.level)  # fmt: skip

    def prepare(self, task: Task, candidate: Candidate) -> Prepared:
        """Parse, static checks and (HIP native) compile; stops where a worker would start. On an optimisation
        task, the baseline's too, once the candidate has passed its own."""
        prepared = self._prepare_in_workdir(task, candidate)
        baseline = baseline_candidate(task, candidate.target) if candidate.origin != BASELINE_ORIGIN else None
        if baseline is None or (prepared.verdict is not None and prepared.verdict.failure_kind is not None):
            return prepared  # a candidate that fails its own CPU stages is judged without the baseline
        prepared_baseline = self._prepare_in_workdir(task, baseline)
        decided = prepared_baseline.verdict
        problem = baseline_failure(decided) if decided is not None else None
        if problem:
            self.discard(prepared)
            return Prepared(task, candidate.target, verdict=self.lost(task, candidate.target, problem))
        if decided is not None and prepared.verdict is not None:  # both final on the CPU (HIP: compile only)
            return Prepared(task, candidate.target, verdict=against_baseline(prepared.verdict, decided,
                                                                             self.config.reward))  # fmt: skip
        return dataclasses.replace(prepared, baseline=prepared_baseline)

    def _prepare_in_workdir(self, task: Task, candidate: Candidate) -> Prepared:
        if self.config.work_root is not None:
            self.config.work_root.mkdir(parents=True, exist_ok=True)
        workdir = Path(tempfile.mkdtemp(prefix="kv-verify-", dir=self.config.work_root))
        try:
            prepared = self._prepare(task, candidate, workdir)
        except Exception as error:  # noqa: BLE001 - a harness bug fails this attempt, never the whole run
            prepared = Prepared(
                task, candidate.target, verdict=self._harness_error(task, candidate.target, error)
            )
        if prepared.verdict is not None and not self.config.keep_workdir:  # else complete() owns the folder
            shutil.rmtree(workdir, ignore_errors=True)
        return prepared

    def complete(self, prepared: Prepared, lane: WorkerLane) -> Verdict:
        """Finish a prepared candidate on this platform's device (or the interpreter on cpu); an optimisation
        task's baseline first, on the same lane."""
        if prepared.baseline is None:
            return self._complete_one(prepared, lane)
        baseline = self._complete_one(prepared.baseline, lane)
        problem = baseline_failure(baseline)
        if problem:
            self.discard(prepared)
            return self.lost(prepared.task, prepared.target, problem)
        return against_baseline(self._complete_one(prepared, lane), baseline, self.config.reward)

    def _complete_one(self, prepared: Prepared, lane: WorkerLane) -> Verdict:
        if prepared.verdict is not None:
            return prepared.verdict
        workdir = Path(prepared.workdir)
        try:
            stages = _Stages()
            stages.records = list(prepared.stages)
            if prepared.route == "cpu":
                return self._verify_on_cpu(stages, prepared.task, prepared.code, workdir, lane)
            return self._verify_on_gpu(stages, prepared.task, prepared.code, workdir, lane, prepared.hip)
        except Exception as error:  # noqa: BLE001 - a harness bug fails this attempt, never the whole run
            return self._harness_error(prepared.task, prepared.target, error)
        finally:
            if not self.config.keep_workdir:
                shutil.rmtree(workdir, ignore_errors=True)

    def discard(self, prepared: Prepared) -> None:
        """Remove what `prepare` left for a device stage that will never run (its lane died with it)."""
        if prepared.workdir and not self.config.keep_workdir:
            shutil.rmtree(prepared.workdir, ignore_errors=True)
        if prepared.baseline is not None:
            self.discard(prepared.baseline)

    def lost(self, task: Task, target: str, message: str) -> Verdict:
        """The verdict of an attempt our side could not finish (its worker node or actor kept dying)."""
        stages = _Stages()
        stages.add("check", "failed", 0.0, message)
        return self._finish(stages, task, "", target=target, failure_kind="infrastructure_error",
                            failure_message=message)  # fmt: skip

    def _harness_error(self, task: Task, target: str, error: Exception) -> Verdict:
        stages = _Stages()
        stages.add("check", "failed", 0.0, traceback.format_exc())
        message = f"verifier error: {type(error).__name__}: {error}"
        return self._finish(stages, task, "", target=target, failure_kind="infrastructure_error",
                            failure_message=message)  # fmt: skip

    @staticmethod
    def _for_device(route: str, stages: _Stages, task: Task, code: str, workdir: Path,
                    hip: HipBuild | None = None) -> Prepared:  # fmt: skip
        """What the CPU stages leave for a device stage (`complete`)."""
        target = "hip" if hip else "triton"
        return Prepared(task, target, None, route, code, tuple(stages.records), str(workdir), hip)

    def _finish(self, stages: _Stages, task: Task, code: str, **fields: Any) -> Verdict:
        started = time.perf_counter()
        target = fields.pop("target", "triton")
        reward = graded_reward(
            fields.get("compiled", False), fields.get("correct"), fields.get("speedup"),
            fields.get("failure_kind"), self.config.reward,
        )  # fmt: skip
        stages.skip_rest()
        stages.add("reward", "passed", time.perf_counter() - started, f"total {reward.total:.3f}")
        speedup = fields.get("speedup")
        if speedup is not None and speedup > self.config.audit_speedup:
            fields["audit"] = (f"speedup_over_{self.config.audit_speedup:g}x",)
        environment = self.environment
        if target == "hip" and self.choice.platform == "cpu":  # HIP on cpu is hipcc's arch, not Triton's
            environment = dataclasses.replace(environment, arch=self._hip_arch() or DEFAULT_CPU_HIP_ARCH,
                                              device="cpu (hipcc, compile only)")  # fmt: skip
        for name in ("failure_message", "compile_log"):  # they reach rows and the model's next prompt
            if fields.get(name):
                fields[name] = scrub_secrets(fields[name])
        stages.records = [
            dataclasses.replace(record, log=scrub_secrets(record.log)) for record in stages.records
        ]
        return Verdict(
            task_id=task.task_id, target=target, candidate_hash=content_hash(code) if code else "", code=code,
            stages=tuple(stages.records), environment=environment, reward=reward,
            **{"compiled": False, "correct": False, "failure_kind": None, "failure_message": None, **fields},
        )  # fmt: skip

    def _prepare(self, task: Task, candidate: Candidate, workdir: Path) -> Prepared:
        """The CPU stages (parse, static, HIP's native build): a final verdict, or what a device stage
        finishes (`complete`)."""
        stages = _Stages()
        started = time.perf_counter()
        extracted = extract_code(candidate.text)
        if extracted.code is None:
            stages.add("parse", "failed", time.perf_counter() - started, extracted.message)
            verdict = self._finish(stages, task, "", target=candidate.target, failure_kind="parse_error",
                                   failure_message=extracted.message)  # fmt: skip
            return Prepared(task, candidate.target, verdict=verdict)
        code = extracted.code
        stages.add("parse", "passed", time.perf_counter() - started, extracted.message)
        if candidate.target == "hip":
            outcome = self._prepare_hip(stages, task, code, workdir)
        else:
            outcome = self._prepare_triton(stages, task, code, workdir)
        return outcome if isinstance(outcome, Prepared) else Prepared(task, candidate.target, verdict=outcome)

    def _prepare_triton(self, stages: _Stages, task: Task, code: str, workdir: Path) -> Verdict | Prepared:
        started = time.perf_counter()
        static = check_triton_candidate(code, function_entries(task), kernels=task.kernel_entry)
        if static.failure_kind is not None:
            stages.add("static", "failed", time.perf_counter() - started, static.message)
            return self._finish(
                stages, task, code, failure_kind=static.failure_kind, failure_message=static.message
            )
        refused = self._static_wall(code, "triton", test_imports(task))
        if refused is not None:
            stages.add("static", "failed", time.perf_counter() - started, refused)
            return self._finish(stages, task, code, failure_kind="static_reject", failure_message=refused)
        stages.add("static", "passed", time.perf_counter() - started, static.message)

        (workdir / "task.py").write_text(task.source)
        (workdir / "candidate.py").write_text(code)
        (workdir / "launches.jsonl").write_text("")
        if self.choice.platform == "cpu":
            return self._for_device("cpu", stages, task, code, workdir)
        return self._for_device("gpu", stages, task, code, workdir)

    def _hip_cache_folder(self) -> Path:
        """The HIP build cache, made if missing: a worker's jail binds it (read-only) when the worker starts,
        and a folder that did not exist then would never appear inside."""
        self.config.hip_cache.mkdir(parents=True, exist_ok=True)
        return self.config.hip_cache

    def _static_wall(self, code: str, target: str, imports: tuple[str, ...] = ()) -> str | None:
        """The static wall's refusal (`kernelvault.toolchain.static_wall`), or None; off only when the config says so.
        `imports`: a function task's test imports, which join the candidate's module when it runs."""
        if not self.config.static_wall:
            return None
        finding = check_candidate(code, target, imports)
        return finding.message() if finding is not None else None

    @property
    def sample_ms(self) -> float:
        """`VerifyConfig.sample_ms` resolved for this platform."""
        if self.config.sample_ms is not None:
            return self.config.sample_ms
        return 0.0 if self.choice.platform == "cpu" else DEFAULT_GPU_SAMPLE_MS

    def _hip_arch(self) -> str | None:
        # On cpu the Triton default (gfx942) is unknown to Debian's ROCm 5.2 clang: HIP takes gfx90a unless told.
        return self.config.arch if self.choice.platform == "cpu" else self.choice.arch

    def _prepare_hip(self, stages: _Stages, task: Task, code: str, workdir: Path) -> Verdict | Prepared:
        started = time.perf_counter()
        if task.entry:
            message = (
                f"{task.name} is a function task: it takes Triton candidates (HIP candidates define ModelNew)"
            )
            stages.add("static", "failed", time.perf_counter() - started, message)
            return self._finish(
                stages, task, code, target="hip", failure_kind="static_reject", failure_message=message
            )
        static = check_hip_candidate(code)
        refused = self._static_wall(code, "hip") if static.failure_kind is None else None
        failure_kind, message = (
            ("static_reject", refused) if refused else (static.failure_kind, static.message)
        )
        stages.add("static", "failed" if failure_kind else "passed", time.perf_counter() - started, message)
        if failure_kind is not None:
            return self._finish(
                stages, task, code, target="hip", failure_kind=failure_kind, failure_message=message
            )
        (workdir / "task.py").write_text(task.source)
        (workdir / "candidate.py").write_text(code)
        (workdir / "launches.jsonl").write_text("")
        platform = self.choice.platform

        if static.form == "load_inline":
            if platform == "cpu":
                message = ("the load_inline form builds a PyTorch C++ extension, which needs a ROCm or CUDA build of "
                           "PyTorch (its headers need rocThrust/CUDA); this machine has the CPU build, so the "
                           "candidate cannot be compiled here: verify it on a GPU machine (the native form compiles "
                           "here)")  # fmt: skip
                stages.add("compile", "skipped", 0.0, message)
                return self._finish(stages, task, code, target="hip", failure_kind="infrastructure_error",
                                    failure_message=message)  # fmt: skip
            return self._for_device("gpu", stages, task, code, workdir, HipBuild("load_inline"))

        source = static.hip_source or ""
        started = time.perf_counter()
        try:
            compiler = find_hip_compiler(platform, self._hip_arch())
        except HipToolchainMissing as error:
            stages.add("compile", "failed", time.perf_counter() - started, str(error))
            return self._finish(stages, task, code, target="hip", failure_kind="infrastructure_error",
                                failure_message=str(error))  # fmt: skip
        if compiler.vendor == "nvidia":
            issues = portability_issues(source)
            if issues:
                message = f"not portable to NVIDIA ({self.choice.device}): " + "; ".join(issues)
                stages.add("compile", "failed", time.perf_counter() - started, message)
                return self._finish(stages, task, code, target="hip", failure_kind="compile_error",
                                    failure_message=message, compile_log=message)  # fmt: skip
        build = compile_hip(source, compiler, HipBuildCache(self.config.hip_cache, self.config.hip_cache_bytes),
                            self.config.compile_timeout_s, self.isolation)  # fmt: skip
        where = f"{compiler.vendor} {compiler.arch}"
        log = f"{build.command}\n{compiler.version}\n{'cache hit' if build.cached else f'{build.seconds:.2f} s'}\n{build.log}"
        stages.add("compile", "passed" if build.ok else "failed", build.seconds, log)
        if not build.ok or build.library is None:
            first = next(
                (line for line in build.log.splitlines() if "error" in line.lower()), build.log[:300]
            )
            return self._finish(stages, task, code, target="hip", failure_kind="compile_error",
                                failure_message=f"does not compile for {where}: {first.strip()}",
                                compile_log=trim(build.log))  # fmt: skip
        if platform == "cpu":
            message = (
                f"compiled for {compiler.arch} with {Path(compiler.path).name}; no AMD GPU here, so not run"
            )
            stages.add("check", "skipped", 0.0, message + ": correctness unknown")
            stages.add("time", "skipped", 0.0, "no GPU: the cpu platform does not time kernels")
            return self._finish(stages, task, code, target="hip", compiled=True, correct=None,
                                compile_log=trim(build.log) or message)  # fmt: skip
        hip = HipBuild("native", str(build.library), source_hash(source), trim(log))
        return self._for_device("gpu", stages, task, code, workdir, hip)

    def _setup(self) -> WorkerSetup:
        """How every worker of a job starts: this verifier's platform and isolation, whatever the job."""
        return WorkerSetup(
            self.choice.platform, self.isolation,
            str(self.config.work_root) if self.config.work_root else None,
            (str(self._hip_cache_folder()),),  # the native HIP libraries the worker loads
        )  # fmt: skip

    def _check_job(self, task: Task, workdir: Path, timed: bool, hip: HipBuild | None = None) -> CheckJob:
        return CheckJob(
            setup=self._setup(),
            task_id=task.task_id,
            task_path=str(workdir / "task.py"),
            candidate_path=str(workdir / "candidate.py"),
            launches_path=str(workdir / "launches.jsonl"),
            correctness_cases=task.correctness_cases,
            performance_cases=task.performance_cases,
            atol=task.atol,
            rtol=task.rtol,
            allow_tf32=task.allow_tf32,
            entry=task.entry,
            entries=tuple(function_entries(task)),
            kernel_entries=task.kernel_entry,
            test_imports=tuple(test_imports(task)),
            trials=self.config.trials,
            timed=timed,
            repetitions=self.config.repetitions,
            warmup=self.config.warmup,
            input_sets=self.config.input_sets,
            allowed_ops=tuple(self.config.allowed_ops),
            sample_ms=self.sample_ms,
            hip=hip,
            shared_outputs=self.shares_outputs(),
            turn_staged_mb=self.config.turn_staged_mb,
            timing_inputs=self.config.timing_inputs,
            reference_reuse=self.config.reference_reuse,
            timing_profile=self.config.timing_profile,
        )

    def shares_outputs(self) -> bool:
        """Whether this verifier's workers send their outputs as shared memory (`VerifyConfig.shared_outputs`)."""
        platform = self.choice.platform
        if self.config.shared_outputs is not None:
            return self.config.shared_outputs and platform in ("cpu", "cuda")
        if platform != "cuda":
            return False
        from kernelvault.toolchain.sandboxed.device_share import exportable

        return exportable(0) is None  # the parent's first GPU stands for all: one driver, one kind of GPU

    def _worker_env(self, interpret: bool) -> dict[str, str]:
        project_root = str(Path(kernelvault.__file__).resolve().parents[1])  # the folder holding the package
        python_path = os.pathsep.join(filter(None, [project_root, os.environ.get("PYTHONPATH")]))
        # Each worker has its own Triton cache (toolchain.worker_lane): one shared with candidates would be
        # theirs to poison.
        env = {"PYTHONPATH": python_path, "TRITON_DEFAULT_FP_FUSION": "1"}
        if interpret:
            env["TRITON_INTERPRET"] = "1"
        return env

    def _check_limits(self) -> SandboxLimits:
        memory = self.config.memory_limit_mb
        on_cpu = self.choice.platform == "cpu"
        return SandboxLimits(self.config.timeout_s, (memory << 20) if (memory and on_cpu) else None)

    def _verify_on_cpu(self, stages: _Stages, task: Task, code: str, workdir: Path,
                       lane: WorkerLane) -> Verdict:  # fmt: skip
        check_started = time.perf_counter()
        job = self._check_job(task, workdir, timed=self.config.time_on_cpu)
        run, result = lane.run(job, self._check_limits(), self._worker_env(interpret=True))
        check_seconds = time.perf_counter() - check_started
        check = DeviceCheck.from_worker(run, result)
        if check.failure_kind in ("infrastructure_error", "compile_error", "static_reject"):
            # The candidate never ran (import failure) or the harness/reference failed: no cross-compile.
            stage = "compile" if check.failure_kind == "compile_error" else "check"
            stages.add(stage, "failed", check_seconds, f"{check.failure_message}\n{check.traceback}")
            return self._finish(stages, task, code, failure_kind=check.failure_kind,
                                failure_message=check.failure_message, checks=check.checks)  # fmt: skip

        compile_started = time.perf_counter()
        launches = (workdir / "launches.jsonl").read_text().strip()
        compiled, compile_log = False, "no kernel launch was recorded, so nothing could be compiled"
        if launches:
            compile_job = CompileJob(self._setup(), str(workdir / "candidate.py"), str(workdir / "launches.jsonl"),
                                     "hip", self.choice.arch, AMD_WAVEFRONT, tuple(self.config.allowed_ops))  # fmt: skip
            limits = SandboxLimits(self.config.compile_timeout_s, None)
            compile_run, compile_result = lane.run(compile_job, limits, self._worker_env(interpret=False))
            if compile_result is None:
                kind, compile_log = _crash_message(compile_run, "the cross-compiler")
            elif compile_result.get("failure_kind") == "integrity_reject":
                stages.add(
                    "compile",
                    "failed",
                    time.perf_counter() - compile_started,
                    compile_result["failure_message"],
                )
                return self._finish(stages, task, code, failure_kind="integrity_reject",
                                    failure_message=compile_result["failure_message"])  # fmt: skip
            elif compile_result.get("harness_error"):
                stages.add("compile", "failed", time.perf_counter() - compile_started, compile_result["log"])
                return self._finish(stages, task, code, failure_kind="infrastructure_error",
                                    failure_message=compile_result["log"])  # fmt: skip
            else:
                compiled = bool(compile_result["ok"])
                compile_log = compile_result["log"] or "\n".join(
                    f"{k['kernel']}: compiled for {self.choice.arch} in {k['seconds']:.2f} s ({k['log']})"
                    for k in compile_result["kernels"]
                )
        compile_seconds = time.perf_counter() - compile_started
        stages.add("compile", "passed" if compiled else "failed", compile_seconds, compile_log)

        if launches and not compiled and check.failure_kind != "integrity_reject":
            # Kernels ran under the interpreter but do not build for the GPU: that is the verdict (unless the
            # check caught the candidate cheating: the cause beats its symptom).
            stages.add("check", "passed" if check.passed else "failed", check_seconds,
                       check.failure_message or "interpreter run finished")  # fmt: skip
            return self._finish(stages, task, code, failure_kind="compile_error",
                                failure_message=f"does not compile for {self.choice.arch}: {trim(compile_log, 600)}",
                                checks=check.checks, kernels=check.kernels, compile_log=trim(compile_log))  # fmt: skip
        passed = check.passed
        timings = check.timings
        timed_seconds = _add_check_stage(stages, check, check_seconds, jit_seconds=0.0)
        if timings and passed:  # time_on_cpu: the protocol ran; the interpreter's wall clock is no speedup
            batched = sorted({t.calls_per_sample for t in timings if t.calls_per_sample > 1})
            per_sample = f", {'/'.join(map(str, batched))} calls per sample" if batched else ""
            stages.add("time", "passed", timed_seconds, f"interpreter wall clock, {_protocol(timings)}{per_sample}; "
                       "not a kernel measurement, so no speedup")  # fmt: skip
        else:
            stages.add("time", "skipped", 0.0, "no GPU: the cpu platform does not time kernels")
        return self._finish(
            stages, task, code, compiled=compiled, correct=passed,
            failure_kind=check.failure_kind, failure_message=check.failure_message, checks=check.checks,
            kernels=check.kernels, compile_log=trim(compile_log), speedup=None, timings=timings,
        )  # fmt: skip

    def _verify_on_gpu(self, stages: _Stages, task: Task, code: str, workdir: Path, lane: WorkerLane,
                       hip: HipBuild | None = None) -> Verdict:  # fmt: skip
        """Check and time on the device. `hip`: the HIP build (form, library, compile log) when not Triton."""
        target = "hip" if hip else "triton"
        started = time.perf_counter()
        job = self._check_job(task, workdir, timed=True, hip=hip)
        limits = self._check_limits()
        if hip and hip.form == "load_inline":  # the extension is built inside the worker (slow path)
            limits = SandboxLimits(limits.timeout_s + self.config.compile_timeout_s, limits.memory_bytes)
        run, result = lane.run(job, limits, self._worker_env(interpret=False))
        seconds = time.perf_counter() - started
        check = DeviceCheck.from_worker(run, result)
        kind = check.failure_kind
        launched = bool((workdir / "launches.jsonl").read_text().strip())
        compile_failed = kind in ("compile_error", "static_reject") or not launched
        compile_seconds = check.compile_seconds or 0.0
        if hip and hip.form == "native":  # compiled before the worker started: that is the compile stage
            compile_failed = kind in ("compile_error", "static_reject")
            launched = launched or not compile_failed
        if kind == "infrastructure_error":
            stages.add("check", "failed", seconds, f"{check.failure_message or ''}\n{check.traceback}")
            return self._finish(stages, task, code, target=target, failure_kind=kind,
                                failure_message=check.failure_message)  # fmt: skip
        compile_log = check.failure_message if kind == "compile_error" else (
            f"JIT-compiled on {self.choice.device} ({self.choice.arch}) during the first forward"
            if launched else "no kernel was launched, so nothing was compiled"
        )  # fmt: skip
        if hip and hip.form == "native":
            compile_log = check.failure_message if kind == "compile_error" else hip.compile_log
        else:
            stages.add(
                "compile", "failed" if compile_failed else "passed", compile_seconds, compile_log or ""
            )
        if kind == "compile_error":
            return self._finish(stages, task, code, target=target, failure_kind=kind, failure_message=check.failure_message,
                                compile_log=trim(compile_log or ""), kernels=check.kernels)  # fmt: skip
        timings = check.timings
        # The worker's run holds the JIT compile of the first forward (its own stage above, except for a
        # native HIP library, built before the worker).
        jit_seconds = 0.0 if hip and hip.form == "native" else compile_seconds
        timed_seconds = _add_check_stage(stages, check, seconds, jit_seconds)
        speedup = None
        if kind is None:
            speedup, unbound_note = credited_speedup(self.choice.platform, timings)
            stages.add("time", "passed", timed_seconds, "; ".join(
                f"{t.case}: {t.candidate_ms:.4f} ms vs reference {t.reference_ms:.4f} ms ({t.repetitions} reps"
                + (f" of {t.calls_per_sample} calls" if t.calls_per_sample > 1 else "")
                + (", the reference's figure reused)" if t.reference_timing == "reused" else ")")
                for t in timings) + f"; {_protocol(timings)}" + (f"; {unbound_note}" if unbound_note else ""))  # fmt: skip
        return self._finish(
            stages, task, code, target=target, compiled=launched and not compile_failed, correct=kind is None,
            failure_kind=kind,
            failure_message=check.failure_message, checks=check.checks, timings=timings,
            speedup=speedup, kernels=check.kernels, compile_log=trim(compile_log or ""),
        )  # fmt: skip


def credited_speedup(platform: str, timings: Sequence[CaseTiming]) -> tuple[float | None, str]:
    """The task's speedup over its performance cases (`task_speedup`), or None and why not. On a device the speed
    needs every case's watched device-work figure (`own_work`): without one nothing binds that case's timed calls to
    the checked work, so no speed is credited (the verdict stays correct). The CPU never credits speed."""
    unbound = [t.case for t in timings if t.own_kernel_ms is None] if platform != "cpu" else []
    if unbound:
        return None, f"no speed term: no device-work figure for {', '.join(unbound)}"
    return task_speedup([t.reference_ms for t in timings], [t.candidate_ms for t in timings]), ""


def _protocol(timings: tuple[CaseTiming, ...]) -> str:
    """How the timed calls were checked, for the time stage's log."""
    checked = sum(t.checked_calls or 0 for t in timings)
    if all(t.inputs == "fresh" for t in timings):
        return f"fresh inputs on every timed call, {checked} timed call(s) checksummed, two outputs a case spot-checked"
    return "rotated fixed inputs (not the verifying protocol), two outputs a case spot-checked"


def _add_check_stage(stages: _Stages, check: DeviceCheck, worker_seconds: float, jit_seconds: float) -> float:
    """Add the check stage: the worker's run less what other stages hold (the JIT compile of the first
    forward, the time stage) and less the lane's wait at its device's gate. Returns the time stage's
    seconds, as the parent saw them (0 when nothing was timed)."""
    passed = check.passed
    costs = check.protocol_costs
    timed = costs.timed_seconds if costs is not None and passed and check.timings else 0.0
    waited = costs.gate_seconds if costs is not None else 0.0
    log = f"{len(check.checks)} case check(s) passed" if passed else (check.failure_message or "")
    stages.add("check", "passed" if passed else "failed", max(0.0, worker_seconds - timed - waited - jit_seconds),
               log + (f"\n{costs.summary()}" if costs is not None else ""))  # fmt: skip
    return timed

"""The parent runs every check and judges every output: the candidate's process only runs what it is given.

    parent (this module)                 reference worker (jailed)          candidate worker (jailed)
    draws the job's seeds (secrets) ───► prepare: init, inputs, expected
    links the inputs into in/ ─────────────────────────────────────────────► load, build, forward
    reads out/*.st, compares ◄───────────────────────────────────────────── writes its output
    ... for each case, then the timed calls of each performance case, then `end`

Why the check lives here and not in the candidate's process: whatever that process holds, a candidate that
has read our source can find (the garbage collector, its frames, `/proc/self/mem`) or forge (a reply, its
MAC, a judgement). So it holds nothing worth finding:
- no expected outputs: the task's reference runs in another jailed process (`kernelvault.toolchain.sandboxed.reference`),
  which writes them to files only the parent reads;
- no seeds: the parent draws a fresh seed for every input set of every job from `secrets`, and the
  candidate's process receives a case's inputs only when it must run them (the timed calls' inputs when
  they are timed). What it can learn in `__init__` (the weights' seed, which it needs to build the same
  weights as the reference) says nothing about any input. The timing seed of a performance case (every timed
  call's fresh values, `kernelvault.toolchain.sandboxed.timed_values`) arrives with its timed request, which
  needs it; it says nothing about the checks' inputs;
- no judge: nothing it sends is a judgement, a scope or a MAC. Its replies are requests' answers; an
  output is a file the parent reads (safetensors, never unpickled) and compares with `compare_outputs`.
  Every comparison is made here, once: the timed calls' checksums too (against the reference's on the same
  values), and the full checks of two timed outputs, drawn here after both workers ran among the samples the
  candidate's worker kept (drawn there from the OS's randomness, before the run).

What the candidate's process still decides: its own timings (measured in-process with device events) and
the tripwires' findings. A candidate that gets past the static wall and the tripwires could forge its own
latency; `Verdict.audit` flags implausible speedups, and on GPUs the device's record of which kernels ran
is checked (`docs/limits.md` says what that does not cover).
"""

from __future__ import annotations

import math
import os
import secrets
import shutil
import time
from collections.abc import Iterator, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, NoReturn

import torch

from kernelvault.contracts import TaskCase
from kernelvault.toolchain.compare import Comparison, compare_outputs, output_labels
from kernelvault.toolchain.device_gate import GateHold
from kernelvault.toolchain.reference_times import (
    REFERENCE_TIMES,
    ReferenceFigure,
    ReferenceKey,
    toolchain_versions,
)
from kernelvault.toolchain.sandbox import SandboxResult
from kernelvault.toolchain.sandboxed.own_work import launch_shortfall, speed_shortfall
from kernelvault.toolchain.sandboxed.requests import (
    Build,
    CandidateRequest,
    End,
    Forward,
    Load,
    PilotReference,
    Prepare,
    ReferenceRequest,
    StageReference,
    StageTime,
    Time,
    TimeReference,
    WriteKept,
    WriteKeptReference,
)
from kernelvault.toolchain.sandboxed.tensor_files import TensorFileError, read_tensors
from kernelvault.toolchain.sandboxed.timed_values import compare_checksums
from kernelvault.toolchain.sandboxed.timing import KEPT_SAMPLES, calls_for
from kernelvault.toolchain.worker import PersistentWorker
from kernelvault.toolchain.worker_jobs import CheckJob


@dataclass
class ProtocolCosts:
    """What the check protocol cost one job, measured by the parent.

    `megabytes`: tensor files handed to the candidate and read back from it; `shared_megabytes`: outputs mapped
    from the workers instead (`shared_outputs`); `transfer_seconds`: the parent reading (or mapping) what it judges; `answer_seconds`: comparing them; `reference_seconds`: the reference
    worker's requests (inputs, expected outputs, its timing); `timed_seconds`: the candidate's timed
    requests, the time stage as the parent saw it; `gate_seconds`: what the lane waited at its device's gate
    (`kernelvault.toolchain.device_gate`): the lane's wait, not the candidate's work.
    """

    messages: int = 0
    megabytes: float = 0.0
    shared_megabytes: float = (
        0.0  # outputs judged in shared memory (`CheckJob.shared_outputs`): no file, no copy
    )
    # how many values were opened from shared memory: a scalar output (mse_loss) is a few bytes, which the
    # megabytes round to 0.0, and this says it still went the shared way
    shared_values: int = 0
    transfer_seconds: float = 0.0
    answer_seconds: float = 0.0
    gate_seconds: float = 0.0
    start_seconds: float = 0.0  # the lane waiting for its workers' processes to be ready (a ready spare: ~0)
    device_record: str = ""  # on a GPU: how many windows the device's record covered, or why there was none
    # seconds spent in each kind of request (`candidate.build`, `reference.prepare`, ...), answers included:
    # where a lane's time goes (bench/reward_path.py reads it from the check stage's log)
    request_seconds: dict[str, float] = field(default_factory=dict)
    # the parent's seconds on each part of the plan, less the lane's waits at the gate: `check <case>` (all its
    # trials) and `time <case>` (staging, the turn alone, the spot checks): where a job's time goes per case
    case_seconds: dict[str, float] = field(default_factory=dict)

    def add_request(self, kind: str, seconds: float) -> None:
        self.request_seconds[kind] = self.request_seconds.get(kind, 0.0) + seconds

    def add_case(self, part: str, seconds: float) -> None:
        self.case_seconds[part] = self.case_seconds.get(part, 0.0) + seconds

    @property
    def reference_seconds(self) -> float:
        return sum(seconds for kind, seconds in self.request_seconds.items() if kind.startswith("reference."))

    @property
    def timed_seconds(self) -> float:
        return self.request_seconds.get(f"candidate.{Time.OP}", 0.0)

    def summary(self) -> str:
        waited = f"; waited {self.gate_seconds:.2f} s at the device's gate" if self.gate_seconds else ""
        record = f"; device record: {self.device_record}" if self.device_record else ""
        record += f"; workers starting {self.start_seconds:.2f} s" if self.start_seconds >= 0.005 else ""
        kinds = ", ".join(f"{kind} {seconds:.2f}" for kind, seconds in sorted(self.request_seconds.items()))
        shared = (f", {self.shared_megabytes:.1f} MB shared ({self.shared_values} values)"
                  if self.shared_values else "")  # fmt: skip
        # ` | ` separates the parts (a case's name may hold commas: `c0:batch=1,dim=17`), `;` ends them
        cases = " | ".join(f"{' '.join(part.replace('|', ' ').replace(';', ' ').split())} {seconds:.2f}"
                           for part, seconds in self.case_seconds.items())  # fmt: skip
        return (f"check protocol: {self.messages} request(s), {self.megabytes:.1f} MB of tensor files{shared}, "
                f"reading {self.transfer_seconds:.2f} s, comparing {self.answer_seconds:.2f} s, "
                f"reference {self.reference_seconds:.2f} s{waited}{record}"
                + (f"; seconds per request kind: {kinds}" if kinds else "")
                + (f"; seconds per case: {cases}" if cases else ""))  # fmt: skip


def draw_seed() -> int:
    """A seed nobody can predict: not the candidate, not a later job (63 bits, from the OS)."""
    return secrets.randbits(63)


class CheckStopped(Exception):
    """The check ends early: a failure of the candidate (a verdict), or of our side."""

    def __init__(self, result: dict[str, Any] | None, run: SandboxResult | None = None) -> None:
        super().__init__(str(result))
        self.result = result  # None: the candidate's worker died or ran out of time (see `run`)
        self.run = run


def _name_the_later_case(stop: CheckStopped, case: TaskCase, index: int) -> None:
    """A candidate that fails to compile or run only on a later case passed the earlier checks: say on which
    case, since a harness that runs only a task's small test calls would credit it (TritonBench's perf_T
    inputs are larger, or float16 where its tests are float32, and are a correctness case here too)."""
    result = stop.result
    if index == 0 or result is None or result.get("failure_kind") not in _RUN_FAILURES:
        return
    message = f"case {case.name}, the earlier checks passed: {result.get('failure_message')}"
    stop.result = {**result, "failure_message": message}


_RUN_FAILURES = frozenset({"compile_error", "runtime_error", "interface_error"})


def _tensor_bytes(value: Any) -> int:
    """Bytes of the tensors in a nest (what a judgement moved or mapped)."""
    if isinstance(value, torch.Tensor):
        return value.numel() * value.element_size()
    if isinstance(value, (list, tuple)):
        return sum(_tensor_bytes(item) for item in value)
    if isinstance(value, dict):
        return sum(_tensor_bytes(item) for item in value.values())
    return 0


def fail(kind: str, message: str) -> NoReturn:
    """End the check with this verdict: the candidate's, or infrastructure_error for our side's failure."""
    raise CheckStopped({"failure_kind": kind, "failure_message": message})


@dataclass
class _Check:
    """One job's state on the parent's side."""

    job: CheckJob
    reference: PersistentWorker
    candidate: PersistentWorker
    hold: GateHold | None
    timeout_s: float
    costs: ProtocolCosts = field(default_factory=ProtocolCosts)
    spent: float = 0.0  # the candidate's clock: seconds inside its worker's requests
    checks: list[dict[str, Any]] = field(default_factory=list)
    compile_seconds: float | None = None
    reference_dir: Path = Path()
    candidate_dir: Path = Path()
    inbox: Path = Path()
    # the reference's timings of this job, for `REFERENCE_TIMES` once the job has passed
    reference_figures: list[tuple[ReferenceKey, float, float]] = field(default_factory=list)

    # -- requests ------------------------------------------------------------------------------------

    def ask_candidate(self, body: CandidateRequest) -> dict[str, Any]:
        if self.hold is not None:
            self.costs.gate_seconds += self.hold.at_request(isinstance(body, Time))
        remaining = self.timeout_s - self.spent
        if remaining <= 0:
            raise CheckStopped(None, self.candidate.stop_for_timeout(self.spent))
        started = time.monotonic()
        reply = self.candidate.request(body, remaining)
        seconds = time.monotonic() - started
        self.spent += seconds
        self.costs.messages += 1
        self.costs.add_request(f"candidate.{body.OP}", seconds)
        if reply is None:
            raise CheckStopped(None, self.candidate.last_run)
        if reply.get("failure_kind") is not None:
            raise CheckStopped(reply)
        return reply

    def ask_reference(self, body: ReferenceRequest) -> dict[str, Any]:
        if self.hold is not None:
            timing = isinstance(body, PilotReference) or (isinstance(body, TimeReference) and body.timed)
            self.costs.gate_seconds += self.hold.at_request(timing)
        started = time.monotonic()
        reply = self.reference.request(body, self.timeout_s * 4 + 60)
        self.costs.messages += 1
        self.costs.add_request(f"reference.{body.OP}", time.monotonic() - started)
        if reply is None:
            run = self.reference.last_run
            detail = (run.stderr_tail.strip().splitlines() or ["(no output)"])[-1] if run is not None else ""
            fail("infrastructure_error", f"the reference worker failed: {detail}"[:2000])
        if reply.get("failure_kind") is not None:
            raise CheckStopped(reply)
        return reply

    def _task_fields(self) -> dict[str, Any]:
        """What every request to the reference worker names: the task, where and how it runs."""
        return {"task_path": str(self.reference_dir / "task.py"), "platform": self.job.setup.platform,
                "allow_tf32": self.job.allow_tf32, "entry": self.job.entry}  # fmt: skip

    # -- files ---------------------------------------------------------------------------------------

    def hand_over(self, path: str) -> str:
        """Give a file of the reference's to the candidate's worker (read-only there); its path there."""
        source = Path(path)
        target = self.inbox / source.name
        try:
            if not self.candidate.jailed:  # the inbox is read-only only in a jail: elsewhere, its own copy
                raise OSError("no jail")
            os.link(source, target)
        except OSError:  # another filesystem, no hard links, or no jail: a copy
            shutil.copyfile(source, target)
        os.chmod(target, 0o444)  # the candidate's worker (another uid) reads it; nobody writes it
        self.costs.megabytes += target.stat().st_size / 1e6
        return str(target)

    def _opened(self, worker: PersistentWorker, path: str | Path) -> Any:
        """The value `worker` sent as shared memory under `path`'s name, counted in the protocol's costs."""
        value = worker.bundles().open(str(path))
        self.costs.shared_megabytes += _tensor_bytes(value) / 1e6
        self.costs.shared_values += 1
        return value

    def _output(self, path: Path) -> Any:
        """The candidate's output named `path` (its file, or with `shared_outputs` its bundle), or the
        interface_error Comparison of one that is not there or cannot be read."""
        try:
            if self.job.shared_outputs:
                return self._opened(self.candidate, path)
            self.costs.megabytes += path.stat().st_size / 1e6
            return read_tensors(path)
        except (TensorFileError, OSError) as error:
            return Comparison("interface_error", f"the candidate's output could not be read: {error}")

    def _expected(self, path: str | Path) -> Any:
        """The reference's expected output named `path` (its file, or with `shared_outputs` its bundle)."""
        try:
            if self.job.shared_outputs:
                return self._opened(self.reference, path)
            return read_tensors(Path(path))
        except (TensorFileError, OSError) as error:
            fail("infrastructure_error", f"the reference's output could not be read: {error}")

    def judge(self, expected_path: str | Path, output_path: Path, from_reference: bool = True) -> Comparison:
        """The candidate's output against the reference's (or, `from_reference=False`, against another output of
        the candidate's: a second run on the same inputs). With `shared_outputs` both are compared where they
        are (on a GPU, in device memory mapped from the workers'), then unmapped."""
        started = time.monotonic()
        expected: Any = None
        output: Any = None
        try:
            expected = self._expected(expected_path) if from_reference else self._output(Path(expected_path))
            output = self._output(output_path)
            read = time.monotonic()
            self.costs.transfer_seconds += read - started
            unreadable = next((value for value in (expected, output) if isinstance(value, Comparison)), None)
            if unreadable is not None:
                return unreadable
            labels = output_labels(expected, self.job.kernel_entries) if self.job.entry else None
            comparison = compare_outputs(expected, output, self.job.atol, self.job.rtol, labels)
            self.costs.answer_seconds += time.monotonic() - read
            return comparison
        finally:
            if self.job.shared_outputs:  # the values were views into the mapped blocks
                expected = output = None
                self.candidate.bundles().release()
                self.reference.bundles().release()

    def outputs(self, name: str) -> Path:
        return self.candidate_dir / "out" / f"{name}.st"

    # -- the plan ------------------------------------------------------------------------------------

    def plan(self) -> Iterator[tuple[int, TaskCase, int]]:
        """(index, case, trial) for every check: correctness cases × trials, performance cases once."""
        cases = list(self.job.correctness_cases) + (
            list(self.job.performance_cases) if self.job.timed else []
        )
        index = 0
        for case in cases:
            for trial in range(self.job.trials if case.kind == "correctness" else 1):
                yield index, case, trial
                index += 1

    def check_case(self, index: int, case: TaskCase, trial: int) -> None:
        weight_seed = draw_seed()
        sets = [{"name": f"check{index}", "seed": draw_seed()}]
        # first seed of each case: run again over other poison, and on new values in place
        refill = trial == 0
        if refill:
            sets.append({"name": f"refill{index}", "seed": draw_seed()})
        prepared = self.ask_reference(Prepare(**self._task_fields(), case=case.name, overrides=case.overrides,
                                              weight_seed=weight_seed, sets=sets, out_dir=str(self.reference_dir),
                                              share=self.job.shared_outputs))  # fmt: skip
        files = prepared["sets"]
        init = self.hand_over(prepared["init"])
        self.ask_candidate(Build(init, weight_seed))
        inputs = self.hand_over(files[f"check{index}"]["inputs"])
        share = self.job.shared_outputs
        try:
            first = self.ask_candidate(
                Forward(inputs, str(self.outputs(f"check{index}")), poison="nan", share=share)
            )
        except CheckStopped as stop:
            _name_the_later_case(stop, case, index)
            raise
        if self.compile_seconds is None:
            self.compile_seconds = first.get("seconds")
        if refill:
            self.ask_candidate(
                Forward(inputs, str(self.outputs(f"again{index}")), poison=12345.0, share=share)
            )
            repeat = self.judge(
                self.outputs(f"check{index}"), self.outputs(f"again{index}"), from_reference=False
            )
            if repeat.failure_kind == "integrity_reject":  # e.g. a tensor subclass: say so first
                fail("integrity_reject", f"{repeat.message} (case {case.name})")
            if repeat.failure_kind is not None:
                fail(
                    "integrity_reject",
                    f"nondeterministic: a second run on the same inputs differs ({repeat.message}); "
                    "reads of unwritten memory or state kept between calls",
                )
        comparison = self.judge(str(files[f"check{index}"]["expected"]), self.outputs(f"check{index}"))
        self.checks.append({"case": case.name, "seed": int(sets[0]["seed"]), "passed": comparison.failure_kind is None,
                            "max_abs_error": comparison.max_abs_error, "max_rel_error": comparison.max_rel_error,
                            "message": comparison.message})  # fmt: skip
        if comparison.failure_kind == "integrity_reject":  # the sub-reason leads the message
            fail("integrity_reject", f"{comparison.message} (case {case.name})")
        if comparison.failure_kind is not None:
            fail(comparison.failure_kind, f"case {case.name}: {comparison.message}")
        if refill:
            refilled = self.hand_over(files[f"refill{index}"]["inputs"])
            try:
                self.ask_candidate(
                    Forward(
                        refilled, str(self.outputs(f"refill{index}")), "nan", reuse_inputs=True, share=share
                    )
                )
            except CheckStopped as stopped:
                if stopped.result is not None and str(stopped.result.get("failure_message", "")).startswith(
                    "no_kernel_launched"
                ):
                    fail(
                        "integrity_reject",
                        "cached_results: new values in the same input tensors launched no kernel",
                    )
                raise
            check = self.judge(str(files[f"refill{index}"]["expected"]), self.outputs(f"refill{index}"))
            if check.failure_kind is not None:
                fail(
                    "integrity_reject",
                    f"cached_results: new values in the same input tensors gave a wrong result ({check.message})",
                )

    def part(self, name: str) -> _Part:
        """Time a part of the plan (`check <case>`, `time <case>`) into `costs.case_seconds`, less gate waits."""
        return _Part(self, name)

    def time_cases(self, cases: Sequence[TaskCase]) -> list[dict[str, Any]]:
        """Time the performance cases in as few turns alone on the device as their staged inputs allow: every
        case of a turn is prepared and staged on both sides while the device is shared, then the turn times
        them one after another (candidate, then reference, per case), then their spot checks are judged. One
        turn per verification instead of one per case: each turn first waits for the other lanes to finish the
        request they are in (the gate's drain), so fewer turns are fewer drains. A turn holds at most
        `job.turn_staged_mb` of staged inputs (a case larger than that has a turn of its own; 0: a turn per case)."""
        timings: list[dict[str, Any]] = []
        group: list[_StagedCase] = []
        for case in cases:
            with self.part(f"time {case.name}"):
                prepared = self.prepare_timed(case, keep_earlier=bool(group))
            held = sum(staged.megabytes for staged in group)
            if group and held + prepared.megabytes > self.job.turn_staged_mb:
                timings += self.take_turn(group)
                group = []
            with self.part(f"time {case.name}"):
                self.stage(prepared)
            group.append(prepared)
        if group:
            timings += self.take_turn(group)
        return timings

    def prepare_timed(self, case: TaskCase, keep_earlier: bool) -> _StagedCase:
        """The reference's inputs for the case's timed calls (the bases of their fresh values); `keep_earlier`:
        the reference keeps this job's earlier stagings and shared outputs (a turn not taken yet, spot checks not
        judged yet)."""
        weight_seed = draw_seed()
        sets = [{"name": f"timed-{case.name}-{k}", "seed": draw_seed(), "expected": False}
                for k in range(self.job.input_sets)]  # fmt: skip
        prepared = self.ask_reference(Prepare(**self._task_fields(), case=case.name, overrides=case.overrides,
                                              weight_seed=weight_seed, sets=sets, out_dir=str(self.reference_dir),
                                              share=self.job.shared_outputs, keep_earlier=keep_earlier))  # fmt: skip
        files = [prepared["sets"][entry["name"]] for entry in sets]
        paths = [Path(prepared["init"]), *(Path(entry["inputs"]) for entry in files)]
        return _StagedCase(
            case=case, weight_seed=weight_seed, timing_seed=draw_seed(), init_path=str(prepared["init"]), files=files,
            # A function that changes its arguments (an optimiser step) is timed on fresh copies of them, on both
            # sides, so that its timed results are still the ones expected (`kernelvault.toolchain.function_tasks`).
            fresh=bool(prepared.get("mutates_arguments")),
            megabytes=sum(path.stat().st_size for path in paths if path.is_file()) / 1e6,
        )  # fmt: skip

    def stage(self, staged: _StagedCase) -> None:
        """Both sides build, load the case's timed inputs onto the device and (the candidate) run once observed,
        while the device is shared: a turn alone is the timed calls and nothing else."""
        case = staged.case
        init = self.hand_over(staged.init_path)
        inputs = [self.hand_over(str(entry["inputs"])) for entry in staged.files]
        self.ask_candidate(StageTime(init, staged.weight_seed, inputs, staged.fresh, case=case.name))
        self.ask_reference(StageReference(
            **self._task_fields(), case=case.name, overrides=case.overrides, weight_seed=staged.weight_seed,
            init_path=staged.init_path, inputs_paths=[str(entry["inputs"]) for entry in staged.files],
            fresh_arguments=staged.fresh))  # fmt: skip

    def take_turn(self, group: list[_StagedCase]) -> list[dict[str, Any]]:
        """The staged cases' timed calls in one turn alone on the device (candidate, then reference, per case; with
        fresh inputs every timed call's checksums compared as each case's replies come), then their spot checks:
        two of the outputs the workers kept, drawn here once both replied and judged in full (on the parent's
        side, once the device is given back to the other lanes). A case whose reference figure is reused
        (`job.reference_reuse`) times only the candidate in the turn; its reference runs the same values untimed
        after it, and the checksums are compared then."""
        answers = []
        for staged in group:  # the lane's turn alone on the device starts at the first timed request
            case = staged.case
            with self.part(f"time {case.name}"):
                plan = self.case_plan(case, staged.weight_seed)
                timed = self.ask_candidate(Time(plan.repetitions, self.job.warmup, staged.timing_seed, plan.calls,
                                                case=case.name, inputs=self.job.timing_inputs))  # fmt: skip
                calls, kept = _timed_run(timed, plan.calls, plan.repetitions)
                answer = _TimedCase(staged, timed, calls, kept, plan, self.reference_key(case, calls, plan))
                policy = self.job.reference_reuse
                if answer.key is not None and policy is not None:
                    answer.reused = REFERENCE_TIMES.reuse(answer.key, policy)
                if answer.reused is None:
                    # The reference is timed right after the candidate, in the same turn of the device: the same
                    # values, the same calls per sample (one, where the candidate's outputs shared memory), the
                    # same kept samples.
                    answer.reference = self.ask_reference(self.time_reference(answer, timed=True))
                    answer.checked = self.judge_timed(answer)
            answers.append(answer)
        if self.hold is not None:
            self.costs.gate_seconds += self.hold.timing_done()
        timings = []
        for answer in answers:
            staged = answer.staged
            with self.part(f"time {staged.case.name}"):
                # a reused figure: the reference's results, untimed, with the device shared
                if answer.reference is None:
                    answer.reference = self.ask_reference(self.time_reference(answer, timed=False))
                    answer.checked = self.judge_timed(answer)
                self.spot_check(staged, answer.kept, answer.calls)
            reference_ms, reference_spread = (
                (answer.reused.median_ms, answer.reused.spread) if answer.reused is not None
                else (float(answer.reference["median_ms"]), float(answer.reference["spread"]))
            )  # fmt: skip
            # a timing of the reference is kept once the whole job has passed (`run_check`)
            if answer.reused is None and answer.key is not None:
                self.reference_figures.append((answer.key, reference_ms, reference_spread))
            timings.append({"case": staged.case.name, "candidate_ms": float(answer.timed["median_ms"]),
                            "reference_ms": reference_ms, "candidate_spread": float(answer.timed["spread"]),
                            "reference_spread": reference_spread, "repetitions": int(answer.timed["repetitions"]),
                            "calls_per_sample": answer.calls, "inputs": self.job.timing_inputs,
                            "checked_calls": answer.checked, "own_kernel_ms": _own_kernel_ms(answer.timed),
                            "reference_timing": "reused" if answer.reused is not None else "timed",
                            "timing_profile": answer.plan.profile})  # fmt: skip
        return timings

    def time_reference(self, answer: _TimedCase, timed: bool) -> TimeReference:
        """The reference's run of the values the candidate's timed calls ran (`timed` False: without the clock)."""
        staged, case = answer.staged, answer.staged.case
        return TimeReference(
            **self._task_fields(), case=case.name, overrides=case.overrides, weight_seed=staged.weight_seed,
            repetitions=answer.plan.repetitions, warmup=self.job.warmup, timing_seed=staged.timing_seed,
            keep=answer.kept, calls_per_sample=answer.calls, inputs=self.job.timing_inputs,  # type: ignore[arg-type]
            atol=self.job.atol, rtol=self.job.rtol, timed=timed)  # fmt: skip

    def judge_timed(self, answer: _TimedCase) -> int:
        """The timed run against the reference's run of the same values: every call's checksums first (a cached
        result is named as one), then whether right results were still the work the watched sample did, launched
        the same way and not much faster than its device work (`own_work`). How many calls were compared."""
        assert answer.reference is not None
        timed = answer.timed
        checked = self.compare_timed(timed, answer.reference) if self.job.timing_inputs == "fresh" else 0
        unwatched = launch_shortfall(*_launches(timed)) or speed_shortfall(float(timed["median_ms"]),
                                                                           _own_kernel_ms(timed))  # fmt: skip
        if unwatched is not None:
            fail("integrity_reject", unwatched)
        return checked

    def reference_key(self, case: TaskCase, calls: int, plan: CasePlan) -> ReferenceKey | None:
        """What a reused reference figure of this case must match (`toolchain.reference_times`); None where
        figures are not reused: no policy, or a protocol without checksums (the reference's run is what
        checks the candidate's timed results)."""
        if self.job.reference_reuse is None or self.job.timing_inputs != "fresh":
            return None
        env = self.reference.env
        device = env.get("CUDA_VISIBLE_DEVICES") or env.get("HIP_VISIBLE_DEVICES")
        return ReferenceKey(
            self.job.task_id, case.name, f"{self.job.setup.platform}:{device or 'default'}", toolchain_versions(),
            (plan.repetitions, self.job.warmup, calls, self.job.input_sets, self.job.sample_ms,
             self.job.timing_inputs),
        )  # fmt: skip

    def compare_timed(self, timed: dict[str, Any], reference: dict[str, Any]) -> int:
        """Every timed call's checksums against the reference's (`timed_values.compare_checksums`); how many calls
        were compared. A difference is a cached (or otherwise wrong) result of that call."""
        started = time.monotonic()
        problem, checked = compare_checksums(timed.get("checksums"), reference.get("checksums"))
        self.costs.answer_seconds += time.monotonic() - started
        if problem is not None:
            fail("integrity_reject", f"cached_results: {problem}")
        if checked == 0:
            fail("infrastructure_error", "the timed run checked no call: the reference sent no checksums")
        return checked

    def spot_check(self, staged: _StagedCase, kept: list[int], calls: int) -> None:
        """Two of the kept samples' outputs (drawn now, after both runs) judged in full against the reference's."""
        case = staged.case
        drawn = secrets.SystemRandom().sample(kept, min(SPOT_CHECKS, len(kept)))
        outputs = {str(sample): str(self.outputs(f"timed-{case.name}-{sample}")) for sample in drawn}
        expected = {str(sample): str(self.reference_dir / f"timed-{case.name}-{sample}.expected.st")
                    for sample in drawn}  # fmt: skip
        share = self.job.shared_outputs
        self.ask_candidate(WriteKept(case.name, outputs, share))
        self.ask_reference(WriteKeptReference(**self._task_fields(), case=case.name, overrides=case.overrides,
                                              weight_seed=staged.weight_seed, outputs=expected, share=share))  # fmt: skip
        for sample in drawn:
            check = self.judge(expected[str(sample)], Path(outputs[str(sample)]))
            if check.failure_kind is not None:
                fail("integrity_reject",
                     f"cached_results: timed call {sample}/{calls - 1} returned a wrong result ({check.message})")  # fmt: skip

    def case_plan(self, case: TaskCase, weight_seed: int) -> CasePlan:
        """The case's calls per timed sample (`timing.calls_for`) and timed samples (`timing_profile`): from a pilot
        of the reference the first time a task's case is timed in this process, then the same for every candidate
        and baseline of it, so that their times share one regime (a GRPO group's speeds, an optimisation task's
        speedup over its baseline). No pilot where neither is chosen by it (`job.sample_ms` 0 and the full
        profile): one call per sample, the job's repetitions."""
        profile = self.job.timing_profile
        if self.job.sample_ms <= 0 and profile == "full":
            return CasePlan(1, self.job.repetitions, profile)
        key = (self.job.task_id, case.name, self.job.sample_ms, profile, self.job.repetitions)
        if key not in _CASE_PLANS:
            pilot = self.ask_reference(PilotReference(
                **self._task_fields(), case=case.name, overrides=case.overrides, weight_seed=weight_seed,
                warmup=self.job.warmup))  # fmt: skip
            median, spread = float(pilot["median_ms"]), float(pilot.get("spread", math.inf))
            calls = calls_for(median, self.job.sample_ms) if self.job.sample_ms > 0 else 1
            short = profile == "rl" and spread <= RL_PILOT_SPREAD
            repetitions = min(self.job.repetitions, RL_REPETITIONS) if short else self.job.repetitions
            # another lane may have piloted it while this one waited for its turn: the first choice stays
            _CASE_PLANS.setdefault(key, CasePlan(calls, repetitions, "rl" if short else "full"))
        return _CASE_PLANS[key]


@dataclass(frozen=True)
class CasePlan:
    """How a performance case is timed, the same for every candidate of its task in this process."""

    calls: int  # calls per timed sample
    repetitions: int  # timed samples
    profile: str  # "full", or "rl": fewer samples, where the pilot's spread allows (`RL_PILOT_SPREAD`)


# The RL timing profile (`VerifyConfig.timing_profile`): a median of n samples of relative spread s (p75 - p25 over
# the median) is uncertain by about 0.93 s / sqrt(n) (the median's standard error, 1.25 sigma / sqrt(n), with
# sigma about s / 1.35 for a normal spread); a speedup is a ratio of two such medians. At n = 30 and s <= 0.05 that
# is at most 0.85% a side, 1.2% for the ratio: inside the 3% the reward's speed term must stay faithful to. A case
# whose pilot (one-call samples of the reference, noisier than a timed sample of several calls) spreads wider keeps
# the full count.
RL_REPETITIONS = 30
RL_PILOT_SPREAD = 0.05
# Case plans by (task id, case, sample_ms, profile, repetitions), for this parent process's lifetime: every lane of a
# pool times a task's case the same way.
_CASE_PLANS: dict[tuple[str, str, float, str, int], CasePlan] = {}
SPOT_CHECKS = 2  # kept timed outputs judged in full per performance case


def _timed_run(timed: dict[str, Any], asked: int, repetitions: int) -> tuple[int, list[int]]:
    """The calls per sample the candidate's worker timed with (`asked`, or one where its outputs shared memory)
    and the samples it kept, read from its reply as untrusted data."""
    calls, kept = timed.get("calls_per_sample"), timed.get("kept")
    if calls not in (asked, 1) or not isinstance(kept, list) or not 0 < len(kept) <= KEPT_SAMPLES:
        fail("integrity_reject", "cached_results: the timed run's report does not say what it ran and kept")
    samples = sorted({sample for sample in kept if type(sample) is int and 0 <= sample < repetitions})
    if len(samples) != len(kept):
        fail("integrity_reject", "cached_results: the timed run kept samples it did not run")
    return int(calls), samples


def _own_kernel_ms(timed: dict[str, Any]) -> float | None:
    """The device time per call of the timed run's watched first sample (`own_work`), read from
    its reply as untrusted data: a number that is not one is a report that does not say what it ran."""
    value = timed.get("own_kernel_ms")
    if value is None:
        return None
    if type(value) not in (int, float) or not math.isfinite(value) or value < 0:
        fail(
            "integrity_reject", f"unwatched_speed: the timed run reports its watched device work as {value!r}"
        )
    return float(value)


def _launches(timed: dict[str, Any]) -> tuple[int, int, int, int]:
    """(timed calls, their launches, the watched sample's calls, their launches) from the candidate's reply, as
    untrusted data."""
    keys = ("timed_calls", "timed_launches", "watched_calls", "watched_launches")
    figures = tuple(timed.get(key) for key in keys)
    if not all(type(value) is int and value >= 0 for value in figures):
        fail("integrity_reject", "unwatched_launches: the timed run's report does not say what it launched")
    return figures  # type: ignore[return-value]


@dataclass
class _StagedCase:
    """A performance case prepared by the reference (and staged on both sides) for its turn's timed calls."""

    case: TaskCase
    weight_seed: int
    timing_seed: int  # every timed call's fresh values, on both sides (`timed_values`)
    init_path: str
    files: list[dict[str, Any]]  # per input set: its inputs file
    fresh: bool
    megabytes: float


@dataclass
class _TimedCase:
    """A staged case once its candidate was timed: what the rest of its turn, and the judging after it, need."""

    staged: _StagedCase
    timed: dict[str, Any]  # the candidate's timed run's reply (untrusted data)
    calls: int
    kept: list[int]
    plan: CasePlan
    key: ReferenceKey | None
    reused: ReferenceFigure | None = None  # the reference figure compared with, instead of a timing
    reference: dict[str, Any] | None = None  # the reference's run of the same values
    checked: int = 0


class _Part:
    """`with check.part(name)`: the seconds inside, less the lane's waits at the gate, into `case_seconds`."""

    def __init__(self, check: _Check, name: str) -> None:
        self.check, self.name = check, name

    def __enter__(self) -> None:
        self.started, self.waited = time.monotonic(), self.check.costs.gate_seconds

    def __exit__(self, *_: object) -> None:
        spent = time.monotonic() - self.started - (self.check.costs.gate_seconds - self.waited)
        self.check.costs.add_case(self.name, spent)


def run_check(job: CheckJob, module_name: str, reference: PersistentWorker, candidate: PersistentWorker,
              hold: GateHold | None, timeout_s: float) -> tuple[SandboxResult | None, dict[str, Any] | None]:  # fmt: skip
    """Check (and where `job.timed`, time) one candidate with a lane's two workers; `module_name`: the
    candidate's module there (unique per job: a persistent worker imports many).

    Returns (how the candidate's worker ended when it did not answer, the result): a result dict with
    failure_kind, failure_message, checks, timings, kernels, compile_seconds and protocol_costs; or
    (run, None) when the candidate's worker died or ran past `timeout_s` (its own requests' time: not the
    reference's, not the parent's comparing, not the waits at the device's gate).
    """
    state = _Check(job, reference, candidate, hold, timeout_s)
    number = candidate.next_job_number()
    state.reference_dir = reference.job_folder(number)
    state.candidate_dir = candidate.job_folder(number)
    state.inbox = candidate.inbox()
    (state.candidate_dir / "out").mkdir(exist_ok=True)
    shutil.copyfile(job.task_path, state.reference_dir / "task.py")
    shutil.copyfile(job.candidate_path, state.candidate_dir / "candidate.py")
    launches = (
        state.candidate_dir / "launches.jsonl"
    )  # the candidate's worker writes it (its folder, its uid)
    result: dict[str, Any] = {"failure_kind": None, "failure_message": None, "checks": state.checks,
                              "timings": [], "kernels": []}  # fmt: skip
    hip = job.hip
    load = Load(
        platform=job.setup.platform, candidate_path=str(state.candidate_dir / "candidate.py"),
        launches_path=str(launches), job_dir=str(state.candidate_dir), module_name=module_name,
        triton_cache=str(candidate.private_cache()), inline_build_root=str(candidate.private_cache() / "inline"),
        allow_tf32=job.allow_tf32, entry=job.entry, entries=list(job.entries), kernel_entries=job.kernel_entries,
        test_imports=list(job.test_imports), allowed_ops=list(job.allowed_ops),
        language="hip" if hip else "triton", hip_form=hip.form if hip else None,
        hip_library=hip.library if hip else None, hip_source_sha=hip.source_sha if hip else None,
    )  # fmt: skip
    died: SandboxResult | None = None
    try:
        try:
            state.ask_candidate(load)
            for index, case, trial in state.plan():
                with state.part(f"check {case.name}"):
                    state.check_case(index, case, trial)
            if job.timed:
                result["timings"] = state.time_cases(job.performance_cases)
        except CheckStopped as stopped:
            if stopped.result is None:
                died = stopped.run
            else:
                result |= {"failure_kind": stopped.result.get("failure_kind"),
                           "failure_message": stopped.result.get("failure_message")}  # fmt: skip
        if died is None:
            ending = time.monotonic()
            ended = candidate.request(End(), 60.0)
            state.costs.add_request("candidate.end", time.monotonic() - ending)
            if ended is None:
                died = candidate.last_run
            else:
                result["kernels"] = list(ended.get("kernels") or [])
                # a load_inline extension is built when the candidate asks for it (at import, in
                # __init__ or in forward): its build belongs to the compile stage with the first forward
                built = float(ended.get("build_seconds") or 0.0)
                if built:
                    state.compile_seconds = (state.compile_seconds or 0.0) + built
                state.costs.device_record = str(ended.get("device_record") or "")
                late = ended.get("late_violation")
                if late and result["failure_kind"] not in ("integrity_reject", "infrastructure_error"):
                    result |= {
                        "failure_kind": "integrity_reject",
                        "failure_message": late,
                    }  # the cause beats its symptom
                if result["failure_kind"] == "integrity_reject":
                    candidate.retire("integrity_reject")  # judged here: the worker could not know
        # the verifier reads which kernels ran (the cross-compile stage, and whether anything compiled at all)
        Path(job.launches_path).write_bytes(launches.read_bytes() if launches.is_file() else b"")
    finally:
        for worker in (candidate, reference):
            worker.drop_bundles()  # what the job sent and nobody opened: closed, not left for the next job
        candidate.finish_job(number)
        reference.finish_job(number)
    result["compile_seconds"] = state.compile_seconds
    result["protocol_costs"] = state.costs
    if died is not None:
        return died, None
    # A rejected or failed job's reference timing is never reused: whatever the candidate did may have disturbed it.
    if result["failure_kind"] is None and job.reference_reuse is not None:
        for key, median_ms, spread in state.reference_figures:
            REFERENCE_TIMES.record(key, median_ms, spread, job.reference_reuse)
    return None, result

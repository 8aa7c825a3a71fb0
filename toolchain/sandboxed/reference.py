"""The reference's side of a check: the task's inputs and expected outputs, and the reference's timing.

Runs inside its own jailed worker process (`kernelvault.toolchain.worker_lane`, kind `reference`), never beside a
candidate. The parent (`kernelvault.toolchain.judge`) asks it, one request at a time:

    prepare  for one case: the init inputs, and for each input set the parent names (with the seed the
             parent drew for it) the inputs and, where asked, the reference's output on them. All go to
             files in the job's folder: the parent hands the inputs to the candidate's worker and keeps the
             expected outputs for itself.
    time     the reference timed on input sets it prepared, the same way the candidate is timed (the same
             fresh values, the samples the candidate's worker kept), with every timed output's checksum
    write_kept  write kept outputs the parent drew: the expected outputs of its full checks of timed calls

The task module is user input too (a folder of task files, a Hub dataset), so this process is jailed like
a candidate's; but it is not watched: nothing it computes is credited to anyone.
"""

from __future__ import annotations

import hashlib
import secrets
from collections.abc import Callable
from pathlib import Path
from types import ModuleType
from typing import Any

import torch
import torch.utils._pytree as pytree

from kernelvault.toolchain.error_text import one_line_error
from kernelvault.toolchain.function_tasks import (
    NOTHING_TO_JUDGE,
    PERFORMANCE_INPUTS_OVERRIDE,
    FunctionLayout,
    argument_leaves,
    clone_value,
    function_layout,
    nothing_to_judge,
    record_calls,
    record_performance_calls,
    resolve_entry,
    same_values,
)
from kernelvault.toolchain.kernel_tasks import record_launches, untimed_autotuning
from kernelvault.toolchain.sandboxed.bundles import BundleSender
from kernelvault.toolchain.sandboxed.candidate import StagedTiming, sync_device
from kernelvault.toolchain.sandboxed.requests import (
    PilotReference,
    Prepare,
    ReferenceRequest,
    StageReference,
    TimeReference,
    WriteKeptReference,
)
from kernelvault.toolchain.sandboxed.source_text import load_module
from kernelvault.toolchain.sandboxed.tensor_files import (
    decode_value,
    encode_value,
    read_tensors,
    write_tensors,
)
from kernelvault.toolchain.sandboxed.timed_values import Tolerance
from kernelvault.toolchain.sandboxed.timing import (
    PILOT_SAMPLES,
    harness_replaced,
    prepare_device,
    run_staged_untimed,
    time_staged,
)
from kernelvault.toolchain.task_calls import function_module


def to_device(value: Any, device: torch.device) -> Any:
    if isinstance(value, torch.Tensor):
        return value.to(device)
    if isinstance(value, (list, tuple)):
        return type(value)(to_device(item, device) for item in value)
    return value


class TaskHarness:
    """Builds a task's reference and inputs for one case and one seed."""

    def __init__(self, task_module: ModuleType, device: torch.device) -> None:
        self.task = task_module
        self.device = device
        self.defaults = {
            name: getattr(task_module, name) for name in dir(task_module) if not name.startswith("__")
        }

    def apply(self, overrides: dict[str, Any]) -> None:
        for name, value in self.defaults.items():
            setattr(self.task, name, value)
        for name, value in overrides.items():
            setattr(self.task, name, value)

    def init_inputs(self) -> list[Any]:
        return list(self.task.get_init_inputs())

    def build(self, cls: type, init_inputs: list[Any], seed: int) -> torch.nn.Module:
        torch.random.manual_seed(seed)
        return cls(*init_inputs).to(self.device).eval()

    def reference(self, init_inputs: list[Any], seed: int) -> torch.nn.Module:
        return self.build(self.task.Model, init_inputs, seed)

    def inputs(self, seed: int) -> list[Any]:
        """The task's inputs for `seed`, drawn on the device itself where the task allows it.

        A performance case's `torch.randn` on the host is slow (the worker has one CPU thread, and 32 M
        floats take 0.3-0.6 s). Under `torch.device` the task's factory calls draw on the device instead
        (`manual_seed` seeds it too, so a seed still gives the same inputs). A `get_inputs` that needs host
        tensors (a NumPy round trip) is drawn on the host.
        """
        if self.device.type != "cpu":
            torch.random.manual_seed(seed)
            try:
                with torch.device(self.device):
                    drawn = list(self.task.get_inputs())
                return [to_device(item, self.device) for item in drawn]
            except Exception:  # noqa: BLE001 - drawn on the host below; a task that fails there fails loudly
                pass
        torch.random.manual_seed(seed)
        return [to_device(item, self.device) for item in self.task.get_inputs()]


class FunctionHarness:
    """A function task's reference (`kernelvault.toolchain.function_tasks`): no init inputs, and each input set is the
    list of calls its test makes under the set's seed."""

    def __init__(self, module: ModuleType, layout: FunctionLayout, device: torch.device) -> None:
        self.task = module
        self.layout = layout
        self.device = device
        self.performance_inputs = False  # the case's inputs: the test's calls, or the perf program's
        self.which = "correctness"  # a kernel task's tests to record (`kernelvault.toolchain.kernel_tasks`)

    def apply(self, overrides: dict[str, Any]) -> None:
        # A kernel task's case names which of its tests it records (`kernelvault.toolchain.kernel_tasks`); a function
        # task's, whether its inputs are the test's calls or its perf program's.
        known = {"tests"} if self.layout.kernels else {PERFORMANCE_INPUTS_OVERRIDE}
        unknown = sorted(set(overrides) - known)
        if unknown:
            raise ValueError(f"a function task has no size globals to override: {unknown}")
        self.which = str(overrides.get("tests", "correctness")) if self.layout.kernels else "correctness"
        self.performance_inputs = overrides.get(PERFORMANCE_INPUTS_OVERRIDE) == "performance"

    def init_inputs(self) -> list[Any]:
        return []

    def reference(self, init_inputs: list[Any], seed: int) -> torch.nn.Module:
        functions = {name: resolve_entry(self.task, name) for name in self.layout.entries}
        return function_module(functions, self.device).to(self.device).eval()

    def inputs(self, seed: int) -> list[Any]:
        if self.performance_inputs:
            return record_performance_calls(self.layout, vars(self.task), seed, self.device)
        record = record_launches if self.layout.kernels else record_calls  # pytest tests, or a test's calls
        return as_sent(record(self.layout, vars(self.task), seed, self.device, self.which), self.device)


def as_sent(calls: list[Any], device: torch.device) -> list[Any]:
    """The calls as the candidate's worker receives them: where an argument is an `nn.Module`, the reference is
    run on its `ModuleArgument` (`tensor_files`) too, so both sides compute from the same data."""
    if not any(isinstance(leaf, torch.nn.Module) for leaf in pytree.tree_leaves(calls)):
        return calls
    return decode_value(*encode_value(calls, arguments=True), device, arguments=True)


class ReferenceHost:
    """Answers the parent's requests about tasks (`handle`); keeps the last few task modules loaded."""

    def __init__(self, max_tasks: int = 8, bundles: BundleSender | None = None) -> None:
        self.bundles = bundles  # expected outputs as shared memory, when a request asks (`Prepare.share`)
        self.harnesses: dict[str, TaskHarness] = {}
        self.max_tasks = max_tasks
        # the performance cases `StageReference` readied for `TimeReference`, by case
        self.staged: dict[str, StagedTiming] = {}
        self.kept: dict[str, dict[int, Any]] = {}  # per case, the timed outputs `TimeReference` kept

    def handle(self, request: ReferenceRequest) -> dict[str, Any]:
        device = torch.device("cuda" if request.platform in ("cuda", "rocm") else "cpu")
        allow_tf32 = request.allow_tf32
        torch.backends.cuda.matmul.allow_tf32 = allow_tf32
        torch.backends.cudnn.allow_tf32 = allow_tf32
        torch.set_grad_enabled(False)
        prepare_device(device)  # the timing's flush buffer: made before any task module is imported here
        harness = self.harness(Path(request.task_path), device, request.entry)
        if isinstance(harness, dict):
            return harness
        case = request.case
        try:
            harness.apply(request.overrides)
            if isinstance(request, Prepare):
                return self._prepare(harness, request, device)
            if isinstance(request, StageReference):
                return self._stage_time(harness, request, device)
            if isinstance(request, PilotReference):
                return self._pilot(request, device)
            if isinstance(request, TimeReference):
                return self._time(request, device)
            if isinstance(request, WriteKeptReference):
                return self._write_kept(request, device)
        except Exception as error:  # noqa: BLE001 - the task's failure: an infrastructure error, never a verdict
            return {"failure_kind": "infrastructure_error",
                    "failure_message": f"reference failed on case {case}: {one_line_error(error)}"}  # fmt: skip
        return {
            "failure_kind": "infrastructure_error",
            "failure_message": f"unknown request {request!r}"[:200],
        }

    def harness(self, task_path: Path, device: torch.device,
                 entry: str | None) -> TaskHarness | FunctionHarness | dict[str, Any]:  # fmt: skip
        try:
            source = task_path.read_bytes()
        except OSError as error:
            return {
                "failure_kind": "infrastructure_error",
                "failure_message": f"task file unreadable: {error}",
            }
        key = hashlib.sha256(source + str(device).encode() + str(entry).encode()).hexdigest()
        if key not in self.harnesses:
            try:
                if entry:  # the reference part only: the test runs when inputs are recorded
                    layout = function_layout(source.decode(), entry)
                    reference_path = task_path.with_name("reference.py")
                    reference_path.write_text(layout.reference)
                    if device.type == "cpu":  # a gold Triton kernel runs under the interpreter there
                        untimed_autotuning()
                    module = load_module(reference_path, f"kv_task_{key[:16]}")
                    harness: TaskHarness | FunctionHarness = FunctionHarness(module, layout, device)
                else:
                    harness = TaskHarness(load_module(task_path, f"kv_task_{key[:16]}"), device)
            except Exception as error:  # noqa: BLE001
                return {
                    "failure_kind": "infrastructure_error",
                    "failure_message": f"task failed to load: {one_line_error(error)}",
                }
            self.harnesses[key] = harness
            while len(self.harnesses) > self.max_tasks:
                self.harnesses.pop(next(iter(self.harnesses)))
        return self.harnesses[key]

    def _prepare(self, harness: TaskHarness, request: Prepare, device: torch.device) -> dict[str, Any]:
        if not request.keep_earlier:
            self.staged.clear()  # a staging whose timing never came (the candidate failed first) is freed here
            self.kept.clear()  # and timed outputs whose spot checks were judged (or never asked for)
            if self.bundles is not None:
                self.bundles.release()  # the earlier cases' expected outputs: judged (mapped by the parent) by now
        if request.share and self.bundles is None:
            return {"failure_kind": "infrastructure_error",
                    "failure_message": "shared outputs asked of a worker without a bundle channel"}  # fmt: skip
        folder = Path(request.out_dir)
        init = harness.init_inputs()
        write_tensors(folder / "init.st", init)
        reference = harness.reference(init, request.weight_seed)
        written: dict[str, dict[str, str | None]] = {}
        mutates = False  # a function task whose calls change their arguments (judged by them)
        for entry in request.sets:
            name = str(entry["name"])
            inputs = harness.inputs(int(entry["seed"]))
            inputs_path = folder / f"{name}.inputs.st"
            write_tensors(inputs_path, inputs, arguments=True)
            expected_path = None
            if entry.get("expected", True):
                expected_path = folder / f"{name}.expected.st"
                expected = reference(*clone_value(inputs))
                sync_device(device)
                if isinstance(harness, FunctionHarness) and not same_values(
                    expected, reference(*clone_value(inputs))
                ):
                    # a test's calls are small: run twice, so dropout or sampling is named, not judged
                    return {"failure_kind": "infrastructure_error",
                            "failure_message": "task: the reference is not deterministic (two runs on the same "
                                               "calls differ: dropout, sampling, inputs the entry draws itself, "
                                               "or atomics); no candidate can be judged "
                                               "against it"}  # fmt: skip
                if isinstance(harness, FunctionHarness):
                    if not harness.layout.kernels and nothing_to_judge(expected):
                        return {
                            "failure_kind": "infrastructure_error",
                            "failure_message": f"task: {NOTHING_TO_JUDGE}",
                        }
                    mutates = mutates or not same_values(
                        [result[1] for result in expected], [argument_leaves(call[1:3]) for call in inputs]
                    )
                if request.share and self.bundles is not None:
                    self.bundles.send(str(expected_path), expected, device)
                else:
                    write_tensors(expected_path, expected)
            written[name] = {
                "inputs": str(inputs_path),
                "expected": str(expected_path) if expected_path else None,
            }
            del inputs
        return {"ok": True, "init": str(folder / "init.st"), "sets": written, "mutates_arguments": mutates}

    def _stage_time(
        self, harness: TaskHarness, request: StageReference, device: torch.device
    ) -> dict[str, Any]:
        self.staged.pop(request.case, None)
        init = read_tensors(Path(request.init_path))
        reference = harness.reference(list(init), request.weight_seed)
        input_sets = [list(read_tensors(Path(path), device, arguments=True)) for path in request.inputs_paths]
        sync_device(device)
        self.staged[request.case] = StagedTiming(reference, input_sets, request.fresh_arguments)
        return {"ok": True}

    def _time(self, request: TimeReference, device: torch.device) -> dict[str, Any]:
        staged = self.staged.pop(request.case, None)  # one timing per staging: the inputs are freed after it
        if staged is None:
            return {"failure_kind": "infrastructure_error", "failure_message": "time before stage_time"}
        if not request.timed and request.inputs == "fresh":
            stats = run_staged_untimed(_runner(staged), staged.input_sets, repetitions=request.repetitions,
                                       device=device, calls_per_sample=request.calls_per_sample,
                                       timing_seed=request.timing_seed, keep=request.keep,
                                       tolerance=Tolerance(request.atol, request.rtol))  # fmt: skip
        else:
            stats = time_staged(_runner(staged), staged.input_sets, repetitions=request.repetitions,
                                warmup=request.warmup, device=device, calls_per_sample=request.calls_per_sample,
                                inputs=request.inputs, timing_seed=request.timing_seed, keep=request.keep,
                                tolerance=Tolerance(request.atol, request.rtol))  # fmt: skip
        replaced = harness_replaced()
        if replaced:  # a task module patched the timing: this process times nothing more (`serve` retires it)
            return {"failure_kind": "infrastructure_error", "retire": "harness_replaced",
                    "failure_message": f"the reference's timing harness was replaced ({', '.join(replaced[:5])})"}  # fmt: skip
        self.kept[request.case] = stats.outputs
        return stats.reply()

    def _pilot(self, request: PilotReference, device: torch.device) -> dict[str, Any]:
        """One-call samples of the staged reference, its staging kept for `TimeReference`; fresh values from a
        seed of its own (nothing of the pilot is compared)."""
        staged = self.staged.get(request.case)
        if staged is None:
            return {"failure_kind": "infrastructure_error", "failure_message": "pilot before stage_time"}
        stats = time_staged(_runner(staged), staged.input_sets, repetitions=PILOT_SAMPLES, warmup=request.warmup,
                            device=device, inputs=request.inputs, timing_seed=secrets.randbits(63))  # fmt: skip
        return {"ok": True, "median_ms": stats.median_ms, "spread": stats.spread}

    def _write_kept(self, request: WriteKeptReference, device: torch.device) -> dict[str, Any]:
        """The kept outputs the parent drew (the expected outputs of its full checks), then dropped."""
        if request.share and self.bundles is None:
            return {"failure_kind": "infrastructure_error",
                    "failure_message": "shared outputs asked of a worker without a bundle channel"}  # fmt: skip
        kept = self.kept.pop(request.case, {})
        for sample, path in request.outputs.items():
            if int(sample) not in kept:
                return {"failure_kind": "infrastructure_error",
                        "failure_message": f"write_kept: sample {sample} of case {request.case} was not kept"}  # fmt: skip
            if request.share and self.bundles is not None:
                self.bundles.send(path, kept[int(sample)], device)
            else:
                write_tensors(Path(path), kept[int(sample)])
        return {"ok": True}


def _runner(staged: StagedTiming) -> Callable[[Any], Any]:
    """One timed call of the staged reference (on fresh copies of arguments it changes, as the candidate's)."""
    reference, fresh = staged.model, staged.fresh_arguments

    def run_reference(inputs: Any) -> Any:
        return reference(*clone_value(inputs)) if fresh else reference(*inputs)

    return run_reference

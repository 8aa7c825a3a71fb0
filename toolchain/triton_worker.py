"""The check logic of a worker process: load a task and a candidate (Triton or HIP), check it, time it on a GPU.

Runs inside `toolchain.device_worker` (a sandboxed process: one job, or many in a persistent worker);
never imported by the pipeline itself. The job names the task and candidate files, the platform and the
cases; every kernel launch seen is appended to `launches.jsonl` as it happens, so the parent still knows
which kernels ran when the candidate crashes or hangs the process.

On `cpu` the environment has TRITON_INTERPRET=1: kernels run in NumPy on CPU tensors, which proves
correctness but not compilation (the parent cross-compiles the recorded launches afterwards in a
second process). On `cuda`/`rocm` kernels are JIT-compiled for the device and timed.

Ordering matters for trust: the reference outputs are computed, and sealed with the parent (which
judges every comparison, `toolchain.judge`), before the candidate module is imported.
"""

from __future__ import annotations

import contextlib
import hashlib
import importlib.util
import inspect
import json
import math
import os
import sys
import tempfile
import time
import warnings
from collections.abc import Iterator
from pathlib import Path
from types import ModuleType
from typing import Any

import torch

from toolchain.compare import compare_outputs
from toolchain.integrity import PatchSnapshot, ProcessGuards, TorchComputeMonitor, Violations, patch_targets
from toolchain.judge import ParentChannel, reference_key, scrub
from toolchain.timing import time_on_device

_LAUNCH_OPTIONS = {"num_warps", "num_stages", "num_ctas", "maxnreg", "waves_per_eu", "matrix_instr_nonkdim"}


class CandidateFailure(Exception):
    """A failure attributed to the candidate, with its stable failure kind."""

    def __init__(self, kind: str, message: str) -> None:
        super().__init__(message)
        self.kind = kind
        self.message = message


class LaunchRecorder:
    """Wraps Triton's launch entry point to count launches and log each distinct signature to a file."""

    def __init__(self, path: Path, monitor: TorchComputeMonitor, violations: Violations) -> None:
        self.path = path
        self.monitor = monitor
        self.violations = violations
        self.count = 0
        self.enabled = True  # off while timing: recording costs host time between launches
        self.kernels: list[str] = []
        self._seen: set[str] = set()

    def install(self, interpreted: bool) -> None:
        if interpreted:
            from triton.runtime.interpreter import InterpretedFunction as launcher
        else:
            from triton.runtime.jit import JITFunction as launcher
        original = launcher.run
        recorder = self
        self._replaced = (launcher, original)

        def recording_run(kernel: Any, *args: Any, **kwargs: Any) -> Any:
            # run(self, *args, grid, warmup, **kwargs) in Triton 3.x; grid and warmup pass through untouched.
            if not kwargs.get("warmup") and recorder.enabled:
                launch_kwargs = {key: value for key, value in kwargs.items() if key not in ("grid", "warmup")}
                recorder.record(kernel.fn, args, launch_kwargs)
            recorder.monitor.in_launch += 1  # the launch's own data movement is not the candidate's compute
            try:
                return original(kernel, *args, **kwargs)
            finally:
                recorder.monitor.in_launch -= 1

        launcher.run = recording_run  # type: ignore[method-assign]

    def uninstall(self) -> None:
        replaced = getattr(self, "_replaced", None)
        if replaced is not None:
            replaced[0].run = replaced[1]
            self._replaced = None

    def record_native(self, name: str) -> None:
        """A HIP launch function is about to run (called by kernelvault.hip / the load_inline proxy)."""
        if not self.enabled:
            return
        self.count += 1
        if torch.cuda.is_available() and torch.cuda.current_stream() != torch.cuda.default_stream():
            self.violations.add(
                "side_stream", f"{name} was launched on a side stream, outside the timed stream"
            )
        if name not in self.kernels:
            self.kernels.append(name)
            with self.path.open("a") as handle:
                handle.write(json.dumps({"kernel": name, "language": "hip"}) + "\n")

    def record(self, fn: Any, args: tuple[Any, ...], kwargs: dict[str, Any]) -> None:
        import inspect

        self.count += 1
        name = getattr(fn, "__name__", "?")
        if torch.cuda.is_available() and torch.cuda.is_initialized():
            if torch.cuda.current_stream() != torch.cuda.default_stream():
                self.violations.add(
                    "side_stream", f"{name} was launched on a side stream, outside the timed stream"
                )
        if name not in self.kernels:
            self.kernels.append(name)
        options = {key: kwargs[key] for key in _LAUNCH_OPTIONS if key in kwargs}
        kernel_kwargs = {key: value for key, value in kwargs.items() if key not in _LAUNCH_OPTIONS}
        try:
            bound = inspect.signature(fn).bind(*args, **kernel_kwargs)
        except TypeError:
            return  # a launch with wrong arguments fails by itself; there is nothing to compile
        entry = {
            "kernel": name,
            "module": getattr(fn, "__module__", ""),
            "args": {key: describe_argument(value) for key, value in bound.arguments.items()},
            "options": options,
        }
        key = json.dumps(entry, sort_keys=True, default=str)
        if key not in self._seen:
            self._seen.add(key)
            with self.path.open("a") as handle:
                handle.write(key + "\n")


_TORCH_TO_TRITON = {
    torch.float32: "fp32", torch.float16: "fp16", torch.bfloat16: "bf16", torch.float64: "fp64",
    torch.int8: "i8", torch.int16: "i16", torch.int32: "i32", torch.int64: "i64", torch.uint8: "u8",
    torch.bool: "i1",
}  # fmt: skip


def describe_argument(value: Any) -> dict[str, Any]:
    """A JSON description of a kernel argument, enough to rebuild a compile signature."""
    if isinstance(value, torch.Tensor):
        return {"kind": "tensor", "dtype": _TORCH_TO_TRITON.get(value.dtype, str(value.dtype))}
    if isinstance(value, bool):
        return {"kind": "bool", "value": value}
    if isinstance(value, int):
        return {"kind": "int", "value": value}
    if isinstance(value, float):
        return {"kind": "float", "value": value if math.isfinite(value) else repr(value)}
    if value is None:
        return {"kind": "none"}
    inner = getattr(value, "value", None)  # tl.constexpr wrapper
    if isinstance(inner, (bool, int, float, str)):
        return describe_argument(inner)
    if value.__class__.__module__.startswith("triton") and hasattr(value, "name"):
        return {"kind": "tl_dtype", "value": str(value.name)}
    if isinstance(value, str):
        return {"kind": "str", "value": value}
    return {"kind": "other", "repr": repr(value)[:200]}


def load_module(path: Path, name: str) -> ModuleType:
    spec = importlib.util.spec_from_file_location(name, path)
    assert spec is not None and spec.loader is not None
    module = importlib.util.module_from_spec(spec)
    sys.modules[name] = module  # triton's interpreter and inspect need the module registered
    spec.loader.exec_module(module)
    return module


def is_triton_compile_error(error: BaseException) -> bool:
    """True when the exception (or one it wraps) comes from Triton's compiler or resource checks."""
    seen: set[int] = set()
    current: BaseException | None = error
    while current is not None and id(current) not in seen:
        seen.add(id(current))
        module = type(current).__module__
        if module.startswith("triton.compiler") or type(current).__name__ in {
            "CompilationError",
            "OutOfResources",
        }:
            return True
        # Some compiler errors are plain RuntimeErrors ("Unsupported function referenced"): look at where
        # they were raised rather than at their type.
        frame = current.__traceback__
        while frame is not None:
            if "/triton/compiler/" in frame.tb_frame.f_code.co_filename.replace("\\", "/"):
                return True
            frame = frame.tb_next
        current = current.__cause__ or current.__context__
    return False


def to_device(value: Any, device: torch.device) -> Any:
    if isinstance(value, torch.Tensor):
        return value.to(device)
    if isinstance(value, (list, tuple)):
        return type(value)(to_device(item, device) for item in value)
    return value


def clone_inputs(inputs: list[Any]) -> list[Any]:
    return [item.clone() if isinstance(item, torch.Tensor) else item for item in inputs]


def poison_allocator(device: torch.device, nbytes: int = 64 << 20, value: float = float("nan")) -> None:
    """Fill memory the allocator will hand out next with `value`, so unwritten outputs cannot look right."""
    block = torch.full((nbytes // 4,), value, dtype=torch.float32, device=device)
    del block


def _filling_unwritten_memory() -> bool:
    return (
        torch.are_deterministic_algorithms_enabled() and torch.utils.deterministic.fill_uninitialized_memory
    )


@contextlib.contextmanager
def unwritten_memory_filled(device: torch.device, guards: CandidateGuards) -> Iterator[None]:
    """On CPU, make every `torch.empty*` the candidate calls come back full of NaN (integers: their maximum).

    The CPU allocator is malloc: `poison_allocator` cannot reach the small blocks it hands out, and fresh
    pages read as zero, so an output a kernel never writes could pass a ReLU-like task by luck. PyTorch's
    deterministic mode fills uninitialised memory; `warn_only` keeps ops without a deterministic kernel
    usable. Device allocators are poisoned by `poison_allocator` instead (filling costs a kernel there).
    """
    if device.type != "cpu":
        yield
        return
    saved = (torch.are_deterministic_algorithms_enabled(), torch.is_deterministic_algorithms_warn_only_enabled(),
             torch.utils.deterministic.fill_uninitialized_memory)  # fmt: skip
    torch.use_deterministic_algorithms(True, warn_only=True)
    torch.utils.deterministic.fill_uninitialized_memory = True
    guards.expect_filled_memory = True  # run_candidate_forward checks that the candidate left it on
    try:
        with warnings.catch_warnings():
            warnings.filterwarnings("ignore", message=".*does not have a deterministic implementation.*")
            yield
    finally:
        guards.expect_filled_memory = False
        torch.use_deterministic_algorithms(saved[0], warn_only=saved[1])
        torch.utils.deterministic.fill_uninitialized_memory = saved[2]


class TaskHarness:
    """Builds the reference and the candidate for one case and one seed, identically seeded."""

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
        torch.manual_seed(seed)
        return cls(*init_inputs).to(self.device).eval()

    def inputs(self, seed: int) -> list[Any]:
        """The task's inputs for `seed`, drawn on the device itself where the task allows it.

        A performance case's `torch.randn` on the host is the slow part of a check on a GPU: the worker has
        one CPU thread, and 32 M floats take 0.3-0.6 s, four input sets per case. Under `torch.device` the
        task's factory calls draw on the device instead (`manual_seed` seeds it too, so a seed still gives
        the same inputs). A `get_inputs` that needs host tensors (a NumPy round trip) is drawn on the host.
        """
        if self.device.type != "cpu":
            torch.manual_seed(seed)
            try:
                with torch.device(self.device):
                    drawn = list(self.task.get_inputs())
                return [to_device(item, self.device) for item in drawn]
            except Exception:  # noqa: BLE001 - drawn on the host below; a task that fails there fails loudly
                pass
        torch.manual_seed(seed)
        return [to_device(item, self.device) for item in self.task.get_inputs()]


def _sync(device: torch.device) -> None:
    if device.type == "cuda":
        torch.cuda.synchronize(device)


def _outputs_alias_inputs(output: Any, inputs: list[Any]) -> bool:
    outputs = output if isinstance(output, (tuple, list)) else [output]
    pointers = {
        item.untyped_storage().data_ptr()
        for item in inputs
        if isinstance(item, torch.Tensor) and item.numel()
    }
    return any(
        isinstance(item, torch.Tensor) and item.numel() and item.untyped_storage().data_ptr() in pointers
        for item in outputs
    )


class CandidateGuards:
    """Everything that watches the candidate: launches, aten ops, patches, threads, processes, writes."""

    def __init__(self, job: dict[str, Any], device: torch.device, workdir: Path) -> None:
        self.violations = Violations()
        self.expect_filled_memory = False  # set while unwritten_memory_filled is on
        self.monitor = TorchComputeMonitor(self.violations, job.get("allowed_ops", ()))
        self.recorder = LaunchRecorder(Path(job["launches_path"]), self.monitor, self.violations)
        self.recorder.install(interpreted=device.type == "cpu")
        writable = [workdir] + [
            Path(job[key]) for key in ("triton_cache", "inline_build_root") if job.get(key)
        ]
        self.process_guards = ProcessGuards(self.violations, writable)
        self.process_guards.install()
        # Taken after our own wrappers are in place: anything that changes from here on was the candidate.
        ours = [
            sys.modules[__name__],
            sys.modules["toolchain.compare"],
            sys.modules["toolchain.timing"],
            sys.modules["toolchain.judge"],
        ]
        targets = patch_targets(ours)
        if job.get("language") == "hip":
            import kernelvault.hip as hip

            hip.set_launch_observer(self.recorder.record_native)
            targets |= {"kernelvault.hip": hip, "kernelvault.hip.LaunchFunction": hip.LaunchFunction}
        self.snapshot = PatchSnapshot(targets)

    def uninstall(self) -> None:
        """Put back everything installed for this candidate (a persistent worker goes on to the next one)."""
        self.process_guards.uninstall()
        self.recorder.uninstall()
        if "kernelvault.hip" in sys.modules:
            sys.modules["kernelvault.hip"].set_launch_observer(None)

    def raise_if_violated(self) -> None:
        changed = self.snapshot.changed()
        if changed:
            self.violations.add("monkey_patch", f"the candidate replaced {', '.join(changed[:5])}")
        if self.violations.first:
            raise CandidateFailure("integrity_reject", self.violations.first)


def run_candidate_forward(model: torch.nn.Module, inputs: list[Any], guards: CandidateGuards) -> Any:
    recorder = guards.recorder
    launches_before = recorder.count
    try:  # a forward that cannot take the task's inputs is an interface error, not a run-time one
        inspect.signature(model.forward).bind(*inputs)
    except TypeError as error:
        raise CandidateFailure(
            "interface_error", f"ModelNew.forward cannot take the task's inputs: {error}"
        ) from None
    except ValueError:  # no signature to read (a builtin): let the call itself decide
        pass
    try:
        guards.monitor.active = True
        with guards.monitor:
            output = model(*inputs)
        guards.monitor.active = False
        if guards.expect_filled_memory and not _filling_unwritten_memory():
            guards.violations.add(
                "monkey_patch", "the candidate turned off the filling of uninitialised memory"
            )
            guards.raise_if_violated()
        _sync(inputs[0].device if inputs and isinstance(inputs[0], torch.Tensor) else torch.device("cpu"))
    except CandidateFailure:
        raise
    except BaseException as error:  # SystemExit and friends are the candidate's failures too
        guards.monitor.active = False
        if isinstance(error, KeyboardInterrupt):
            raise
        guards.raise_if_violated()  # a refused thread or write surfaces as an exception: name the cause
        if is_triton_compile_error(error) or isinstance(error, InlineBuildError):
            raise CandidateFailure("compile_error", _one_line_error(error)) from None
        raise CandidateFailure("runtime_error", f"forward raised {_one_line_error(error)}") from None
    guards.raise_if_violated()
    if recorder.count == launches_before:
        raise CandidateFailure(
            "integrity_reject", "no_kernel_launched: forward launched no kernel of its own"
        )
    return output


def _one_line_error(error: BaseException) -> str:
    text = f"{type(error).__name__}: {error}".strip()
    return text if len(text) < 4000 else text[:4000] + " …"


PlanEntry = tuple[dict[str, Any], int, list[Any], Any, list[Any], "list[Any] | None", Any]


# The guards of the candidate being checked now, for every reference class in this process: a persistent
# worker keeps other tasks' references too, and building or running any of them inside a candidate's
# forward is reference wrapping, whichever task it belongs to.
_ACTIVE_GUARDS: list[CandidateGuards] = []


def _flag_reference_use(what: str) -> None:
    guards = _ACTIVE_GUARDS[-1] if _ACTIVE_GUARDS else None
    if guards is not None and guards.monitor.active:  # set exactly while a candidate's forward runs
        guards.violations.add(
            "reference_wrapping", f"a reference Model was {what} during the candidate's forward"
        )


class Reference:
    """The task module and its reference outputs for every case and seed, computed before any candidate exists.

    `plan` rows: (case, seed, init inputs, expected output, inputs, refill inputs, refill expected output).
    A persistent worker keeps these between candidates of the same task (`ReferenceCache`); each job gets
    clones of the input tensors, because the check writes new values into them (the refill test).
    """

    def __init__(self, harness: TaskHarness, plan: list[PlanEntry]) -> None:
        self.harness = harness
        self.plan = plan
        model_class = harness.task.Model
        reference_forward, reference_init = model_class.forward, model_class.__init__

        # The reference class stays ours: a candidate that builds or runs it during its forward is wrapping it.
        def guarded_reference_forward(self: Any, *args: Any, **kwargs: Any) -> Any:
            _flag_reference_use("run")
            return reference_forward(self, *args, **kwargs)

        def guarded_reference_init(self: Any, *args: Any, **kwargs: Any) -> None:
            _flag_reference_use("built")
            reference_init(self, *args, **kwargs)

        model_class.forward = guarded_reference_forward
        model_class.__init__ = guarded_reference_init

    def plan_for_job(self) -> list[PlanEntry]:
        return [
            (
                case,
                seed,
                init,
                expected,
                clone_inputs(inputs),
                clone_inputs(refill) if refill else refill,
                again,
            )
            for case, seed, init, expected, inputs, refill, again in self.plan
        ]

    def fingerprint(self) -> list[float]:
        """Cheap sums of every cached input: a persistent worker checks them before each reuse.

        (The expected outputs are the parent's, see `toolchain.judge`; ours are scrubbed.)
        """
        sums: list[float] = []
        for entry in self.plan:
            for value in (entry[4], entry[5]):
                for item in value if isinstance(value, (tuple, list)) else [value]:
                    if isinstance(item, torch.Tensor) and item.numel():
                        flat = item.detach().reshape(-1).double()
                        weights = torch.arange(1, flat.numel() + 1, dtype=torch.float64, device=flat.device)
                        sums.append(float(torch.nan_to_num(flat * weights, 1e300).sum()))
        return sums


def build_reference(job: dict[str, Any], device: torch.device, channel: ParentChannel,
                    scope: str) -> Reference | dict[str, Any]:  # fmt: skip
    """Load the task, compute its expected outputs and seal them with the parent (ours are scrubbed).

    A dict with an infrastructure_error on failure.
    """
    trials = int(job.get("trials", 2))
    try:
        harness = TaskHarness(load_module(Path(job["task_path"]), "kv_task"), device)
    except Exception as error:
        return {
            "failure_kind": "infrastructure_error",
            "failure_message": f"task failed to load: {_one_line_error(error)}",
        }
    plan: list[PlanEntry] = []
    check_cases = list(job["correctness_cases"]) + (list(job["performance_cases"]) if job["timed"] else [])
    with torch.no_grad():
        for case in check_cases:
            seeds = range(trials) if case["kind"] == "correctness" else range(1)
            for trial in seeds:
                seed = 1000 * trial + 17
                try:
                    harness.apply(case["overrides"])
                    init = harness.init_inputs()
                    reference = harness.build(harness.task.Model, init, seed)
                    inputs = harness.inputs(seed + 1)
                    expected = reference(*clone_inputs(inputs))
                    # New values for the same tensors: a result cached by input address must not survive them.
                    refill = harness.inputs(seed + 2) if trial == 0 else None
                    refill_expected = reference(*clone_inputs(refill)) if refill is not None else None
                    _sync(device)
                except Exception as error:
                    message = f"reference failed on case {case['name']}: {_one_line_error(error)}"
                    return {"failure_kind": "infrastructure_error", "failure_message": message}
                plan.append((case, seed, init, expected, inputs, refill, refill_expected))
                del reference
        sealed = {f"check{index}": entry[3] for index, entry in enumerate(plan)}
        sealed |= {f"refill{index}": entry[6] for index, entry in enumerate(plan) if entry[5] is not None}
        if scope in job.get("sealed_scopes", ()):  # the parent holds them (this worker restarted): ours go
            for value in sealed.values():
                scrub(value)
        else:
            channel.seal(scope, sealed)
    return Reference(harness, plan)


def verify_job(job: dict[str, Any], channel: ParentChannel, references: Any) -> dict[str, Any]:
    """Check (and on a GPU time) one candidate. `references`: the worker's ReferenceCache.

    Every comparison with an expected output is the parent's, through `channel` (`toolchain.judge`). The
    task's plan may come from an earlier job of the same task, and everything installed for the candidate
    is taken down afterwards (the worker decides whether it can go on).
    """
    device = torch.device("cuda" if job["platform"] in ("cuda", "rocm") else "cpu")
    allow_tf32 = bool(job.get("allow_tf32", False))
    torch.backends.cuda.matmul.allow_tf32 = allow_tf32
    torch.backends.cudnn.allow_tf32 = allow_tf32
    result: dict[str, Any] = {"checks": [], "timings": [], "kernels": [], "compile_seconds": None}

    # 1. The reference, before any candidate code exists in this process (or, in a persistent worker,
    # before this candidate's code exists: earlier candidates are bounded by device_worker's restart rules).
    scope = reference_key(job, Path(job["task_path"]).read_text())
    reference = references.get(job, device, channel, scope)
    if isinstance(reference, dict):
        return {**result, **reference}
    sys.modules["kv_task"] = reference.harness.task  # where a fresh worker has it (hostile tests look there)
    Path(job["task_path"]).unlink(missing_ok=True)  # nothing left on disk to import the reference from
    if job.get("language") == "hip":
        prepare_hip(job, device, result)
    workdir = Path(job["task_path"]).parent
    guards = CandidateGuards(job, device, workdir)
    _ACTIVE_GUARDS.append(guards)
    # Temporary files of this job (Triton's .ptx/.cubin for ptxas, the candidate's own) go to its folder,
    # as in a fresh worker, not to the persistent worker's home, which outlives the candidate.
    saved_tmp = (tempfile.tempdir, os.environ.get("TMPDIR"))
    tempfile.tempdir = os.environ["TMPDIR"] = str(workdir)
    try:
        return check_candidate(job, reference, guards, device, result, channel, scope)
    finally:
        tempfile.tempdir = saved_tmp[0]
        if saved_tmp[1] is None:
            os.environ.pop("TMPDIR", None)
        else:
            os.environ["TMPDIR"] = saved_tmp[1]
        _ACTIVE_GUARDS.remove(guards)
        guards.uninstall()
        restore_load_inline()
        sys.modules.pop(job.get("module_name", "kv_candidate"), None)
        sys.modules.pop("kv_task", None)


def check_candidate(job: dict[str, Any], reference: Reference, guards: CandidateGuards, device: torch.device,
                    result: dict[str, Any], channel: ParentChannel, scope: str) -> dict[str, Any]:  # fmt: skip
    atol, rtol = job.get("atol"), job.get("rtol")
    harness, plan = reference.harness, reference.plan_for_job()

    # 2. The candidate.
    try:
        candidate = load_module(Path(job["candidate_path"]), job.get("module_name", "kv_candidate"))
        guards.raise_if_violated()
    except CandidateFailure as failure:
        return {**result, "failure_kind": failure.kind, "failure_message": failure.message}
    except BaseException as error:  # noqa: BLE001 - sys.exit() at import is the candidate's failure
        if guards.violations.first:
            return {**result, "failure_kind": "integrity_reject", "failure_message": guards.violations.first}
        return {
            **result,
            "failure_kind": "compile_error",
            "failure_message": f"candidate failed to import: {_one_line_error(error)}",
        }
    model_class = getattr(candidate, "ModelNew", None)
    if not isinstance(model_class, type):
        return {
            **result,
            "failure_kind": "static_reject",
            "failure_message": "the candidate defines no class ModelNew",
        }

    try:
        with torch.no_grad(), unwritten_memory_filled(device, guards):
            first_call = True
            for index, (case, seed, init, _, inputs, refill, _) in enumerate(plan):
                harness.apply(case["overrides"])
                try:
                    model = harness.build(model_class, init, seed)
                except BaseException as error:  # noqa: BLE001
                    guards.raise_if_violated()
                    raise CandidateFailure(
                        "interface_error", f"ModelNew{tuple(init)!r} failed: {_one_line_error(error)}"
                    ) from None
                pristine = clone_inputs(inputs)
                poison_allocator(device)
                started = time.perf_counter()
                output = run_candidate_forward(model, inputs, guards)
                if first_call:  # the first forward includes JIT compilation on a GPU
                    result["compile_seconds"] = time.perf_counter() - started
                    first_call = False
                check_untouched_inputs(pristine, inputs, output)
                if refill is not None:  # first seed of each case: run again over differently poisoned memory
                    poison_allocator(device, value=12345.0)
                    again = run_candidate_forward(model, clone_inputs(pristine), guards)
                    repeat = compare_outputs(output, again, atol, rtol)
                    if repeat.failure_kind == "integrity_reject":  # e.g. a tensor subclass: say so first
                        raise CandidateFailure(repeat.failure_kind, f"{repeat.message} (case {case['name']})")
                    if repeat.failure_kind is not None:
                        raise CandidateFailure(
                            "integrity_reject",
                            f"nondeterministic: a second run on the same inputs differs ({repeat.message}); "
                            "reads of unwritten memory or state kept between calls",
                        )
                comparison = channel.judge(scope, f"check{index}", output, atol, rtol)
                result["checks"].append({
                    "case": case["name"], "seed": seed, "passed": comparison.failure_kind is None,
                    "max_abs_error": comparison.max_abs_error, "max_rel_error": comparison.max_rel_error,
                    "message": comparison.message,
                })  # fmt: skip
                if comparison.failure_kind == "integrity_reject":  # the sub-reason leads the message
                    raise CandidateFailure(
                        comparison.failure_kind, f"{comparison.message} (case {case['name']})"
                    )
                if comparison.failure_kind is not None:
                    raise CandidateFailure(
                        comparison.failure_kind, f"case {case['name']}: {comparison.message}"
                    )
                if refill is not None:  # the same input tensors, new values: a result cached by address fails
                    for target, values in zip(inputs, refill, strict=True):
                        if isinstance(target, torch.Tensor):
                            target.copy_(values)
                    try:
                        refilled = run_candidate_forward(model, inputs, guards)
                    except CandidateFailure as failure:
                        if failure.message.startswith("no_kernel_launched"):
                            raise CandidateFailure(
                                "integrity_reject",
                                "cached_results: new values in the same input tensors launched no kernel",
                            ) from None
                        raise
                    check = channel.judge(scope, f"refill{index}", refilled, atol, rtol)
                    if check.failure_kind is not None:
                        raise CandidateFailure(
                            "integrity_reject",
                            f"cached_results: new values in the same input tensors gave a wrong result ({check.message})",
                        )
                del model, output
    except CandidateFailure as failure:
        if failure.kind != "integrity_reject" and guards.violations.first:  # the cause beats its symptom
            failure = CandidateFailure("integrity_reject", guards.violations.first)
        return {
            **result,
            "kernels": guards.recorder.kernels,
            "failure_kind": failure.kind,
            "failure_message": failure.message,
        }

    result["kernels"] = guards.recorder.kernels
    if job["timed"]:
        try:
            result["timings"] = time_cases(job, harness, model_class, guards, device, channel)
            guards.raise_if_violated()
        except CandidateFailure as failure:
            return {**result, "failure_kind": failure.kind, "failure_message": failure.message}
    return {**result, "failure_kind": None, "failure_message": None}


def prepare_hip(job: dict[str, Any], device: torch.device, result: dict[str, Any]) -> None:
    """Before the candidate exists: its prebuilt library (native form) or our load_inline (KernelBench form)."""
    import kernelvault.hip as hip

    if job["hip_form"] == "native":
        hip.register_prebuilt(job["hip_source_sha"], job["hip_library"])
        return
    from torch.utils import cpp_extension

    from toolchain.hip_build import HIP_INCLUDE_DIR

    # PyTorch's own function, not the wrapper an earlier job of a persistent worker left behind.
    original = _ORIGINAL_LOAD_INLINE.setdefault("load_inline", cpp_extension.load_inline)
    signature = inspect.signature(original)
    root = Path(job["inline_build_root"])

    def kernelvault_load_inline(*args: Any, **kwargs: Any) -> Any:
        bound = signature.bind(*args, **kwargs)
        bound.apply_defaults()
        arguments = bound.arguments
        if device.type == "cuda" and not getattr(torch.version, "hip", None):
            # `#include <hip/hip_runtime.h>` resolves to the portability header on NVIDIA.
            arguments["extra_include_paths"] = [
                *(arguments.get("extra_include_paths") or []),
                str(HIP_INCLUDE_DIR),
            ]
        identity = {key: arguments.get(key) for key in ("name", "cpp_sources", "cuda_sources", "functions",
                    "extra_cflags", "extra_cuda_cflags", "extra_ldflags", "extra_include_paths")}  # fmt: skip
        identity["torch"] = torch.__version__
        identity["device"] = torch.cuda.get_device_name() if device.type == "cuda" else "cpu"
        key = hashlib.sha256(json.dumps(identity, sort_keys=True, default=str).encode()).hexdigest()[:24]
        build_directory = root / key  # content-addressed: a second worker finds it built (ninja: no work)
        build_directory.mkdir(parents=True, exist_ok=True)
        arguments["build_directory"] = str(build_directory)
        arguments["verbose"] = False
        started = time.perf_counter()
        try:
            extension = original(*bound.args, **bound.kwargs)
        except Exception as error:  # the build failed: that is the candidate's compile error
            raise InlineBuildError(_one_line_error(error)) from None
        result["compile_seconds"] = (result.get("compile_seconds") or 0.0) + time.perf_counter() - started
        return CountingExtension(extension)

    cpp_extension.load_inline = kernelvault_load_inline


_ORIGINAL_LOAD_INLINE: dict[str, Any] = {}


def restore_load_inline() -> None:
    if "load_inline" in _ORIGINAL_LOAD_INLINE:
        from torch.utils import cpp_extension

        cpp_extension.load_inline = _ORIGINAL_LOAD_INLINE["load_inline"]


class InlineBuildError(Exception):
    """load_inline could not build the candidate's extension."""


class CountingExtension:
    """A built extension whose functions report each call as a launch of the candidate's own code."""

    def __init__(self, module: Any) -> None:
        self._module = module

    def __getattr__(self, name: str) -> Any:
        import kernelvault.hip as hip

        attribute = getattr(self._module, name)
        if not callable(attribute):
            return attribute

        def launch(*args: Any, **kwargs: Any) -> Any:
            if hip._launch_observer is not None:
                hip._launch_observer(name)
            return attribute(*args, **kwargs)

        return launch


def check_untouched_inputs(pristine: list[Any], inputs: list[Any], output: Any) -> None:
    for before, after in zip(pristine, inputs, strict=True):
        if isinstance(before, torch.Tensor) and not torch.equal(before, after):
            raise CandidateFailure("integrity_reject", "modified_inputs: forward changed its input tensors")
    if _outputs_alias_inputs(output, inputs):
        raise CandidateFailure(
            "integrity_reject", "output_aliases_input: an output shares memory with an input"
        )


def time_cases(
    job: dict[str, Any],
    harness: TaskHarness,
    model_class: type,
    guards: CandidateGuards,
    device: torch.device,
    channel: ParentChannel,
) -> list[dict[str, Any]]:
    recorder = guards.recorder
    timings = []
    with torch.no_grad():
        for case in job["performance_cases"]:
            harness.apply(case["overrides"])
            init = harness.init_inputs()
            reference = harness.build(harness.task.Model, init, seed=17)
            model = harness.build(model_class, init, seed=17)
            input_sets = [harness.inputs(seed) for seed in range(100, 100 + job["input_sets"])]

            repetitions, warmup = job["repetitions"], job["warmup"]
            spot_checks = {
                repetitions // 3,
                repetitions - 1,
            }  # timed calls whose outputs are checked afterwards
            scope = f"job:timed/{case['name']}"  # the parent forgets it after this job
            # Sealed before the candidate runs again; ours are scrubbed (see toolchain.judge).
            channel.seal(scope, {f"timed{index}": reference(*clone_inputs(list(input_sets[index % len(input_sets)])))
                                 for index in sorted(spot_checks)})  # fmt: skip
            # Check once more on these inputs with launches observed, then time without the recorder.
            run_candidate_forward(model, list(input_sets[0]), guards)
            recorder.enabled = False

            def run_candidate(inputs: Any, model: torch.nn.Module = model) -> Any:
                return model(*inputs)

            def run_reference(inputs: Any, reference: torch.nn.Module = reference) -> Any:
                return reference(*inputs)

            try:
                candidate_stats = time_on_device(
                    run_candidate, input_sets, repetitions, warmup, device, keep_outputs=spot_checks
                )
            except Exception as error:
                raise CandidateFailure(
                    "runtime_error", f"failed while timed: {_one_line_error(error)}"
                ) from None
            for index, output in candidate_stats.outputs.items():
                check = channel.judge(scope, f"timed{index}", output, job.get("atol"), job.get("rtol"))
                if check.failure_kind is not None:
                    raise CandidateFailure(
                        "integrity_reject",
                        f"cached_results: timed call {index} returned a wrong result ({check.message})",
                    )
            reference_stats = time_on_device(run_reference, input_sets, repetitions, warmup, device)
            recorder.enabled = True
            timing = {
                "case": case["name"], "candidate_ms": candidate_stats.median_ms,
                "reference_ms": reference_stats.median_ms, "candidate_spread": candidate_stats.spread,
                "reference_spread": reference_stats.spread, "repetitions": repetitions,
            }  # fmt: skip
            channel.report_timing(timing)  # the parent's record is what a success is timed by
            timings.append(timing)
            del reference, model, input_sets, candidate_stats
            torch.cuda.empty_cache()
    return timings


def read_seal() -> str:
    """The parent's secret, from an inherited pipe: read before any candidate code exists in this process."""
    import os

    fd = os.environ.pop("KV_SECRET_FD", None)
    if fd is None:
        return ""
    try:
        return os.read(int(fd), 256).decode()
    finally:
        os.close(int(fd))

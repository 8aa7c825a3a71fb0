"""The candidate's side of a check: import it, build it, run it on the inputs it is given, time it.

Runs inside a jailed worker process (`kernelvault.toolchain.worker_lane`, kind `candidate`) and does only what the
parent asks, one request at a time (`kernelvault.toolchain.judge` drives the check):

    load     import the candidate (its guards installed first; on cpu the Triton interpreter is on)
    build    ModelNew(*init_inputs) with the weights' seed the parent drew for this case
    forward  run forward on an input file the parent placed in the worker's read-only `in/` folder, and
             write the output to a file the parent judges; `reuse_inputs` writes new values into the
             previous call's input tensors first (a result cached by input address must not survive)
    time     time forward on the case's staged inputs under the timing protocol (`timing`): fresh values for
             every call, every output checksummed, a few outputs kept at samples drawn here
    write_kept  write kept outputs the parent drew, for its full checks
    end      take the guards down; report the kernels it launched and whether this process can go on

What is not here: the task's reference (it runs in another jailed process, `kernelvault.toolchain.sandboxed.reference`),
the seeds of the inputs (drawn by the parent for each job, never sent here), expected outputs (only the
parent holds them) and any judgement. This process learns a case's inputs when it must run them.

The candidate is watched while it is imported, built and run, with the same allowance: glue ops
(allocation, views, copies, fills; and while building, the random fills of parameter initialisation),
its own kernel launches, no threads or processes, no writes outside its folders, no patched functions
(`kernelvault.toolchain.sandboxed.integrity`). These watchers live in the candidate's process, so they are tripwires: the walls
are the jail around the process, the static wall before it (`kernelvault.toolchain.static_wall`), and on a GPU the
device's own record of which kernels ran.
"""

from __future__ import annotations

import collections
import contextlib
import gc
import hashlib
import inspect
import json
import math
import os
import re
import stat
import sys
import tempfile
import time
import warnings
from collections.abc import Callable, Iterable, Iterator
from dataclasses import dataclass
from pathlib import Path
from types import ModuleType
from typing import Any

import torch

from kernelvault.toolchain import hip_runtime
from kernelvault.toolchain.error_text import one_line_error
from kernelvault.toolchain.function_tasks import (
    CallsNotUnderstood,
    argument_leaves,
    check_calls_bind,
    clone_value,
    device_redirect,
    resolve_entry,
    tensor_leaves,
)
from kernelvault.toolchain.hip_build import HIP_INCLUDE_DIR
from kernelvault.toolchain.kernel_tasks import require_kernels, untimed_autotuning
from kernelvault.toolchain.own_kernels import is_own_kernel_name, prefixed_kernel_name, prefixed_kernel_source
from kernelvault.toolchain.sandboxed import integrity, own_work, requests, tensor_files, timing
from kernelvault.toolchain.sandboxed.bundles import BundleSender
from kernelvault.toolchain.sandboxed.integrity import (
    INIT_OPS,
    CandidateClasses,
    PatchSnapshot,
    ProcessGuards,
    TensorFromData,
    TensorPrinting,
    TensorValueMethods,
    TorchComputeMonitor,
    Violations,
    patch_targets,
)
from kernelvault.toolchain.sandboxed.kernel_globals import function_problem
from kernelvault.toolchain.sandboxed.own_work import device_work_ms, recorded_events
from kernelvault.toolchain.sandboxed.plain_output import output_type_problem, plain_leaves
from kernelvault.toolchain.sandboxed.requests import (
    Build,
    CandidateRequest,
    End,
    Forward,
    Load,
    StageTime,
    Time,
    WriteKept,
)
from kernelvault.toolchain.sandboxed.source_text import load_module
from kernelvault.toolchain.sandboxed.tensor_files import read_tensors, write_tensors
from kernelvault.toolchain.sandboxed.timed_values import TimedCallViolation
from kernelvault.toolchain.sandboxed.timing import RandomKeep, harness_replaced, prepare_device, time_staged
from kernelvault.toolchain.static_wall import check_cpp
from kernelvault.toolchain.task_calls import function_module

_LAUNCH_OPTIONS = {"num_warps", "num_stages", "num_ctas", "maxnreg", "waves_per_eu", "matrix_instr_nonkdim"}


class CandidateFailure(Exception):
    """A failure attributed to the candidate, with its stable failure kind."""

    def __init__(self, kind: str, message: str) -> None:
        super().__init__(message)
        self.kind = kind
        self.message = message


class LaunchRecorder:
    """Wraps Triton's launch entry point to count launches and log each distinct signature to a file."""

    SNAPSHOT_MUTABLE = (
        "count",
        "enabled",
        "refused_argument",
        "device_scope",
        "recorded_launches",
        "raised",
        "unwatched",
    )  # fields that change while it works (`PatchSnapshot`)

    def __init__(
        self,
        path: Path,
        violations: Violations,
        on_launch: Callable[[Iterable[Any] | None], None],
        during_launch: Callable[[], contextlib.AbstractContextManager[Any]] = contextlib.nullcontext,
    ) -> None:
        self.path = path
        self.violations = violations
        self.on_launch = on_launch  # the monitor learns which tensors a kernel may have written
        self.during_launch = during_launch  # the monitor knows the launcher's own copies for what they are
        self.count = 0
        self.enabled = True  # off while timing: recording costs host time between launches
        self.refused_argument: str | None = None  # the first launch argument a kernel may not take
        # while a device record is kept: the range around each launch by which it knows the candidate's kernels
        self.device_scope: Callable[[], contextlib.AbstractContextManager[Any]] | None = None
        self.kernels: list[str] = []
        self.recorded_launches: collections.Counter[str] = collections.Counter()  # Triton launches, by kernel
        self._seen: set[str] = set()
        self._replaced: tuple[Any, Any] | None = None
        self._renamed: tuple[Any, Any] | None = None
        self._isolated: tuple[Any, Any] | None = None
        self.raised: str | None = None  # a launch that raised under the interpreter, in the current phase
        # launches while not recording (the timed calls): each timed call must launch what a watched one did
        self.unwatched = 0

    def install(self, interpreted: bool) -> None:
        if interpreted:
            from triton.runtime.interpreter import InterpretedFunction as launcher
        else:
            from triton.runtime.jit import JITFunction as launcher
        original = launcher.run
        recorder = self
        self._replaced = (launcher, original)
        if interpreted:
            self._isolate_interpreter_globals()
        if not interpreted:  # the device's name of every kernel compiled here carries the harness's prefix
            naming = launcher.repr
            self._renamed = (launcher, naming)

            def prefixed_repr(kernel: Any, specialization: Any) -> str:
                return prefixed_kernel_name(str(naming(kernel, specialization)))

            launcher.repr = prefixed_repr  # type: ignore[method-assign]

        def recording_run(kernel: Any, *args: Any, **kwargs: Any) -> Any:
            # run(self, *args, grid, warmup, **kwargs) in Triton 3.x; grid and warmup pass through untouched.
            if not kwargs.get("warmup") and recorder.enabled:
                launch_kwargs = {key: value for key, value in kwargs.items() if key not in ("grid", "warmup")}
                recorder.record(kernel.fn, args, launch_kwargs)
                if callable(kwargs.get("grid")):
                    kwargs = {**kwargs, "grid": grid_of(kernel.fn, kwargs["grid"], args, launch_kwargs)}
                with recorder.launch_scope():
                    try:
                        return original(kernel, *args, **kwargs)
                    except Exception as error:
                        if not interpreted:
                            raise
                        # Under the interpreter a kernel body is Python, and what it raises can carry the values
                        # it loaded (`raise ValueError(str(x))`) to host code that catches it. A phase that goes
                        # on after it is refused (`CandidateGuards.watching`); one that fails keeps its failure.
                        recorder.raised = (
                            f"kernel {getattr(kernel.fn, '__name__', '?')}: {type(error).__name__}"
                        )
                        raise
            if not kwargs.get("warmup"):
                recorder.unwatched += 1
            return original(kernel, *args, **kwargs)

        launcher.run = recording_run  # type: ignore[method-assign]

    def _isolate_interpreter_globals(self) -> None:
        """Triton's interpreter runs a kernel's rewritten source in the kernel's own module, after copying its
        own globals there (`np`, `inspect`, `ast`, ...): the candidate's host code would find them under names
        it never imported. Here the rewritten kernel gets a namespace of its own: the interpreter's names
        beside a copy of its module's."""
        from triton.runtime import interpreter

        rewriter = getattr(interpreter, "FunctionRewriter", None)
        if rewriter is None or not hasattr(rewriter, "_compile_and_exec"):
            return
        self._isolated = (rewriter, rewriter._compile_and_exec)

        def compile_and_exec(self_: Any, transformed_ast: Any) -> Any:
            code = compile(transformed_ast, filename=self_.filename, mode="exec")
            local_namespace = {**self_.kwargs}
            namespace = {
                **vars(interpreter),
                **self_.fn.__globals__,
            }  # the kernel's own names win, as in Triton
            exec(code, namespace, local_namespace)  # noqa: S102 - Triton's own rewrite of the kernel
            return local_namespace[self_.fn.__name__]

        rewriter._compile_and_exec = compile_and_exec

    def uninstall(self) -> None:
        if self._replaced is not None:
            self._replaced[0].run = self._replaced[1]
            self._replaced = None
        if self._isolated is not None:
            self._isolated[0]._compile_and_exec = self._isolated[1]
            self._isolated = None
        if self._renamed is not None:
            self._renamed[0].repr = self._renamed[1]
            self._renamed = None

    def _check_stream(self, name: str) -> None:
        if torch.cuda.is_available() and torch.cuda.is_initialized():
            if torch.cuda.current_stream() != torch.cuda.default_stream():
                self.violations.add(
                    "side_stream", f"{name} was launched on a side stream, outside the timed stream"
                )

    def launch_scope(self) -> contextlib.AbstractContextManager[Any]:
        """Entered around every launch the harness issues for the candidate: on a GPU with a device record, the
        range by which the record knows a kernel as the candidate's own (`DeviceRecord.LAUNCH`)."""
        scope = contextlib.ExitStack()
        scope.enter_context(self.during_launch())
        if self.device_scope is not None:
            scope.enter_context(self.device_scope())
        return scope

    def record_native(self, name: str) -> contextlib.AbstractContextManager[Any] | None:
        """A HIP launch function is about to run (called by kernelvault.hip / the load_inline proxy); the launch
        runs inside what this returns."""
        if not self.enabled:
            self.unwatched += 1
            return None
        self.count += 1
        self.on_launch(None)
        self._check_stream(name)
        if name not in self.kernels:
            self.kernels.append(name)
            with self.path.open("a") as handle:
                handle.write(json.dumps({"kernel": name, "language": "hip"}) + "\n")
        return self.launch_scope()

    def record(self, fn: Any, args: tuple[Any, ...], kwargs: dict[str, Any]) -> None:
        name = getattr(fn, "__name__", "?")
        refused = next((problem for value in [*args, *kwargs.values()] if (problem := launch_argument_problem(value))),
                       None)  # fmt: skip
        if refused is None and (reached := function_problem(fn)) is not None:
            refused = f"its body reaches host code: {reached}"
        if refused is not None:
            # Raised before the launch: under the interpreter a kernel body is Python, and an object it is handed
            # runs its own methods there. Kept too, so a candidate that catches the error is still refused.
            self.refused_argument = self.refused_argument or f"kernel {name}: {refused}"
            raise TypeError(f"KernelVault: kernel {name}: {refused}")
        self.count += 1
        self.on_launch([*args, *kwargs.values()])
        self._check_stream(name)
        if name not in self.kernels:
            self.kernels.append(name)
        if self.device_scope is not None:  # one Triton launch is one kernel on the device's record
            self.recorded_launches[name] += 1
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


def grid_of(fn: Any, grid: Any, args: tuple[Any, ...], kwargs: dict[str, Any]) -> Any:
    """A grid callable's grid, worked out before the launch, from the launch's arguments by name (defaults
    included), as Triton's JIT does: the callable is the candidate's host code, watched like the rest of its
    forward. Left to the launcher, it runs inside the launch; under the CPU interpreter, inside the scope where
    `tl.load` and `tl.store` work on host memory."""
    kernel_kwargs = {key: value for key, value in kwargs.items() if key not in _LAUNCH_OPTIONS}
    try:
        bound = inspect.signature(fn).bind(*args, **kernel_kwargs)
    except TypeError:
        return grid  # a launch with wrong arguments fails by itself
    bound.apply_defaults()
    return grid(dict(bound.arguments))


_TORCH_TO_TRITON = {
    torch.float32: "fp32", torch.float16: "fp16", torch.bfloat16: "bf16", torch.float64: "fp64",
    torch.int8: "i8", torch.int16: "i16", torch.int32: "i32", torch.int64: "i64", torch.uint8: "u8",
    torch.bool: "i1",
}  # fmt: skip


def launch_argument_problem(value: Any) -> str | None:
    """Why a kernel may not take `value` (None: it may). A kernel takes tensors, numbers, booleans, strings and
    dtypes (as constexprs), None, and tuples of those: data, never an object with methods of its own."""
    # Exact types: a subclass brings methods of its own (`data_ptr`, `__index__`), and the interpreter calls them.
    if type(value) in (torch.Tensor, torch.nn.Parameter, bool, int, float, str) or value is None:
        return None
    if isinstance(value, tuple):
        return next((problem for item in value if (problem := launch_argument_problem(item))), None)
    inner = getattr(type(value), "__module__", "") or ""
    if inner.startswith("triton.language") and type(value).__name__ in ("constexpr", "dtype", "pointer_type",
                                                                       "block_type"):  # fmt: skip
        wrapped = getattr(value, "value", None) if type(value).__name__ == "constexpr" else None
        return launch_argument_problem(wrapped) if wrapped is not None else None
    return f"an argument of type {type(value).__name__}: a kernel takes tensors, numbers, strings, dtypes and None"


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


def poison_allocator(device: torch.device, nbytes: int = 64 << 20, value: float = float("nan")) -> None:
    """Fill memory the allocator will hand out next with `value`, so unwritten outputs cannot look right."""
    block = torch.full((nbytes // 4,), value, dtype=torch.float32, device=device)
    del block


def _filling_unwritten_memory() -> bool:
    return (
        torch.are_deterministic_algorithms_enabled() and torch.utils.deterministic.fill_uninitialized_memory
    )


def _set_deterministic(mode: bool, warn_only: bool) -> None:
    """`torch.use_deterministic_algorithms` without its `torch._inductor.config` import: that import loads
    torch._dynamo (over a second of a worker's start, per worker), and inductor's setting matters only to
    torch.compile, which no candidate reaches (the wall refuses it)."""
    torch._C._set_deterministic_algorithms(mode, warn_only=warn_only)


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
    _set_deterministic(True, warn_only=True)
    torch.utils.deterministic.fill_uninitialized_memory = True
    guards.expect_filled_memory = True  # run_forward checks that the candidate left it on
    try:
        with warnings.catch_warnings():
            warnings.filterwarnings("ignore", message=".*does not have a deterministic implementation.*")
            yield
    finally:
        guards.expect_filled_memory = False
        _set_deterministic(saved[0], warn_only=saved[1])
        torch.utils.deterministic.fill_uninitialized_memory = saved[2]


def sync_device(device: torch.device) -> None:
    if device.type == "cuda":
        torch.cuda.synchronize(device)


def _outputs_alias_inputs(output: Any, inputs: list[Any]) -> bool:
    pointers = {
        item.untyped_storage().data_ptr()
        for item in inputs
        if isinstance(item, torch.Tensor) and item.numel()
    }
    return any(isinstance(item, torch.Tensor) and item.numel() and item.untyped_storage().data_ptr() in pointers
               for item in plain_leaves(output))  # fmt: skip


def _thread_count() -> int:
    """Threads of this process as the OS counts them (a thread started below `threading` counts too)."""
    try:
        return len(os.listdir("/proc/self/task"))
    except OSError:
        import threading

        return threading.active_count()


class CandidateGuards:
    """Everything that watches the candidate: launches, aten ops, patches, threads, processes, writes."""

    def __init__(self, job: Load, device: torch.device, writable: list[Path]) -> None:
        self.violations = Violations()
        self.expect_filled_memory = False  # set while unwritten_memory_filled is on
        self.record: DeviceRecord | None = None  # the device's own record (GPU), from `CandidateHost._load`
        self.monitor = TorchComputeMonitor(self.violations, job.allowed_ops)
        self.recorder = LaunchRecorder(
            Path(job.launches_path), self.violations, self.monitor.forget_written, self.monitor.launching
        )
        self.recorder.install(interpreted=device.type == "cpu")
        self.process_guards = ProcessGuards(self.violations, writable)
        self.process_guards.install()
        self.printing = TensorPrinting()
        self.printing.install()
        self.value_methods = TensorValueMethods(self.violations, self.monitor)
        self.value_methods.install()
        self.classes = CandidateClasses(self.violations, job.module_name)
        self.classes.install()
        self.from_data = TensorFromData(self.violations, self.monitor)
        self.from_data.install()
        # Taken after our own wrappers are in place: anything that changes from here on was the candidate.
        targets = patch_targets([sys.modules[__name__], sys.modules[timing.__name__], sys.modules[tensor_files.__name__],
                                 sys.modules[integrity.__name__], sys.modules[requests.__name__],
                                 sys.modules[own_work.__name__], torch.profiler, torch.autograd.profiler])  # fmt: skip
        # The device-work figure's profiler: its class and the one it inherits from (their methods run the record).
        targets |= {
            "torch.profiler.profile": own_work.profile,
            "torch.profiler._KinetoProfile": torch.profiler.profiler._KinetoProfile,
        }
        targets |= {"CandidateGuards": CandidateGuards, "LaunchRecorder": LaunchRecorder, "violations": self.violations,
                    "monitor": self.monitor, "recorder": self.recorder, "process_guards": self.process_guards,
                    "printing": self.printing, "value_methods": self.value_methods,
                    "classes": self.classes, "from_data": self.from_data}  # fmt: skip
        if job.language == "hip":
            import kernelvault.hip as hip  # the module the candidate imports: its names are snapshotted too

            hip_runtime.set_launch_observer(self.recorder.record_native)
            targets |= {"kernelvault.hip": hip, "kernelvault.toolchain.hip_runtime": hip_runtime,
                        "kernelvault.hip.LaunchFunction": hip_runtime.LaunchFunction}  # fmt: skip
        self.snapshot = PatchSnapshot(targets)

    def uninstall(self) -> None:
        """Put back everything installed for this candidate (a persistent worker goes on to the next one)."""
        self.process_guards.uninstall()
        self.printing.uninstall()
        self.value_methods.uninstall()
        self.classes.uninstall()
        self.from_data.uninstall()
        self.recorder.uninstall()
        hip_runtime.set_launch_observer(None)

    def raise_if_violated(self) -> None:
        # Through the functions as they were when this module loaded: a candidate that replaced
        # `Violations.add` or `PatchSnapshot.changed` must not silence the check that notices it.
        changed = _SNAPSHOT_CHANGED(self.snapshot)
        if changed:
            raise CandidateFailure(
                "integrity_reject", f"monkey_patch: the candidate replaced {', '.join(changed[:5])}"
            )
        found = _FOUND(self.violations)
        if found:
            raise CandidateFailure("integrity_reject", found[0])
        if self.recorder.refused_argument:
            raise CandidateFailure("interface_error", self.recorder.refused_argument)

    @contextlib.contextmanager
    def watching(self, what: str, construction: bool = False, device: bool = True,
                 scalar_arguments: Iterable[torch.Tensor] = ()) -> Iterator[None]:  # fmt: skip
        """The monitor on around candidate code (`what` names the phase in a violation's message); on a GPU,
        also a window of the device's record (`device`: the harness's own work, such as writing the output
        out, is not in one)."""
        window = (
            self.record.window(construction)
            if device and self.record is not None and not self.record.stopped
            else contextlib.nullcontext()
        )
        self.monitor.start(what, construction, scalar_arguments)
        self.recorder.raised = None
        try:
            with window, self.monitor:
                yield
            if self.recorder.raised is not None:
                self.violations.add("host_data", f"a kernel launch raised under the CPU interpreter and {what} went "
                                    f"on ({self.recorder.raised}): what a kernel raises can carry its values to host code")  # fmt: skip
        finally:
            self.monitor.stop()


_SNAPSHOT_CHANGED = PatchSnapshot.changed


def _FOUND(violations: Violations) -> list[str]:  # noqa: N802 - a captured original, like _SNAPSHOT_CHANGED
    return list(vars(violations).get("found", ()))


def _entry_or_none(module: ModuleType, name: str) -> Any:
    try:
        return resolve_entry(module, name)
    except Exception:  # noqa: BLE001 - missing, or an attribute that raised: not a function to call
        return None


def check_untouched_inputs(pristine: list[Any], inputs: list[Any], output: Any) -> None:
    for before, after in zip(pristine, inputs, strict=True):
        if isinstance(before, torch.Tensor) and not torch.equal(before, after):
            raise CandidateFailure("integrity_reject", "modified_inputs: forward changed its input tensors")
    if _outputs_alias_inputs(output, inputs):
        raise CandidateFailure(
            "integrity_reject", "output_aliases_input: an output shares memory with an input"
        )


def check_output_values(output: Any, device: torch.device) -> None:
    """Plain tensors on the inputs' device, in a tuple or list at most: anything else cannot be judged
    as written, and a lazy object would compute its value outside forward, when it is written out."""
    problem = output_type_problem(output)
    if problem is not None:
        raise CandidateFailure(*problem)
    for index, leaf in enumerate(plain_leaves(output)):
        where = f"output {index}"
        if leaf.device.type != device.type:
            raise CandidateFailure("interface_error", f"{where} is on {leaf.device}, expected {device}")


# PyTorch's own kernels that only move or fill memory: a candidate's glue (`torch.empty_like` has no kernel,
# `torch.zeros` launches a fill, `.contiguous()` a copy), never its computation. `torch.arange` writes an index
# sequence (glue to the dispatch monitor too: a permutation's or gather's starting indices); its kernel is
# named after the op, a PyTorch function no candidate kernel can carry as its own name (three real answers were
# refused for it on the H200, 2026-12-03).
GLUE_KERNEL_MARKERS = (
    "FillFunctor", "direct_copy_kernel", "CatArrayBatchedCopy", "copy_kernel", "at::native::arange_cuda_out"
)  # fmt: skip


class DeviceRecord:
    """What the GPU itself ran while candidate code ran: CUPTI's activity records, through torch.profiler.

    The dispatch monitor sees PyTorch ops, and code in the candidate's process can switch it off. The device
    sees kernels, copies and fills, whoever launched them. The record runs from the candidate's import to its
    last checked forward (not while it is timed); every candidate phase (import, building, each forward) is
    a window bracketed by device synchronisations, so everything that ran on the device in a window was
    launched by candidate code. Allowed there: the candidate's own kernels (Triton launches it made, the
    `__global__` functions of its HIP source), PyTorch's fills and copies, memsets, device-to-device copies
    and host-to-device copies; in the import and building windows also the random draws of parameter
    initialisation, as the dispatch monitor admits them there (a model's answer that tries its function on
    `torch.randn(..., device="cuda")` inputs at import). Anything else (a PyTorch, cuBLAS or cuDNN kernel
    computing, a device-to-host copy that takes data to host code) is `device_record`, at import too: inputs
    a test writes as literals are known before the first forward, so results computed at import could be
    replayed.

    It lives in the candidate's process like the monitor: a candidate past the static wall could stop it
    (that is noticed: a record with no windows is a violation too). What it adds is a second, independent
    account of the same forward, from the hardware's side.
    """

    WINDOW = "kv::candidate"
    # Import and building: where the dispatch monitor also admits parameter initialisation (random draws).
    CONSTRUCTION_WINDOW = "kv::candidate-construction"
    # Around each launch the harness issues for the candidate (`LaunchRecorder.launch_scope`): a kernel is the
    # candidate's because this range issued it, never because of its name (a Triton kernel named
    # `vectorized_elementwise_kernel` would otherwise make PyTorch's own elementwise kernels look like its own).
    LAUNCH = "kv::launch"

    def __init__(self) -> None:
        from torch.profiler import ProfilerActivity, profile

        self.profile = profile(activities=[ProfilerActivity.CPU, ProfilerActivity.CUDA])
        self.profile.__enter__()
        self.windows = 0
        self.stopped = False

    @contextlib.contextmanager
    def window(self, construction: bool = False) -> Iterator[None]:
        torch.cuda.synchronize()
        self.windows += 1
        with torch.profiler.record_function(self.CONSTRUCTION_WINDOW if construction else self.WINDOW):
            try:
                yield
            finally:
                torch.cuda.synchronize()

    def launch_scope(self) -> contextlib.AbstractContextManager[Any]:
        return torch.profiler.record_function(self.LAUNCH)

    def finish(self, by_name: OwnKernelNames | None = None) -> list[str]:
        """Stop recording; what ran in the candidate's windows that was neither its own nor glue. `by_name`: the
        candidate's kernels by their prefixed names, where the record lost their launch (`OwnKernelNames`)."""
        if self.stopped:
            return []
        self.stopped = True
        self.profile.__exit__(None, None, None)
        events = recorded_events(self.profile)
        windows = (self.WINDOW, self.CONSTRUCTION_WINDOW)
        if self.windows and not any(event.name() in windows for event in events):
            return ["the device's record of the candidate's windows is missing (the profiler was stopped)"]
        return unexplained_device_events(events, by_name)


class OwnKernelNames:
    """The second way the record knows a kernel as the candidate's, where the launch link is missing: its name is
    unqualified and carries the prefix the harness gives every kernel it builds or compiles for the candidate
    (`kernelvault.toolchain.own_kernels`), within `budget` events (a Triton job: the launches the harness issued;
    None, a HIP job: any number). The candidate's own choice of name counts for nothing: a decoy named
    `nvjet_tst_...` or `vectorized_elementwise_kernel` is `kvcand_nvjet_tst_...` on the device, and cuBLAS's and
    PyTorch's kernels of the plain name stay theirs."""

    def __init__(self, budget: int | None) -> None:
        self.left = budget

    def __call__(self, name: str) -> bool:
        if not is_own_kernel_name(name):
            return False
        if self.left is None:
            return True
        if self.left <= 0:
            return False
        self.left -= 1
        return True


def unexplained_device_events(events: list[Any], by_name: OwnKernelNames | None = None) -> list[str]:
    """The names of what the device ran inside the candidate's windows that is neither its own kernels (issued
    inside a `DeviceRecord.LAUNCH` range: `LaunchedByHarness`) nor glue: PyTorch's fills and copies into device
    memory, up to `DEVICE_SCALAR_COPIES` scalar reads in each window, and in a construction window (import,
    building) the random draws of parameter initialisation that the dispatch monitor admits there too (a kernel
    issued by one of its `INIT_OPS`: `torch.randn` in an answer's example usage at import). `events`: torch's
    `_KinetoEvent`s of one record."""
    names = (DeviceRecord.WINDOW, DeviceRecord.CONSTRUCTION_WINDOW)
    spans = [(event.start_ns(), event.end_ns(), event.name() == DeviceRecord.CONSTRUCTION_WINDOW)
             for event in events if event.name() in names]  # fmt: skip
    found: list[str] = []
    scalar_reads: dict[int, int] = {}  # per window: a record holds every checked forward of a job
    issuers = _torch_ops_by_correlation(events)
    launched = LaunchedByHarness(events, issuers)
    by_name = by_name or OwnKernelNames(0)
    for event in events:
        if event.device_type() == torch.autograd.DeviceType.CPU or event.name() in (
            *names,
            DeviceRecord.LAUNCH,
        ):
            continue  # the ranges' own marks on the device's timeline
        start = event.start_ns()
        inside = next((index for index, (begin, end, _) in enumerate(spans) if begin <= start <= end), None)
        if inside is None:
            continue
        name = event.name()
        if launched(event) or by_name(name) or any(marker in name for marker in GLUE_KERNEL_MARKERS):
            continue
        if spans[inside][2] and _issued_by_initialisation(event, issuers):
            continue
        lowered = name.lower()
        if lowered.startswith("memset") or ("memcpy" in lowered and "dtoh" not in lowered):
            continue
        # A device-to-host copy of one scalar (`.item()` of a 0-d argument, which the monitor checks) is glue,
        # up to an allowance per window (one forward: a function task's case, all of its test's calls); any
        # other copy is not.
        if (
            "memcpy" in lowered
            and _is_scalar_read(event, issuers)
            and scalar_reads.get(inside, 0) < DEVICE_SCALAR_COPIES
        ):
            scalar_reads[inside] = scalar_reads.get(inside, 0) + 1
            continue
        if name not in found:
            found.append(name)
    return found


class LaunchedByHarness:
    """Whether a device event was issued by a launch the harness made for the candidate: its issuing range (the
    innermost range or op open on the launching thread, which the record links the event to) is one of the
    `DeviceRecord.LAUNCH` ranges; or, where the record links it to nothing, the runtime call that launched it ran
    inside such a range and inside no PyTorch op (an op a candidate's hook ran in the middle of a launch issues
    PyTorch's kernels, not the candidate's)."""

    _LAUNCH_CALLS = ("LaunchKernel", "LaunchCooperativeKernel")  # cudaLaunchKernel, cuLaunchKernelEx, hip*...

    def __init__(self, events: list[Any], issuers: dict[int, str]) -> None:
        cpu = [event for event in events if event.device_type() == torch.autograd.DeviceType.CPU]
        self.ranges = {event.correlation_id() for event in cpu if event.name() == DeviceRecord.LAUNCH}
        self.issuers = issuers
        self.launch_spans = [
            (e.start_ns(), e.end_ns(), e.start_thread_id()) for e in cpu if e.name() == DeviceRecord.LAUNCH
        ]
        # PyTorch's ops by what they are, not by correlation id: a range or op the profiler gave no id (0) would
        # otherwise share one with every other (the candidate's windows included) and cover every launch.
        self.op_spans = [(e.start_ns(), e.end_ns(), e.start_thread_id()) for e in cpu if _is_torch_op(e)]
        self.calls = {
            e.correlation_id(): e for e in cpu if any(call in e.name() for call in self._LAUNCH_CALLS)
        }

    def __call__(self, event: Any) -> bool:
        try:
            linked = event.linked_correlation_id()
        except AttributeError:
            linked = 0
        if linked and linked in self.ranges:
            return True
        if linked and linked in self.issuers:
            return False  # a PyTorch op issued it
        call = self.calls.get(event.correlation_id())
        if call is None:
            return False
        moment, thread = call.start_ns(), call.start_thread_id()
        return _within(self.launch_spans, moment, thread) and not _within(self.op_spans, moment, thread)


def _within(spans: list[tuple[int, int, int]], moment: int, thread: int) -> bool:
    return any(begin <= moment <= end and owner == thread for begin, end, owner in spans)


# How many one-scalar device-to-host copies one window allows: `.item()` of a 0-d argument, which the dispatch
# monitor admits and refuses for any other tensor. Per window, not per record: the record spans every checked
# forward of a job, and TritonBench's logspace (two `.item()` in each of its test's 4 calls, so 8 per forward)
# passed the allowance over a whole job on the H200 (2026-12-02) although each forward read only its arguments.
DEVICE_SCALAR_COPIES = 16


# The op `.item()` runs: it copies exactly one element to the host, whatever the tensor (it refuses more).
SCALAR_READ_OP = "aten::_local_scalar_dense"


def _torch_ops_by_correlation(events: list[Any]) -> dict[int, str]:
    """PyTorch's own ops in the record, by correlation id (a device event's `linked_correlation_id` names the op
    that issued it). A `record_function` range is left out: the candidate names those, and one called
    `aten::_local_scalar_dense` around a large copy must not make it a scalar read."""
    return {event.correlation_id(): event.name() for event in events
            if _is_torch_op(event) and event.correlation_id()}  # fmt: skip


def _is_torch_op(event: Any) -> bool:
    """A PyTorch op on the host's timeline (`aten::...`), not a range the candidate or the harness named."""
    if event.device_type() != torch.autograd.DeviceType.CPU or not event.name().startswith("aten::"):
        return False
    try:
        return not event.is_user_annotation()
    except AttributeError:  # a torch without the flag: no op is trusted to have issued a copy
        return False


def _issued_by_initialisation(event: Any, issuers: dict[int, str]) -> bool:
    """A device event issued by a random draw of parameter initialisation (`aten::normal_`, `aten::uniform_`, ...)."""
    try:
        issued_by = issuers.get(event.linked_correlation_id(), "")
    except AttributeError:
        return False
    op = issued_by.removeprefix("aten::")
    return bool(op) and (op in INIT_OPS or op.rstrip("_") in INIT_OPS)


def _is_scalar_read(event: Any, issuers: dict[int, str]) -> bool:
    """A device-to-host copy of one element: issued by `.item()`'s op, or recorded by CUPTI as at most 8 bytes.

    The H200 (torch 2.11) records no size for a copy (an empty `metadata_json`), so the op that issued it is
    what tells a scalar read from a tensor's trip through host memory (`aten::copy_`).
    """
    try:
        issued_by = issuers.get(event.linked_correlation_id())
    except AttributeError:
        issued_by = None
    return issued_by == SCALAR_READ_OP or 0 < _copied_bytes(event) <= 8


def _copied_bytes(event: Any) -> int:
    """The bytes a copy event moved, as CUPTI recorded them (0 where unknown).

    torch's `_KinetoEvent` has no byte count of its own (no `nbytes`). Kineto can keep it in the event's metadata,
    written as the object's members (`"device": 0, ..., "bytes": 4, "memory bandwidth (GB/s)": ...`), without
    the braces and not always valid JSON (a copy too short to time has a bandwidth of `inf`), so the one
    member is read by pattern. Torch 2.11 on the H200 leaves a device event's metadata empty.
    """
    try:
        found = _COPY_BYTES.search(event.metadata_json() or "")
    except (TypeError, AttributeError, RuntimeError):
        return 0
    return int(found.group(1)) if found else 0


_COPY_BYTES = re.compile(r'"bytes"\s*:\s*(\d+)')


@contextlib.contextmanager
def _violation_named(guards: CandidateGuards) -> Iterator[None]:
    """A refused op raises inside the candidate's code: the violation it recorded is the failure, not the error."""
    try:
        yield
    except BaseException:
        guards.raise_if_violated()
        raise


@dataclass
class WatchedFigures:
    """What the watched first sample of a timed run showed (`own_work`): its calls, their launches through the
    harness's launcher, and (a GPU) the device time per call of everything its calls ran on the device."""

    calls: int = 0
    launches: int = 0
    own_kernel_ms: float | None = None


@dataclass
class StagedTiming:
    """A performance case readied for its timed calls (`StageTime` here, `StageReference` in the reference's
    worker): the model built, its input sets on the device."""

    model: torch.nn.Module
    input_sets: list[list[Any]]
    fresh_arguments: bool


class CandidateJob:
    """One candidate's stay in this worker: from `load` to `end`."""

    def __init__(self, request: Load, device: torch.device) -> None:
        self.request = request
        self.device = device
        self.folder = Path(request.job_dir)
        self.tmp = self.folder / "tmp"
        self.tmp.mkdir(exist_ok=True)
        writable = [self.folder, Path(request.triton_cache), Path(request.inline_build_root)]
        Path(request.launches_path).write_text("")
        self.guards = CandidateGuards(request, device, writable)
        self.module_name = request.module_name
        self.model_class: type | None = None
        self.model: torch.nn.Module | None = None
        self.last_inputs: list[Any] | None = None
        self.forwards = 0
        self.compile_seconds: float | None = None
        self.build_seconds = 0.0  # load_inline builds, wherever the candidate asked for them
        self.functions: dict[str, Any] | None = (
            None  # a function task's functions, as the candidate defined them
        )
        self.threads = _thread_count()
        self.saved_tmp: tuple[str | None, str | None] = (None, None)
        self.record_problem: str | None = None
        self.staged: dict[str, StagedTiming] = {}  # the performance cases `StageTime` readied for `Time`
        self.kept: dict[str, dict[int, Any]] = {}  # per case, the timed outputs `Time` kept for `WriteKept`


class CandidateHost:
    """Answers the parent's requests for one candidate at a time (`handle`)."""

    def __init__(self, bundles: BundleSender | None = None) -> None:
        self.job: CandidateJob | None = None
        self.bundles = bundles  # outputs as shared memory, when a request asks (`Forward.share`)

    def handle(self, request: CandidateRequest) -> dict[str, Any]:
        if isinstance(request, Load):
            return self._load(request)
        job = self.job
        if job is None:
            return {"failure_kind": "infrastructure_error", "failure_message": f"{request.OP} before load"}
        try:
            if isinstance(request, Build):
                return self._build(job, request)
            if isinstance(request, Forward):
                return self._forward(job, request)
            if isinstance(request, StageTime):
                return self._stage_time(job, request)
            if isinstance(request, Time):
                return self._time(job, request)
            if isinstance(request, WriteKept):
                return self._write_kept(job, request)
        except CandidateFailure as failure:
            if (
                failure.kind != "integrity_reject" and job.guards.violations.first
            ):  # the cause beats its symptom
                failure = CandidateFailure("integrity_reject", job.guards.violations.first)
            return {"failure_kind": failure.kind, "failure_message": failure.message}
        if isinstance(request, End):
            return self._end(job)
        return {
            "failure_kind": "infrastructure_error",
            "failure_message": f"unknown request {request!r}"[:200],
        }

    # -- load: the candidate module, watched ---------------------------------------------------------

    def _load(self, request: Load) -> dict[str, Any]:
        device = torch.device("cuda" if request.platform in ("cuda", "rocm") else "cpu")
        allow_tf32 = request.allow_tf32
        torch.backends.cuda.matmul.allow_tf32 = allow_tf32
        torch.backends.cudnn.allow_tf32 = allow_tf32
        torch.set_grad_enabled(False)
        if device.type == "cpu":
            untimed_autotuning()  # the interpreter has no driver to time configs with (`kernel_tasks`)
        prepare_device(device)  # the timing's flush buffer: made before any candidate exists in this process
        job = CandidateJob(request, device)
        self.job = job
        # Temporary files of this job (Triton's .ptx for ptxas, the candidate's own) go to its folder.
        job.saved_tmp = (tempfile.tempdir, os.environ.get("TMPDIR"))
        tempfile.tempdir = os.environ["TMPDIR"] = str(job.tmp)
        if request.language == "hip":
            prepare_hip(request, device, job)
        if device.type == "cuda":
            try:
                job.guards.record = DeviceRecord()
                job.guards.recorder.device_scope = job.guards.record.launch_scope
            except Exception as error:  # noqa: BLE001 - no profiler here: the tripwires remain, and the log says so
                job.record_problem = f"no device record: {one_line_error(error)}"
        try:
            # A function task's answer may try its function on `cuda` tensors at import ("example usage"):
            # on the CPU path that device is this CPU, as in its calls (`kernelvault.toolchain.function_tasks`).
            redirect = (
                device_redirect(device)
                if request.entry and device.type == "cpu"
                else contextlib.nullcontext()
            )
            with job.guards.watching("importing the candidate", construction=True), redirect:
                module = load_module(Path(request.candidate_path), job.module_name)
                # the task's own import lines (`function_tasks.test_imports`), not the candidate's
                for statement in request.test_imports:
                    exec(statement, vars(module))  # noqa: S102
            job.guards.raise_if_violated()
        except CandidateFailure as failure:
            return {"failure_kind": failure.kind, "failure_message": failure.message}
        except BaseException as error:  # noqa: BLE001 - sys.exit() at import is the candidate's failure
            try:
                job.guards.raise_if_violated()
            except CandidateFailure as failure:
                return {"failure_kind": failure.kind, "failure_message": failure.message}
            return {
                "failure_kind": "compile_error",
                "failure_message": f"candidate failed to import: {one_line_error(error)}",
            }
        entry = request.entry
        if entry:  # a function task: the candidate's functions, made into the module the harness runs
            names = list(request.entries or [entry])
            kernels = request.kernel_entries  # a kernel object has `[grid]`, not `__call__`
            missing = [name for name in names if not (hasattr(module, name) if kernels
                                                      else callable(_entry_or_none(module, name)))]  # fmt: skip
            if missing:
                return {"failure_kind": "static_reject",
                        "failure_message": f"the candidate defines no function {', '.join(missing)}"}  # fmt: skip
            functions = {name: resolve_entry(module, name) for name in names}
            refused = require_kernels(functions) if kernels else None
            if refused:  # something else under a kernel's name: nothing of it runs
                return {"failure_kind": "static_reject", "failure_message": refused}
            job.functions = functions
            job.model_class = lambda: function_module(functions, device)
            return {"ok": True}
        model_class = getattr(module, "ModelNew", None)
        if not isinstance(model_class, type):
            return {
                "failure_kind": "static_reject",
                "failure_message": "the candidate defines no class ModelNew",
            }
        job.model_class = model_class
        return {"ok": True}

    # -- build: ModelNew with the parent's weight seed -----------------------------------------------

    def _construct(self, job: CandidateJob, request: Build | StageTime) -> torch.nn.Module:
        init = read_tensors(Path(request.init_path))  # on the host, as get_init_inputs made them
        assert job.model_class is not None
        # the reference's weights: the same seed, drawn by the parent (torch.random's: a worker's torch.manual_seed
        # imports torch._dynamo on its first call, `serve.settle_dynamos_patch`)
        torch.random.manual_seed(int(request.weight_seed))
        try:
            with job.guards.watching("building ModelNew", construction=True):
                model = job.model_class(*init)
                model = model.to(job.device).eval()
        except CandidateFailure:
            raise
        except BaseException as error:  # noqa: BLE001
            job.guards.raise_if_violated()
            raise CandidateFailure(
                "interface_error", f"ModelNew{tuple(init)!r} failed: {one_line_error(error)}"
            ) from None
        job.guards.raise_if_violated()
        return model

    def _build(self, job: CandidateJob, request: Build) -> dict[str, Any]:
        job.model = None
        job.model = self._construct(job, request)
        return {"ok": True}

    # -- forward: one call on one input file ---------------------------------------------------------

    def _forward(self, job: CandidateJob, request: Forward) -> dict[str, Any]:
        assert job.model is not None
        fresh = list(read_tensors(Path(request.inputs_path), job.device, arguments=True))
        if request.reuse_inputs and job.last_inputs is not None:
            inputs = job.last_inputs  # the same tensors, new values: a result cached by address must fail
            for target, values in zip(argument_leaves(inputs), argument_leaves(fresh), strict=True):
                target.copy_(values)
        else:
            inputs = fresh
        job.last_inputs = inputs
        pristine = clone_value(inputs)
        poison = float("nan") if request.poison == "nan" else float(request.poison)
        poison_allocator(job.device, value=poison)
        started = time.perf_counter()
        with unwritten_memory_filled(job.device, job.guards):
            output = self._run_forward(job, job.model, inputs)
        seconds = time.perf_counter() - started
        if job.forwards == 1:
            job.compile_seconds = seconds  # the first forward holds the JIT compile on a GPU
        if job.functions is None:  # a function's arguments after the call are part of its result instead
            check_untouched_inputs(pristine, inputs, output)
        self._write_output(job, output, Path(request.output_path), request.share)
        return {"ok": True, "seconds": seconds}

    def _run_forward(self, job: CandidateJob, model: torch.nn.Module, inputs: list[Any]) -> Any:
        guards = job.guards
        recorder = guards.recorder
        launches_before = recorder.count
        threads_before = _thread_count()
        try:  # a forward that cannot take the task's inputs is an interface error, not a run-time one
            if job.functions is not None:
                check_calls_bind(job.functions, inputs)
            inspect.signature(model.forward).bind(*inputs)
        except CallsNotUnderstood as error:
            raise CandidateFailure("interface_error", str(error)) from None
        except TypeError as error:
            raise CandidateFailure(
                "interface_error", f"ModelNew.forward cannot take the task's inputs: {error}"
            ) from None
        except ValueError:  # no signature to read (a builtin): let the call itself decide
            pass
        job.forwards += 1
        try:
            scalars = [tensor for tensor in tensor_leaves(inputs) if tensor.dim() == 0]
            # a function task's differentiated calls run their backward inside the forward (`function_tasks`)
            differentiates = any(tensor.requires_grad for tensor in tensor_leaves(inputs))
            what = "forward and backward" if differentiates else "forward"
            with guards.watching(what, scalar_arguments=scalars):
                output = model(*inputs)
                # before anything reads it: a lazy output (a list subclass, a tensor subclass) would compute
                # when read, and the harness reads it after the monitor stops watching
                check_output_values(output, job.device)
                guards.monitor.check_output(output)
                if guards.expect_filled_memory and not _filling_unwritten_memory():
                    guards.violations.add(
                        "monkey_patch", "the candidate turned off the filling of uninitialised memory"
                    )
                sync_device(job.device)
        except CandidateFailure:
            raise
        except BaseException as error:  # SystemExit and friends are the candidate's failures too
            if isinstance(error, KeyboardInterrupt):
                raise
            guards.raise_if_violated()  # a refused thread or write surfaces as an exception: name the cause
            if is_triton_compile_error(error) or isinstance(error, InlineBuildError):
                raise CandidateFailure("compile_error", one_line_error(error)) from None
            raise CandidateFailure("runtime_error", f"forward raised {one_line_error(error)}") from None
        if job.forwards > 1 and _thread_count() > max(threads_before, job.threads):
            guards.violations.add(
                "threads", "forward left a thread running (started below the threading module)"
            )
        guards.raise_if_violated()
        if recorder.count == launches_before:
            raise CandidateFailure(
                "integrity_reject", "no_kernel_launched: forward launched no kernel of its own"
            )
        return output

    def _write_output(self, job: CandidateJob, output: Any, path: Path, share: bool = False) -> None:
        """The output to the parent: a file at `path`, or (`share`) a bundle named by it."""
        check_output_values(output, job.device)
        if share and self.bundles is None:
            raise CandidateFailure(
                "infrastructure_error", "shared outputs asked of a worker without a bundle channel"
            )
        with job.guards.watching("forward (its output written out)", device=False):
            if share and self.bundles is not None:
                self.bundles.send(str(path), output, job.device)
            else:
                write_tensors(path, output)
        job.guards.raise_if_violated()

    # -- time: the performance case's timed calls ----------------------------------------------------

    def _stage_time(self, job: CandidateJob, request: StageTime) -> dict[str, Any]:
        model = self._construct(job, request)
        input_sets = [
            list(read_tensors(Path(path), job.device, arguments=True)) for path in request.inputs_paths
        ]
        # Once more with launches observed, then (in `Time`) timed without the recorder (it costs host time
        # per launch) and without the device's record (the timed calls run as they would anywhere else).
        self._run_forward(job, model, list(input_sets[0]))
        self._close_record(job)
        job.staged[request.case] = StagedTiming(model, input_sets, request.fresh_arguments)
        return {"ok": True}

    def _time(self, job: CandidateJob, request: Time) -> dict[str, Any]:
        staged = job.staged.pop(request.case, None)  # one timing per staging: the inputs are freed after it
        if staged is None:
            return {"failure_kind": "infrastructure_error", "failure_message": "time before stage_time"}
        model, input_sets, fresh = staged.model, staged.input_sets, staged.fresh_arguments
        recorder = job.guards.recorder
        recorder.enabled = False
        recorder.unwatched = 0
        calls = [0]
        figures = WatchedFigures()

        def run_candidate(inputs: Any) -> Any:
            calls[0] += 1
            return model(*clone_value(inputs)) if fresh else model(*inputs)

        def watched_sample(inputs: list[Any], run_sample: Callable[[], list[object]]) -> list[object]:
            return self._watched_sample(job, inputs, run_sample, calls, figures)

        try:
            stats = time_staged(run_candidate, input_sets, repetitions=request.repetitions, warmup=request.warmup,
                                device=job.device, calls_per_sample=request.calls_per_sample, inputs=request.inputs,
                                timing_seed=request.timing_seed, keep=RandomKeep(), strict=True,
                                watched=watched_sample)  # fmt: skip
        except TimedCallViolation as violation:
            raise CandidateFailure("integrity_reject", violation.message) from None
        except CandidateFailure:
            raise
        except Exception as error:
            raise CandidateFailure("runtime_error", f"failed while timed: {one_line_error(error)}") from None
        finally:
            recorder.enabled = True
        # The staged model goes now, watched, and the device finishes what its finalizers queued before the reply:
        # code run when the model is dropped (a generator's `finally`, a `__del__`) would otherwise run unwatched
        # after the last synchronisation and could leave work queued that slows the reference, timed next.
        with job.guards.watching("the timed model, dropped", device=False):
            staged = model = None  # the last references (unless the candidate made a cycle: the collection's)
            gc.collect()
        sync_device(job.device)
        job.guards.raise_if_violated()
        replaced = harness_replaced()
        # The figures just measured used the bound objects; the next job's must not meet the patch.
        if replaced:
            raise CandidateFailure("integrity_reject", _harness_message(replaced))
        job.kept[request.case] = stats.outputs
        # the parent holds the timed calls to what the watched sample did (`own_work`), once their checksums passed
        return {
            **stats.reply(),
            "own_kernel_ms": figures.own_kernel_ms,
            "watched_calls": figures.calls,
            "watched_launches": figures.launches,
            "timed_calls": calls[0] - figures.calls,
            "timed_launches": recorder.unwatched,
        }

    def _watched_sample(self, job: CandidateJob, inputs: list[Any], run_sample: Callable[[], list[object]],
                        calls: list[int], figures: WatchedFigures) -> list[object]:  # fmt: skip
        """The timed run's first sample, watched as a checked call is (`own_work`): the monitor on, the launches
        recorded and (a GPU) the device work its calls caused taken. Its outputs are checksummed like every
        sample's, so its work is checked; its span is left out of the median."""
        guards, recorder = job.guards, job.guards.recorder
        scalars = [
            tensor for call_inputs in inputs for tensor in tensor_leaves(call_inputs) if tensor.dim() == 0
        ]
        calls_before, launches_before = calls[0], recorder.count
        outputs: list[list[object]] = []
        started = [False]

        def watched_run() -> None:
            started[0] = True
            with (
                guards.watching("a timed sample, watched", scalar_arguments=scalars),
                _violation_named(guards),
            ):
                outputs.append(run_sample())

        own_ms = None
        recorder.enabled = True
        try:  # the profile outside the monitor, as around a checked forward: its own start is not candidate code
            if job.device.type == "cuda" and job.record_problem is None:
                try:
                    own_ms = device_work_ms(watched_run)
                except CandidateFailure:
                    raise
                except Exception as error:  # noqa: BLE001 - the profiler failed: the launch count remains
                    if started[0] and not outputs:
                        raise  # the sample itself failed
                    job.record_problem = f"no own-work figure: {one_line_error(error)}"
            if not outputs:
                watched_run()
        finally:
            recorder.enabled = False
        guards.raise_if_violated()
        sample_calls = calls[0] - calls_before
        figures.calls += sample_calls
        figures.launches += recorder.count - launches_before
        figures.own_kernel_ms = own_ms / sample_calls if own_ms is not None and sample_calls else None
        return outputs[0]

    def _write_kept(self, job: CandidateJob, request: WriteKept) -> dict[str, Any]:
        """The kept outputs the parent drew, written out (then dropped: each is judged once)."""
        kept = job.kept.pop(request.case, {})
        for sample, path in request.outputs.items():
            if int(sample) not in kept:
                return {"failure_kind": "infrastructure_error",
                        "failure_message": f"write_kept: sample {sample} of case {request.case} was not kept"}  # fmt: skip
            self._write_output(job, kept[int(sample)], Path(path), request.share)
        return {"ok": True}

    # -- end: take everything down -------------------------------------------------------------------

    def _close_record(self, job: CandidateJob) -> None:
        """Stop the device's record; what ran in the candidate's windows that was not its own is a violation."""
        record = job.guards.record
        if record is None or record.stopped:
            return
        recorder = job.guards.recorder
        recorder.device_scope = None
        # A HIP job's launch functions may each launch any number of its kernels; a Triton launch is one kernel.
        budget = None if job.request.language == "hip" else sum(recorder.recorded_launches.values())
        foreign = record.finish(OwnKernelNames(budget))
        if foreign:
            shown = "; ".join(name[:120] for name in foreign[:3])
            raise CandidateFailure("integrity_reject", f"device_record: the device ran {len(foreign)} kernel(s) or copies "
                                   f"that are not the candidate's own while its code ran: {shown}")  # fmt: skip

    def _take_down(self, job: CandidateJob) -> None:
        job.guards.uninstall()
        restore_load_inline()
        sys.modules.pop(job.module_name, None)
        job.model = job.last_inputs = job.model_class = None
        job.staged.clear()
        job.kept.clear()
        self.job = None
        tempfile.tempdir = job.saved_tmp[0]
        if job.saved_tmp[1] is None:
            os.environ.pop("TMPDIR", None)
        else:
            os.environ["TMPDIR"] = job.saved_tmp[1]
        clear_folder(Path("/tmp"))  # the jail's private /tmp: nothing is left for the next job

    def _end(self, job: CandidateJob) -> dict[str, Any]:
        if self.bundles is not None:
            self.bundles.release()  # the parent has judged every output of the job
        late = None
        replaced = harness_replaced()
        try:
            try:
                job.guards.raise_if_violated()
                self._close_record(job)
            except CandidateFailure as failure:
                # a refused launch argument was already the failure of its request
                late = failure.message if failure.kind == "integrity_reject" else None
            if replaced and late is None:  # the worker is replaced (`serve`): no later job meets the patch
                late = _harness_message(replaced)
            stray = kill_other_processes()
            if stray and late is None:
                late = f"subprocess: {stray} process(es) the candidate started were still running after its job"  # fmt: skip
        finally:
            # Taken down whatever happened above: a harness error here must not leave this job's wrappers on
            # PyTorch for the next one (the worker would be replaced as `patched` after every job).
            self._take_down(job)
        record = job.guards.record
        return {"ok": True, "kernels": job.guards.recorder.kernels, "compile_seconds": job.compile_seconds,
                "build_seconds": job.build_seconds, "late_violation": late, "stray_processes": stray,
                "device_record": job.record_problem or (f"{record.windows} window(s) recorded" if record else None)}  # fmt: skip


def _harness_message(replaced: list[str]) -> str:
    return f"monkey_patch: the timing harness was replaced ({', '.join(replaced[:5])})"


def kill_other_processes() -> int:
    """In a jail this process is PID 1 of its namespace: kill every other process in it (a double fork with
    setsid included) and reap them. Returns how many there were. Outside a jail, there is nothing to do."""
    if os.getpid() != 1:
        return 0
    import signal

    others = [name for name in os.listdir("/proc") if name.isdigit() and name != "1"]
    if others:
        try:
            os.kill(-1, signal.SIGKILL)
        except ProcessLookupError:
            pass
    while True:
        try:
            pid, _ = os.waitpid(-1, os.WNOHANG)
        except ChildProcessError:
            break
        if pid == 0:
            time.sleep(0.01)
            if not [name for name in os.listdir("/proc") if name.isdigit() and name != "1"]:
                break
    return len(others)


def clear_folder(folder: Path) -> None:
    """Empty the jail's private /tmp, but never past its own filesystem: the worker's home and other folders
    bound into the jail may sit under /tmp (the host's /tmp holds them), and they are not ours to empty."""
    if str(folder) != "/tmp" or os.getpid() != 1 or not folder.is_dir():
        return  # only the jail's own /tmp, never a shared one
    device = os.lstat(folder).st_dev

    def remove(path: str) -> None:
        try:
            info = os.lstat(path)
        except OSError:
            return
        if info.st_dev != device:
            return  # a mount point: a folder bound in from the host
        if stat.S_ISDIR(info.st_mode):
            for name in os.listdir(path):
                remove(os.path.join(path, name))
            with contextlib.suppress(OSError):  # not empty: it holds a mount point
                os.rmdir(path)
        else:
            with contextlib.suppress(OSError):
                os.unlink(path)

    for name in os.listdir(folder):
        remove(os.path.join(folder, name))


# ----------------------------------------------------------------------------------------------------
# HIP: the native form's prebuilt library, or the KernelBench load_inline form built here.


def prepare_hip(request: Load, device: torch.device, job: CandidateJob) -> None:
    """Before the candidate exists: its prebuilt library (native form) or our load_inline (KernelBench form)."""
    if request.hip_form == "native":
        assert request.hip_source_sha is not None and request.hip_library is not None
        hip_runtime.register_prebuilt(request.hip_source_sha, request.hip_library)
        return
    from torch.utils import cpp_extension

    # PyTorch's own function, not the wrapper an earlier job of a persistent worker left behind.
    original = _ORIGINAL_LOAD_INLINE.setdefault("load_inline", cpp_extension.load_inline)
    signature = inspect.signature(original)
    root = Path(request.inline_build_root)

    def kernelvault_load_inline(*args: Any, **kwargs: Any) -> Any:
        bound = signature.bind(*args, **kwargs)
        bound.apply_defaults()
        arguments = bound.arguments
        # The C++ that is compiled is the C++ the wall reads: sources built at run time (joined, formatted,
        # replaced) never met the static stage, which read only the module's string literals.
        texts = [arguments.get("cpp_sources") or [], arguments.get("cuda_sources") or []]
        for text in [
            item for group in texts for item in ([group] if isinstance(group, str) else list(group))
        ]:
            findings = check_cpp(str(text))
            if findings:
                job.guards.violations.add("hip_source", f"the C++ given to load_inline: {findings[0].reason}")
                raise InlineBuildError(f"refused: {findings[0].reason}")
        # Its kernels are built under the harness's prefix, the names the device record knows them by.
        cuda_sources = arguments.get("cuda_sources")
        if isinstance(cuda_sources, str):
            arguments["cuda_sources"] = prefixed_kernel_source(cuda_sources)
        elif cuda_sources:
            arguments["cuda_sources"] = [prefixed_kernel_source(str(text)) for text in cuda_sources]
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
        build_directory = root / key  # content-addressed within this worker's own build folder
        build_directory.mkdir(parents=True, exist_ok=True)
        arguments["build_directory"] = str(build_directory)
        arguments["verbose"] = False
        started = time.perf_counter()
        try:
            extension = original(*bound.args, **bound.kwargs)
        except Exception as error:  # the build failed: that is the candidate's compile error
            raise InlineBuildError(one_line_error(error)) from None
        job.build_seconds += time.perf_counter() - started
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
        attribute = getattr(self._module, name)
        if not callable(attribute):
            return attribute

        def launch(*args: Any, **kwargs: Any) -> Any:
            observer = hip_runtime.launch_observer()
            scope = observer(name) if observer is not None else None
            with scope if scope is not None else contextlib.nullcontext():
                return attribute(*args, **kwargs)

        return launch

"""Function tasks: a reference *function* and a test that calls it (TritonBench-T's layout), beside modules.

A function task file is the reference (one or more functions), a separator line of `#` only, then a test:
a `test_*` function that calls the reference on a few inputs, usually run by a module-level line
(`test_results = test_add()`). TritonBench-T ships 166 of these; kernel-generation pipelines derive the
same functional form from `nn.Module` programs.

How such a task is checked, in the same protocol as a module task (`kernelvault.toolchain.judge`):

- **Inputs are the test's own calls, recorded.** The reference's worker runs the test with the entry
  function replaced by a recorder, under a seed the parent drew; each call's arguments (positional, then
  keyword) are kept as they were before the call. A case's input set is the list of those calls.
- **A call's result is what it returns plus its tensor arguments after the call.** In-place APIs
  (`out=`, optimiser steps, `relu_`) are judged by what they leave in their arguments, against what the
  reference leaves; so changing an argument is not an integrity failure here, and an output that is an
  argument is not one either (the module form's `modified_inputs` / `output_aliases_input` stay off).
- **`FunctionCall`** (`kernelvault.toolchain.task_calls`) turns the functions into the module both workers already run: `forward(*calls)` makes
  every call in order and returns one `(returned, arguments_after)` pair per call.
- **Gradients.** A test that differentiates (`loss.backward()` on a call's output, then reads `x.grad`: 17 of
  TritonBench-G's operators are `torch.autograd.Function`s tested so) runs with autograd on while recorded. A
  call whose outputs carried a gradient there keeps its arguments' `requires_grad` in the recorded input set;
  every other call's arguments are recorded without it. `FunctionCall` differentiates each call with such
  arguments, on both sides: the outputs that carry a gradient, against upstream gradients drawn from a fixed
  seed per call and output (`upstream_gradient`: random, so a backward that ignores its incoming gradient
  fails), and the call's result gains a third part, the gradient of every argument that requires it. A candidate
  whose outputs carry no gradient there (no backward) fails that call with a clear error, as the test's own
  `.backward()` would. Performance inputs are recorded without gradients (timing runs the forward).
- **The candidate** defines functions with the same names (a test may call several: a forward and a
  backward); its worker wraps them the same way, so the integrity layer (torch doing the work, launches
  observed, cached results), the judge and timing are those of the module form. An `nn.Module` a test passes
  as an argument reaches both workers as its data (`tensor_files.ModuleArgument`).
- **Performance inputs.** A test's calls are small (TritonBench-T's are a few elements), so timing them
  measures launch overhead. Where a suite ships larger inputs (TritonBench's `perf_T` programs), the
  loader embeds the program in the task as `KERNELVAULT_PERFORMANCE_INPUTS`, a string after the test
  (`with_performance_program`), so the task row carries its own inputs wherever it goes. Its calls are
  recorded like the test's (`record_performance_calls`) and form one correctness case and the performance
  case: correctness first, so that a candidate right on the tiny calls and wrong on large ones is a
  `mismatch` and never reaches timing. On a GPU the largest input set of at most
  `PERFORMANCE_BYTES_MAX` is used; on the CPU (the interpreter) the smallest.
- **`cuda` in a test on a CPU machine.** TritonBench's tests write `device='cuda'`. Where the worker runs
  on the CPU (the interpreter path), `DeviceRedirect` maps every accelerator device that a torch call
  names to the CPU, for the test and for the candidate's call alike; on a GPU nothing is redirected.

Everything here is read from the syntax tree in the pipeline's process (`function_layout`); the test and
the reference run only in workers.
"""

from __future__ import annotations

import ast
import contextlib
import copy
import functools
import hashlib
import inspect
import linecache
import re
import sys
import types
from collections.abc import Callable, Iterator
from dataclasses import dataclass
from typing import Any

from kernelvault.toolchain.error_text import one_line_error
from kernelvault.toolchain.static_check import is_triton_jit

_SEPARATOR = re.compile(r"^#{20,}[ \t]*$", re.MULTILINE)
PERFORMANCE_NAME = "KERNELVAULT_PERFORMANCE_INPUTS"  # a perf program embedded after the test (a string)
PERFORMANCE_INPUTS_OVERRIDE = "inputs"  # a case override: {"inputs": "performance"} uses that program
PERFORMANCE_BYTES_MAX = 256 << 20  # the largest performance input set timed on a GPU (all its tensors)


class FunctionTaskError(ValueError):
    """A file that is not a function task (one-line reason)."""


@dataclass(frozen=True)
class FunctionLayout:
    reference: str  # the source before the separator: the reference function(s) and what they import
    test: str  # the source after it: the test function and the line that runs it
    entry: str  # the task's function (named like the task where the test calls one so named)
    test_functions: tuple[str, ...]  # the `test_*` functions, run by the test's own code or by us
    entries: tuple[str, ...]  # every reference function the test calls (a forward and a backward, say)
    performance: str | None = None  # the embedded performance-input program, where the task has one
    # True: the entries are Triton kernels the test launches as `name[grid](...)` (ROCmBench's layout,
    # `kernelvault.toolchain.kernel_tasks`); a candidate defines kernels of the same names, not Python functions.
    kernels: bool = False


def _launched_names(tree: ast.AST) -> set[str]:
    """Names launched as `name[grid](...)` anywhere in `tree` (a wrapper in the test part included), and the
    names bound to them by a plain `alias = name` (`matmult_kernel = triton_dot_matmul_kernel`)."""
    launched = {
        node.func.value.id
        for node in ast.walk(tree)
        if isinstance(node, ast.Call)
        and isinstance(node.func, ast.Subscript)
        and isinstance(node.func.value, ast.Name)
    }
    for node in ast.walk(tree):
        if isinstance(node, ast.Assign) and isinstance(node.value, ast.Name):
            if any(isinstance(target, ast.Name) and target.id in launched for target in node.targets):
                launched.add(node.value.id)
    return launched


def _class_method_calls(tree: ast.AST, classes: set[str]) -> set[str]:
    """`Class.method` for each call of a method of a reference-part class made on the class itself
    (`AttentionFunction.apply(q, k, v)`, `matmul.forward(None, a, b)`): four of TritonBench-G's tests call their
    `torch.autograd.Function` so. A candidate defines the class with that method."""
    return {
        f"{node.func.value.id}.{node.func.attr}"
        for node in ast.walk(tree)
        if isinstance(node, ast.Call)
        and isinstance(node.func, ast.Attribute)
        and isinstance(node.func.value, ast.Name)
        and node.func.value.id in classes
    }


def resolve_entry(owner: Any, name: str) -> Any:
    """An entry of a loaded module (or a module's namespace dict): a function, or `Class.method` (AttributeError
    or KeyError where it is missing)."""
    head, *rest = name.split(".")
    value = owner[head] if isinstance(owner, dict) else getattr(owner, head)
    for attribute in rest:
        value = getattr(value, attribute)
    return value


def _called_names(tree: ast.AST) -> set[str]:
    return {
        node.func.id
        for node in ast.walk(tree)
        if isinstance(node, ast.Call) and isinstance(node.func, ast.Name)
    }


@functools.lru_cache(maxsize=512)  # a verification asks for its task's layout several times; parse it once
def function_layout(source: str, name: str) -> FunctionLayout:
    """The reference part, the test part and the entry function of a function task, or FunctionTaskError.

    The entries are the reference-part functions the test calls, and a candidate defines them all; the
    entry, which names the task, is the one named like the task (TritonBench names each file after its
    function), else the first.
    """
    separators = list(_SEPARATOR.finditer(source))
    if not separators:
        raise FunctionTaskError("no separator line of '#' between a reference function and its test")
    # The longest line of '#' (the last of the longest): ROCmBench's tests carry shorter banner lines of
    # their own below the 146-character separator that TritonBench and GEAK-eval both use.
    cut = max(separators, key=lambda match: (len(match.group().rstrip()), match.start()))
    reference, test = source[: cut.start()], source[cut.end() :]
    try:
        reference_tree, test_tree = ast.parse(reference), ast.parse(test)
    except SyntaxError as error:
        raise FunctionTaskError(f"not valid Python: {error.msg} (line {error.lineno})") from None
    defined = [node.name for node in reference_tree.body if isinstance(node, ast.FunctionDef)]
    defined += _function_aliases(reference_tree)
    if not defined:
        raise FunctionTaskError("the part before the separator defines no function")
    tests = tuple(
        dict.fromkeys(  # a name defined twice is one test (the later definition), as pytest sees it
            node.name
            for node in test_tree.body
            if isinstance(node, ast.FunctionDef) and node.name.startswith("test")
        )
    )
    if not tests:
        raise FunctionTaskError("the part after the separator defines no test_* function")
    kernels = [
        node.name
        for node in reference_tree.body
        if isinstance(node, ast.FunctionDef) and any(map(is_triton_jit, node.decorator_list))
    ]
    launched = [kernel for kernel in kernels if kernel in _launched_names(test_tree)]
    stem = name.rsplit("/", 1)[-1]
    if launched:  # the test launches reference kernels: those are what a candidate writes
        entry = stem if stem in launched else launched[0]
        return FunctionLayout(reference, test, entry, tests, tuple(launched), kernels=True)
    called = [function for function in defined if function in _called_names(test_tree)]
    classes = {node.name for node in reference_tree.body if isinstance(node, ast.ClassDef)}
    called += sorted(_class_method_calls(test_tree, classes))
    if not called:
        raise FunctionTaskError(
            f"the test calls none of the reference's functions ({', '.join(defined[:5])})"
        )
    if kernels:  # a Triton gold (TritonBench-G): its PyTorch-only helpers are the test's preparation
        operators = [
            function
            for function in called
            if function.split(".")[0] in _reaching_kernels(reference_tree, kernels)
        ]
        called = operators or called
    entry = stem if stem in called else called[0]
    return FunctionLayout(reference, test, entry, tests, tuple(called), _embedded_program(test_tree))


def _reaching_kernels(tree: ast.Module, kernels: list[str]) -> set[str]:
    """The reference part's module-level names (functions, classes, assigned names) that reach one of its Triton
    kernels by name, directly or through other such names: a wrapper that launches one, an autograd Function
    whose method calls that wrapper, an alias of either.

    A function the test calls that reaches none is PyTorch preparing the test's inputs (G's
    `matmul_dequantize_int4` packs its weights with `quantize_int4`, all PyTorch): it stays the reference's own
    (the test calls it unrecorded) and is no entry. As an entry, a candidate's copy of it, PyTorch like the
    gold's, was a `torch_compute` reject (2026-12-04, H200), and a candidate had to define it to pass."""
    bodies: dict[str, list[ast.AST]] = {}
    for node in tree.body:
        if isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef, ast.ClassDef)):
            bodies.setdefault(node.name, []).append(node)
        elif isinstance(node, (ast.Assign, ast.AnnAssign)):
            targets = node.targets if isinstance(node, ast.Assign) else [node.target]
            for target in targets:
                for name in ast.walk(target):
                    if isinstance(name, ast.Name):
                        bodies.setdefault(name.id, []).append(node)
    refers = {
        name: {leaf.id for node in nodes for leaf in ast.walk(node) if isinstance(leaf, ast.Name)} - {name}
        for name, nodes in bodies.items()
    }
    reaching = set(kernels)
    changed = True
    while changed:  # a fixed point over the reference's own names (a handful)
        changed = False
        for name, names in refers.items():
            if name not in reaching and names & reaching:
                reaching.add(name)
                changed = True
    return reaching


def _function_aliases(tree: ast.Module) -> list[str]:
    """Module-level names bound to an autograd function's `apply` (`layer_norm = LayerNorm.apply`): how the
    operators that define their own backward expose it (TritonBench-G's `torch.autograd.Function`s); a test calls
    that name, and a candidate defines it, as a function or as the same kind of binding."""
    return [
        target.id
        for node in tree.body
        if isinstance(node, ast.Assign)
        and isinstance(node.value, ast.Attribute)
        and node.value.attr == "apply"
        for target in node.targets
        if isinstance(target, ast.Name)
    ]


def _embedded_program(test_tree: ast.Module) -> str | None:
    for node in test_tree.body:
        if (
            isinstance(node, ast.Assign)
            and [getattr(target, "id", None) for target in node.targets] == [PERFORMANCE_NAME]
            and isinstance(node.value, ast.Constant)
            and isinstance(node.value.value, str)
        ):
            return node.value.value
    return None


def performance_program_problem(program: str) -> str | None:
    """Why a perf program cannot run, where its text shows it (not valid Python, a name no scope defines:
    TritonBench's `tril_mm_and_scale_perf.py` uses an undefined `p`), else None."""
    import builtins
    import symtable

    try:
        top = symtable.symtable(program, "<performance>", "exec")
    except SyntaxError as error:
        return f"not valid Python: {error.msg} (line {error.lineno})"
    defined = {
        symbol.get_name()
        for symbol in top.get_symbols()
        if symbol.is_assigned() or symbol.is_imported() or symbol.is_namespace()
    } | {"__file__", "__name__"}
    undefined: set[str] = set()
    tables = [top]
    while tables:
        table = tables.pop()
        tables.extend(table.get_children())
        undefined |= {
            symbol.get_name()
            for symbol in table.get_symbols()
            if symbol.is_global() and symbol.is_referenced() and not symbol.is_declared_global()
            and symbol.get_name() not in defined and not hasattr(builtins, symbol.get_name())
        }  # fmt: skip
    return f"undefined name(s) {', '.join(sorted(undefined))}" if undefined else None


def with_performance_program(source: str, program: str, origin: str) -> str:
    """`source` with a performance-input program appended after its test (see the module docstring)."""
    return (
        f"{source.rstrip()}\n\n\n# KernelVault: this task's performance inputs, from {origin}\n"
        f"{PERFORMANCE_NAME} = {program!r}\n"
    )


def test_imports(task: Any) -> tuple[str, ...]:
    """The module-level import statements of a function task's test, except those of the task's own file.

    TritonBench's evaluator runs the answer and the test as one file, so a name the test imports (`torch`,
    `math`, `Tensor`) is in the answer's globals by the time the test calls it; the candidate's worker runs
    these statements in the candidate's module after importing it, to the same effect."""
    if not getattr(task, "entry", None):
        return ()
    layout = function_layout(task.source, task.entry)
    own = {entry.split(".")[0] for entry in layout.entries} | {task.name.rsplit("/", 1)[-1]}
    if layout.kernels:  # the test harness's own modules, stood in for in the reference's worker only
        own |= {"pytest", "geak_eval"}
    statements = []
    for node in ast.parse(layout.test).body:
        if isinstance(node, ast.Import) and not any(alias.name.split(".")[0] in own for alias in node.names):
            statements.append(ast.unparse(node))
        elif (
            isinstance(node, ast.ImportFrom)
            and node.level == 0
            and (node.module or "").split(".")[0] not in own
        ):
            statements.append(ast.unparse(node))
    return tuple(statements)


def function_entries(task: Any) -> tuple[str, ...]:
    """The functions a candidate for `task` must define (none for a module task)."""
    if not getattr(task, "entry", None):
        return ()
    return function_layout(task.source, task.entry).entries


# ----------------------------------------------------------------------------------------------------
# In the workers (these import torch).


def _is_accelerator(device: Any) -> bool:
    import torch

    if isinstance(device, torch.device):
        return device.type != "cpu"
    if isinstance(device, str):
        return device.split(":", 1)[0] in ("cuda", "hip", "xpu", "mps")
    return isinstance(device, int) and not isinstance(device, bool)


def device_redirect(target: Any) -> Any:
    """A TorchFunctionMode mapping accelerator devices named in torch calls to `target` (the CPU path)."""
    import torch
    from torch.overrides import TorchFunctionMode

    class DeviceRedirect(TorchFunctionMode):
        def __torch_function__(self, func, types, args=(), kwargs=None):  # noqa: ANN001, ANN204
            kwargs = dict(kwargs or {})
            if _is_accelerator(kwargs.get("device")):
                kwargs["device"] = target
            if func is torch.Tensor.cuda:
                return args[0].to(target)
            if func is torch.Tensor.to:
                args = tuple(target if _is_accelerator(item) else item for item in args)
            return func(*args, **kwargs)

    return DeviceRedirect()


def cpu_device_selection() -> None:
    """On the CPU path, `torch.cuda.device(...)` and `torch.cuda._DeviceGuard(...)` select nothing.

    Real Triton code wraps its launches in `with torch.cuda.device(x.device.index):` (11 of TritonBench-G's
    gold operators, and answers that copy them) or in the private `torch.cuda._DeviceGuard(index)` (5 more). On
    the CPU path the test's `cuda` tensors are CPU tensors (`device_redirect`), whose index is None and whose
    device is `cpu`: PyTorch documents `torch.cuda.device` as a no-op for None, but its CPU build compares None
    with 0 (TypeError), refuses a `cpu` device (ValueError) and any CUDA index ("compiled without CUDA
    support"). Here every selection selects nothing, as on a one-GPU machine: on the CPU path every `cuda` is
    the CPU. Only in a CPU build of PyTorch (which can select no CUDA device anyway), once per worker, before
    its patch snapshot and before any task or candidate code runs (`sandboxed.serve`, `sandboxed.task_check`)."""
    import torch

    if torch.backends.cuda.is_built() or getattr(torch.cuda.device, "cpu_path", False):
        return  # a build that can select a CUDA device keeps PyTorch's own; installed once

    class CpuPathDevice(torch.cuda.device):
        cpu_path = True

        def __init__(self, device: Any) -> None:
            self.idx, self.prev_idx = -1, -1  # index -1: PyTorch's own "no device", touching no driver

    class CpuPathDeviceGuard(torch.cuda._DeviceGuard):
        def __init__(self, index: Any) -> None:
            self.idx, self.prev_idx = -1, -1

    torch.cuda.device = CpuPathDevice  # type: ignore[misc, assignment]
    torch.cuda._DeviceGuard = CpuPathDeviceGuard  # type: ignore[misc, assignment]


def compile_task_part(source: str, part: str) -> types.CodeType:
    """A part of a task file (its test, its performance program) compiled under a file name that `inspect` can
    read back: Triton's `@triton.jit` reads a kernel's source with `inspect.getsourcelines`, and a kernel the
    test part defines (TritonBench-G's and ROCmBench's often do) fails to compile on a GPU from `<test>`. The
    lines go into `linecache` (no modification time: `checkcache` keeps them), under a name that is this
    source's own, so two tasks in one worker never read each other's lines."""
    name = f"/kv-task-parts/{part}-{hashlib.sha256(source.encode()).hexdigest()[:16]}.py"
    linecache.cache[name] = (len(source), None, source.splitlines(keepends=True), name)
    return compile(source, name, "exec")


def clone_value(value: Any) -> Any:
    """A copy of a nest of tensors and plain values: tensors cloned, containers rebuilt."""
    import torch

    if isinstance(value, torch.Tensor):
        cloned = value.detach().clone()
        return (
            cloned.requires_grad_(True) if value.requires_grad else cloned
        )  # a leaf a test differentiates by
    if isinstance(value, dict):
        return {key: clone_value(item) for key, item in value.items()}
    if isinstance(value, (list, tuple)) and not hasattr(value, "_fields"):
        return type(value)(clone_value(item) for item in value)
    if isinstance(value, torch.nn.Module):  # a module argument: a call may update its state in place
        try:
            return copy.deepcopy(value)
        except Exception:  # noqa: BLE001 - a module holding what cannot be copied is passed as it is
            return value
    return value


def tensor_leaves(value: Any) -> list[Any]:
    """The tensors in a nest of lists, tuples and dicts, in order."""
    import torch
    import torch.utils._pytree as pytree

    return [leaf for leaf in pytree.tree_leaves(value) if isinstance(leaf, torch.Tensor)]


NOTHING_TO_JUDGE = (
    "the test's calls return no tensor and have no tensor argument: nothing to judge (a candidate that "
    "does nothing would pass; e.g. an entry that makes its own inputs and asserts on them)"
)


def nothing_to_judge(judged: Any) -> bool:
    """Whether a function task's judged results (`judged_result` of every call) hold no tensor at all: its
    calls return nothing (or strings) and their arguments are numbers, so any candidate would match them."""
    return not tensor_leaves(judged)


def argument_leaves(value: Any) -> list[Any]:
    """The tensors of a call's arguments as the judge reads them after the call: those of the nest, then each
    module argument's (`ModuleArgument`), so that a call that updates a module's state in place (a batch
    norm's running statistics, a cache) is judged by that state too."""
    import torch
    import torch.utils._pytree as pytree

    leaves = tensor_leaves(value)
    for leaf in pytree.tree_leaves(value):
        if isinstance(leaf, torch.nn.Module):
            leaves.extend(_module_tensors(leaf))
    return leaves


def _module_tensors(module: Any) -> list[Any]:
    """A module's tensors by name (parameters, buffers and tensor attributes), then its children's, by name."""
    import torch

    public = {key: item for key, item in vars(module).items() if not key.startswith("_")}
    state = {**module._parameters, **module._buffers, **public}
    found = [state[key] for key in sorted(state) if isinstance(state[key], torch.Tensor)]
    for key in sorted(module._modules):
        if module._modules[key] is not None:
            found.extend(_module_tensors(module._modules[key]))
    return found


def judged_result(returned: Any, args: list[Any], kwargs: dict[str, Any]) -> tuple[Any, list[Any]]:
    """What one call is judged by: its return value (numbers as tensors, None as nothing; a named tuple as
    a tuple) and its tensor arguments as the call left them (`argument_leaves`)."""
    import torch

    def plain(value: Any) -> Any:
        if value is None:
            return ()
        if isinstance(value, bool | int | float):
            return torch.tensor(value)
        if isinstance(value, (list, tuple)):
            return tuple(plain(item) for item in value)
        return value

    return plain(returned), argument_leaves([args, kwargs])


def same_values(first: Any, second: Any) -> bool:
    """Two nests with equal tensors (NaN equal to NaN) and equal plain values, in the same places."""
    import torch

    left, right = tensor_leaves(first), tensor_leaves(second)
    return len(left) == len(right) and all(
        a.shape == b.shape and a.dtype == b.dtype and torch.equal(a.nan_to_num(), b.nan_to_num())
        if a.is_floating_point() else a.shape == b.shape and torch.equal(a, b)
        for a, b in zip(left, right, strict=True)
    )  # fmt: skip


class CallsNotUnderstood(TypeError):
    """A call the function's signature cannot take (the candidate's interface, not its run time)."""


def check_calls_bind(functions: dict[str, Callable[..., Any]], calls: list[Any]) -> None:
    for index, (name, args, kwargs, *_) in enumerate(calls):
        try:
            signature = inspect.signature(functions[name])
        except (TypeError, ValueError):  # no signature to read: the call itself decides
            continue
        try:
            signature.bind(*args, **kwargs)
        except TypeError as error:
            raise CallsNotUnderstood(f"{name} cannot take the test's call {index}: {error}") from None


def upstream_gradient(index: int, number: int, output: Any) -> Any:
    """The gradient that flows into output `number` of call `index` when a call is differentiated: standard
    normal values from a seed of (index, number), the same in both workers. Drawn by numpy and viewed through
    the buffer protocol, so that the only PyTorch op the candidate's dispatch monitor sees is a copy (glue):
    `torch.from_numpy` would dispatch `lift_fresh`, which in a forward is the candidate turning host values into
    a tensor, past a budget of a few."""
    import numpy as np
    import torch

    generator = np.random.default_rng([index, number])
    values = generator.standard_normal(tuple(output.shape), dtype=np.float32)
    if output.is_complex():
        values = values + 1j * generator.standard_normal(tuple(output.shape), dtype=np.float32)
    if values.size == 0:
        return torch.empty(tuple(output.shape), device=output.device, dtype=output.dtype)
    host = torch.frombuffer(
        np.ascontiguousarray(values), dtype=torch.complex64 if values.dtype.kind == "c" else torch.float32
    )
    return host.view(tuple(output.shape)).to(device=output.device, dtype=output.dtype)


class _RecordingClass:
    """A reference class in the test's scope whose entry methods record (`Cls.apply(...)`); every other
    attribute, and calling it, are the class's own."""

    def __init__(self, real: Any, recorded: dict[str, Callable[..., Any]]) -> None:
        self._real, self._recorded = real, recorded

    def __getattr__(self, name: str) -> Any:
        recorded = self.__dict__["_recorded"]
        return recorded[name] if name in recorded else getattr(self.__dict__["_real"], name)

    def __call__(self, *args: Any, **kwargs: Any) -> Any:
        return self._real(*args, **kwargs)


def _recording_scope(
    namespace: dict[str, Any], entries: tuple[str, ...], recorder: Callable[[str, Any], Callable[..., Any]]
) -> dict[str, Any]:
    """A copy of the reference's namespace in which every entry is `recorder(name, real)`: a function replaced,
    a class whose methods are entries stood in for by a `_RecordingClass`."""
    scope = dict(namespace)
    methods: dict[str, dict[str, Callable[..., Any]]] = {}
    for name in entries:
        real = resolve_entry(namespace, name)
        if "." in name:
            owner, attribute = name.split(".", 1)
            methods.setdefault(owner, {})[attribute] = recorder(name, real)
        else:
            scope[name] = recorder(name, real)
    for owner, recorded in methods.items():
        scope[owner] = _RecordingClass(namespace[owner], recorded)
    return scope


def record_calls(
    layout: FunctionLayout, namespace: dict[str, Any], seed: int, device: Any, which: str = "correctness"
) -> list[list[Any]]:
    """Run the test in a copy of the reference's `namespace` with the entries recorded; the calls it made,
    each `[name, args, kwargs]` as they were before the call. Raises FunctionTaskError when it makes none.
    A kernel layout's pytest tests are recorded by `kernelvault.toolchain.kernel_tasks.record_launches`."""
    import random

    import torch

    calls: list[list[Any]] = []
    dropped: list[Exception] = []  # what the calls that raised raised, for the message when none is left

    def recorder(name: str, real: Callable[..., Any]) -> Callable[..., Any]:
        def record(*args: Any, **kwargs: Any) -> Any:
            call = [name, clone_value(list(args)), clone_value(dict(kwargs))]
            position = len(calls)
            calls.append(call)
            try:
                returned = real(*args, **kwargs)
            except Exception as error:
                # a call the test expects to fail (TritonBench's `solve` of a singular matrix, in its own
                # try/except): not a case, since only values are judged; an uncaught one fails the recording
                del calls[position:]
                dropped.append(error)
                raise
            if not any(leaf.requires_grad for leaf in tensor_leaves(returned)):
                for leaf in tensor_leaves(call[1:]):  # nothing to differentiate: judged by its values alone
                    leaf.requires_grad_(False)
            return returned

        return record

    scope = _recording_scope(namespace, layout.entries, recorder)
    scope["__name__"] = "__kv_test__"  # a test guarded by `if __name__ == "__main__"` does not run twice
    torch.random.manual_seed(seed)
    random.seed(seed)
    code = compile_task_part(layout.test, "test")
    on_cpu = getattr(device, "type", device) == "cpu"
    # TritonBench's evaluator saves answer and test as `<entry>.py`, so a test may import the function
    # from its own file (`from tanh_linear import tanh_linear`): that module is the recorder's scope here.
    aliases: dict[str, types.ModuleType] = {}
    if re.search(rf"^\s*(from|import)\s+{re.escape(layout.entry)}\b", layout.test, re.MULTILINE):
        aliases[layout.entry] = types.ModuleType(layout.entry)
        aliases[layout.entry].__dict__.update(scope)
    # autograd on: a test may differentiate what the reference returns (the workers run with it off)
    with module_standins(aliases), device_redirect(device) if on_cpu else contextlib.nullcontext(), \
            torch.enable_grad():  # fmt: skip
        exec(code, scope)  # noqa: S102 - the task's own test, in the reference's jailed worker
        if not calls:
            for name in layout.test_functions:
                scope[name]()
    if not calls and dropped:  # the test caught them (`try: ... except Exception`): say why they failed
        raise FunctionTaskError(
            f"every call the test made of {layout.entry} raised, inside the test's own try/except "
            f"({len(dropped)} call(s); the first: {one_line_error(dropped[0])})"
        )
    if not calls:
        raise FunctionTaskError(f"the test made no call of {layout.entry}")
    return calls


@contextlib.contextmanager
def module_standins(modules: dict[str, types.ModuleType]) -> Iterator[None]:
    """`modules` in sys.modules while the block runs (what a task's own code imports by name: stand-ins for
    pytest, a benchmark harness, the reference under the name its test uses), then what was there before."""
    saved = {name: sys.modules.get(name) for name in modules}
    sys.modules.update(modules)
    try:
        yield
    finally:
        for name, module in saved.items():
            if module is None:
                sys.modules.pop(name, None)
            else:
                sys.modules[name] = module


def _perf_support_modules(program: str, scope: dict[str, Any]) -> dict[str, types.ModuleType]:
    """What a TritonBench perf program imports: `performance_utils` (its base class, here a stand-in that
    only keeps what the inputs need) and `TorchBench_v1.<task>` (the reference module: here `scope`, whose
    entries record)."""

    class Performance_Metrics:  # noqa: N801 - the name the program imports
        def __init__(self, op_name: str, dtype: Any = None, is_backward: bool = False, **kwargs: Any) -> None:
            self.op_name, self.dtype, self.is_backward, self.kwargs = op_name, dtype, is_backward, kwargs
            self.input_tensors: list[Any] = []

    class do_bench_config:  # noqa: N801
        def __init__(self, *args: Any, **kwargs: Any) -> None:
            pass

    utils = types.ModuleType("performance_utils")
    utils.Performance_Metrics, utils.do_bench_config = Performance_Metrics, do_bench_config
    modules = {"performance_utils": utils}
    for node in ast.walk(ast.parse(program)):
        if isinstance(node, ast.ImportFrom) and node.module and node.level == 0:
            package, _, child = node.module.partition(".")
            if package == "TorchBench_v1" and child:
                modules.setdefault(package, types.ModuleType(package)).__path__ = []  # type: ignore[attr-defined]
                module = types.ModuleType(node.module)
                module.__dict__.update(scope)
                modules[node.module] = module
    return modules


def record_performance_calls(
    layout: FunctionLayout, namespace: dict[str, Any], seed: int, device: Any
) -> list[list[Any]]:
    """The calls a task's embedded perf program makes on one of its input sets (the module docstring says
    which), each `[name, args, kwargs]`; recorded without running the reference (its result is computed
    where the case needs it)."""
    import torch

    if not layout.performance:
        raise FunctionTaskError("the task has no performance inputs")
    calls: list[list[Any]] = []
    armed = [False]  # only the op's call is the case: a program may call the entry to size its inputs

    def recorder(name: str, real: Callable[..., Any]) -> Callable[..., Any]:
        def record(*args: Any, **kwargs: Any) -> Any:
            if not armed[0]:  # TritonBench's cos_avg_pool1d_perf.py runs it in get_input_tensors
                return real(*args, **kwargs)
            call = [name, clone_value(list(args)), clone_value(dict(kwargs))]
            for leaf in tensor_leaves(call[1:]):  # timing runs the forward (see the module docstring)
                leaf.requires_grad_(False)
            calls.append(call)
            raise _Recorded

        return record

    scope = _recording_scope(namespace, layout.entries, recorder)
    on_cpu = getattr(device, "type", device) == "cpu"
    program_scope: dict[str, Any] = {"__name__": "__kv_performance__", "__file__": "<performance>"}
    with module_standins(_perf_support_modules(layout.performance, scope)):
        exec(compile_task_part(layout.performance, "performance"), program_scope)  # noqa: S102 - the task's own
        metrics = program_scope["performance_metrics"]()
        torch.random.manual_seed(seed)
        # drawn where they run: on a GPU, a factory call without a device lands there (fast, no host copy)
        with device_redirect(device) if on_cpu else torch.device(device):
            metrics.get_input_tensors()
            sets = list(metrics.input_tensors)
            if not sets:
                raise FunctionTaskError("the performance program made no inputs")
            sizes = [sum(t.numel() * t.element_size() for t in tensor_leaves(item)) for item in sets]
            fitting = [index for index, size in enumerate(sizes) if size <= PERFORMANCE_BYTES_MAX]
            smallest = min(range(len(sets)), key=sizes.__getitem__)
            chosen = smallest if on_cpu or not fitting else max(fitting, key=sizes.__getitem__)
            item = metrics.to_cuda(sets[chosen])
            del sets, metrics.input_tensors
            armed[0] = True
            try:
                metrics.call_op(item)
            except _Recorded:
                pass
    if not calls:
        raise FunctionTaskError(f"the performance program made no call of {layout.entry}")
    return calls


class _Recorded(Exception):  # noqa: N818 - not an error: stops a perf program's op after its first call
    """Raised by the recorder so that the perf program's op stops at its first call of an entry."""

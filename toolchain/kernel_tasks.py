"""Kernel tasks: gold Triton kernels and the pytest tests that launch them (ROCmBench's layout).

A ROCmBench file (AMD-AGI/GEAK-eval, `geak_eval/data/ROCm/data/ROCm_v1`) is a gold `@triton.jit` kernel,
a separator line of `#`, then pytest tests: `@pytest.mark.parametrize`d `test_*` functions that build
inputs under `set_seed()`, launch `kernel[grid](...)` (directly or through a wrapper defined in the test
part) and store the outputs in `result_gold[request.node.name]`; a `test_performance` with its own
parametrisation; `test_save_*` functions that write files. `function_tasks.function_layout` finds the
task's entries: the reference kernels the test launches (`FunctionLayout.kernels`).

How such a task is checked, through the same protocol as function tasks (`kernelvault.toolchain.function_tasks`):

- **Inputs are the test's own launches, recorded.** The reference's worker runs the test part with a
  stand-in `pytest` (`parametrize` records its parameter sets, the decorators are evaluated for real since
  many are comprehensions; `skip`/`skipif` skip) and a stand-in for GEAK-eval's benchmarker (it calls the op
  once). Each correctness test (`test_*` but `test_performance*` and `test_save*`) is called once per
  parameter set with a `request` whose `node.name` is pytest's id. Every kernel entry is replaced by a
  recorder: `kernel[grid](*args, **kwargs)` keeps `[name, args, kwargs, grid]` with the arguments as they
  were before the launch, then launches the gold kernel, so the test goes on as it would. The performance
  case records `test_performance`'s launches the same way.
- **A launch is judged by its tensor arguments after it.** Kernels write their outputs in place, so the
  outputs the test stores in `result_gold` are among these (GEAK-eval compares that dict with the gold
  run's); judging every tensor argument is stricter where a test stores a slice or a copy, and equal where
  it stores the buffer. Values a test derives from the outputs *after* the launch with PyTorch are not
  judged: they are the test's work, not the kernel's.
- **The grid crosses the process boundary as data.** A tuple stays a tuple. A callable of `meta` is
  evaluated while the gold kernel launches, with the values of the arguments the launch passed and a
  *symbol* for every other meta-parameter (those an autotune config or a heuristic adds): arithmetic on a
  symbol (`triton.cdiv(M, meta['BLOCK_M'])`) yields an expression text such as
  `((1000 + meta['BLOCK_M'] - 1) // meta['BLOCK_M'])`, which the replay evaluates (integers, `+ - * // %`,
  `meta[...]` only; no `eval`) against the meta the candidate's own launch sees, so a candidate that
  autotunes other block sizes gets the grid its configuration needs, as in GEAK-eval's run of the test.
  A grid callable that does more than arithmetic with a symbol (`max`, a comparison) falls back to the
  numbers the gold launch used: a candidate with other block sizes then gets the gold kernel's grid
  (documented limit; honest kernels of the same tiling are unaffected).
- **The candidate defines kernels.** Each entry must be a Triton kernel object (a `@triton.jit` function,
  or `@triton.autotune` / `@triton.heuristics` over one), launched as the test launches it; a Python function
  or any other object under the entry's name is refused before it runs (`require_kernels`), and the
  integrity layer watches the launch as it watches any forward (torch doing the work, no launch of its own).

What this does not do: run the tests' own `assert_close` against PyTorch (the gold run is the reference),
judge what a test computes after its launches, or run `test_save_*` (they write files). On the CPU path a
launch whose tensors hold more than `CPU_ELEMENT_BUDGET` elements is left out (the interpreter would take
minutes per launch); the parameter sets left out are counted in the error when none is left.
"""

from __future__ import annotations

import ast
import contextlib
import inspect
import itertools
import random
import types
from collections.abc import Callable, Iterator
from typing import Any

from kernelvault.toolchain.function_tasks import (
    FunctionLayout,
    FunctionTaskError,
    clone_value,
    compile_task_part,
    device_redirect,
    module_standins,
    tensor_leaves,
)

CPU_ELEMENT_BUDGET = (
    1 << 22
)  # elements over a launch's tensor arguments that the interpreter takes in seconds
_NOT_CORRECTNESS = ("test_performance", "test_save")


# ----------------------------------------------------------------------------------------------------
# The grid as data: integers and arithmetic expressions over the meta-parameters.


class _Symbol:
    """A meta-parameter the launch did not pass (an autotune config's, a heuristic's): arithmetic on it
    builds the expression text the replay evaluates; anything else (a comparison, `int()`) raises."""

    def __init__(self, text: str) -> None:
        self.text = text

    @staticmethod
    def _text(value: Any) -> str:
        if isinstance(value, _Symbol):
            return value.text
        if isinstance(value, int) and not isinstance(value, bool):
            return repr(value)
        raise TypeError("a symbolic meta-parameter meets a value that is not an integer")

    def _binary(self, other: Any, operator: str, reflected: bool = False) -> _Symbol:
        left, right = (self._text(other), self.text) if reflected else (self.text, self._text(other))
        return _Symbol(f"({left} {operator} {right})")

    def __add__(self, other: Any) -> _Symbol:
        return self._binary(other, "+")

    def __radd__(self, other: Any) -> _Symbol:
        return self._binary(other, "+", True)

    def __sub__(self, other: Any) -> _Symbol:
        return self._binary(other, "-")

    def __rsub__(self, other: Any) -> _Symbol:
        return self._binary(other, "-", True)

    def __mul__(self, other: Any) -> _Symbol:
        return self._binary(other, "*")

    def __rmul__(self, other: Any) -> _Symbol:
        return self._binary(other, "*", True)

    def __floordiv__(self, other: Any) -> _Symbol:
        return self._binary(other, "//")

    def __rfloordiv__(self, other: Any) -> _Symbol:
        return self._binary(other, "//", True)

    def __mod__(self, other: Any) -> _Symbol:
        return self._binary(other, "%")

    def __rmod__(self, other: Any) -> _Symbol:
        return self._binary(other, "%", True)

    def __neg__(self) -> _Symbol:
        return _Symbol(f"(-{self.text})")

    def __bool__(self) -> bool:
        raise TypeError("a symbolic meta-parameter has no truth value")

    def __index__(self) -> int:
        raise TypeError("a symbolic meta-parameter has no integer value")

    __int__ = __index__


def _grid_entry(value: Any) -> int | str:
    if isinstance(value, _Symbol):
        return value.text
    return int(value)


def symbolic_grid(grid: Callable[[dict[str, Any]], Any], meta: dict[str, Any], passed: set[str]) -> list[Any]:
    """`grid(meta)` as data: the launch's own arguments as they are, every other meta-parameter a symbol.
    Falls back to the numbers `grid(meta)` gives where the callable does more than arithmetic on a symbol."""
    symbolic = {key: value if key in passed else _Symbol(f"meta[{key!r}]") for key, value in meta.items()}
    try:
        return [_grid_entry(value) for value in grid(symbolic)]
    except (TypeError, KeyError, ValueError, AttributeError):
        return [int(value) for value in grid(meta)]


_OPERATORS: dict[type, Callable[[int, int], int]] = {
    ast.Add: lambda a, b: a + b, ast.Sub: lambda a, b: a - b, ast.Mult: lambda a, b: a * b,
    ast.FloorDiv: lambda a, b: a // b, ast.Mod: lambda a, b: a % b,
}  # fmt: skip


def evaluate_grid_entry(text: str, meta: dict[str, Any]) -> int:
    """One grid expression (`symbolic_grid`) for the meta of a launch: integers, + - * // %, `meta[...]`."""

    def value(node: ast.AST) -> int:
        if isinstance(node, ast.Constant) and isinstance(node.value, int):
            return node.value
        if isinstance(node, ast.BinOp) and type(node.op) in _OPERATORS:
            return _OPERATORS[type(node.op)](value(node.left), value(node.right))
        if isinstance(node, ast.UnaryOp) and isinstance(node.op, ast.USub):
            return -value(node.operand)
        if (
            isinstance(node, ast.Subscript)
            and isinstance(node.value, ast.Name)
            and node.value.id == "meta"
            and isinstance(node.slice, ast.Constant)
        ):
            found = meta[node.slice.value]
            return int(getattr(found, "value", found))  # a tl.constexpr holds its value
        raise ValueError(f"not a grid expression: {ast.unparse(node)}")

    return value(ast.parse(text, mode="eval").body)


def replay_grid(spec: Any) -> Any:
    """The grid a recorded launch is replayed with: a tuple, or a callable of the launch's meta."""
    entries = list(spec)
    if all(isinstance(entry, int) for entry in entries):
        return tuple(entries)
    return lambda meta: tuple(
        entry if isinstance(entry, int) else evaluate_grid_entry(entry, meta) for entry in entries
    )


def untimed_autotuning() -> None:
    """Under the interpreter (the CPU path), an autotuner with several configs picks the first, untimed.

    Triton's autotuner times each config with the active driver's benchmarker, and the CPU has no driver
    (`0 active drivers`), so any autotuned kernel, gold or candidate, would fail there. Interpreted timings
    would mean nothing anyway; correctness does not depend on the config. Installed in the workers (before
    any candidate code runs) on the CPU only; on a GPU autotuning is Triton's own."""
    from triton.runtime.autotuner import Autotuner

    def untimed(kernel_call: Callable[[], Any], quantiles: Any = None, **_: Any) -> list[float]:
        return [1.0, 1.0, 1.0]  # every config ties: `min` keeps the first

    Autotuner.do_bench = property(lambda self: self._do_bench or untimed)  # type: ignore[method-assign, assignment]


# ----------------------------------------------------------------------------------------------------
# The candidate's side: its entries must be Triton kernels.


def is_triton_kernel(value: Any) -> bool:
    """A Triton kernel object: a jitted function, or an autotuner / heuristics wrapper over one."""
    from triton.runtime.jit import KernelInterface

    seen = 0
    while isinstance(value, KernelInterface) and seen < 8:
        inner = getattr(value, "fn", None)
        if inspect.isfunction(inner) and type(value).__name__ in ("JITFunction", "InterpretedFunction"):
            return True
        value, seen = inner, seen + 1
    return False


def require_kernels(functions: dict[str, Any]) -> str | None:
    """Why a candidate's entries cannot be launched as the test launches them, or None."""
    wrong = [name for name, value in functions.items() if not is_triton_kernel(value)]
    if not wrong:
        return None
    shown = ", ".join(f"{name} is a {type(functions[name]).__name__}" for name in wrong)
    return f"the test launches {', '.join(wrong)} as a Triton kernel (name[grid](...)); {shown}, not a @triton.jit kernel"


# ----------------------------------------------------------------------------------------------------
# The reference's side: pytest and GEAK-eval's benchmarker stood in for, the tests run, launches recorded.


class _Skipped(Exception):
    """pytest.skip, a skip mark, or a launch too large for the interpreter."""


class _Param:
    def __init__(self, *values: Any, marks: Any = (), id: str | None = None) -> None:  # noqa: A002 - pytest's name
        self.values, self.id = values, id
        self.marks = marks if isinstance(marks, (list, tuple)) else (marks,)


class _Mark:
    """`pytest.mark.<name>`: parametrize and skip marks act; any other mark is a no-op decorator."""

    def __init__(self, name: str, args: tuple[Any, ...] = (), kwargs: dict[str, Any] | None = None) -> None:
        self.name, self.args, self.kwargs = name, args, kwargs or {}

    def __call__(self, *args: Any, **kwargs: Any) -> Any:
        if len(args) == 1 and not kwargs and callable(args[0]) and not self.args and self.name != "skipif":
            return self._apply(args[0])
        if self.args or self.kwargs:  # already configured: this call decorates
            return self._apply(args[0])
        return _Mark(self.name, args, kwargs)

    def _apply(self, function: Any) -> Any:
        marks = function.__dict__.setdefault("kv_marks", [])
        marks.append(self)
        return function


class _Marks:
    def __getattr__(self, name: str) -> _Mark:
        return _Mark(name)


def _fixture(*args: Any, **kwargs: Any) -> Any:
    if len(args) == 1 and callable(args[0]) and not kwargs:
        return args[0]
    return lambda function: function


def _skip(reason: str = "", **_: Any) -> None:
    raise _Skipped(reason or "skipped")


def _fail(reason: str = "", **_: Any) -> None:
    raise AssertionError(reason or "pytest.fail")


@contextlib.contextmanager
def _raises(expected: Any, **_: Any) -> Iterator[None]:
    try:
        yield
    except expected:
        return
    raise AssertionError(f"did not raise {expected}")


def _importorskip(name: str, *_: Any, **__: Any) -> Any:
    try:
        return __import__(name)
    except ImportError:
        raise _Skipped(f"no module {name}") from None


def _standin_modules() -> dict[str, types.ModuleType]:
    pytest = types.ModuleType("pytest")
    pytest.mark = _Marks()  # type: ignore[attr-defined]
    pytest.param = _Param  # type: ignore[attr-defined]
    pytest.fixture = _fixture  # type: ignore[attr-defined]
    pytest.skip = _skip  # type: ignore[attr-defined]
    pytest.fail = _fail  # type: ignore[attr-defined]
    pytest.raises = _raises  # type: ignore[attr-defined]
    pytest.importorskip = _importorskip  # type: ignore[attr-defined]
    perf = types.ModuleType("geak_eval.perf.ROCm.performance_utils_pytest")

    class PytestBenchmarker:
        """GEAK-eval's benchmarker, stood in for: the op runs once (its launches are recorded)."""

        def __init__(self, op_callable: Callable[[], Any], *_: Any, **__: Any) -> None:
            self.op = op_callable

        def run_benchmark(self, *_: Any, **__: Any) -> None:
            self.op()

    perf.PytestBenchmarker = PytestBenchmarker  # type: ignore[attr-defined]
    perf.do_bench_config = lambda *_, **__: None  # type: ignore[attr-defined]
    perf.save_all_benchmark_results = lambda *_, **__: None  # type: ignore[attr-defined]
    modules = {"pytest": pytest, "geak_eval.perf.ROCm.performance_utils_pytest": perf}
    for package in ("geak_eval", "geak_eval.perf", "geak_eval.perf.ROCm"):
        module = types.ModuleType(package)
        module.__path__ = []  # type: ignore[attr-defined]
        modules[package] = module
    return modules


@contextlib.contextmanager
def _cuda_bookkeeping(on_cpu: bool) -> Iterator[None]:
    """On the CPU path, `torch.cuda`'s bookkeeping calls that tests make around a launch (synchronize,
    empty_cache, the current device) do nothing, as they would on a GPU with one device. What tells a test
    about hardware (`get_device_capability`, `is_available`) is left alone: such a test fails here and
    the refusal names it."""
    import torch

    names = ("synchronize", "empty_cache", "set_device")
    saved = {name: getattr(torch.cuda, name) for name in (*names, "current_device")}
    if on_cpu:
        for name in names:
            setattr(torch.cuda, name, lambda *_, **__: None)
        torch.cuda.current_device = lambda: 0
    try:
        yield
    finally:
        for name, value in saved.items():
            setattr(torch.cuda, name, value)


def _id_part(value: Any, argname: str, index: int) -> str:
    if isinstance(value, (str, int, float, bool)) or value is None:
        return str(value)
    return f"{argname}{index}"


def parameter_sets(function: Any) -> list[tuple[dict[str, Any], str, str | None]]:
    """Each parameter set of a test as pytest expands it: (arguments, id, why it is skipped or None)."""
    axes = []
    for mark in function.__dict__.get("kv_marks", []):  # innermost decorator first, as pytest orders ids
        if mark.name != "parametrize":
            continue
        names, values = mark.args[0], list(mark.args[1])
        names = [name.strip() for name in names.split(",")] if isinstance(names, str) else list(names)
        ids = mark.kwargs.get("ids")
        axis = []
        for index, item in enumerate(values):
            marks: tuple[Any, ...] = ()
            given_id = None
            if isinstance(item, _Param):
                row, marks, given_id = tuple(item.values), item.marks, item.id
            else:  # one name: the value itself (a tuple too); several: one value per name
                row = (item,) if len(names) == 1 else tuple(item)
            if isinstance(ids, (list, tuple)) and index < len(ids):
                given_id = str(ids[index])
            label = given_id or "-".join(_id_part(v, n, index) for v, n in zip(row, names, strict=False))
            skipped = next((str(m.kwargs.get("reason", m.name)) for m in marks
                            if getattr(m, "name", "") in ("skip", "xfail")), None)  # fmt: skip
            axis.append((dict(zip(names, row, strict=False)), label, skipped))
        axes.append(axis)
    sets = []
    for combination in itertools.product(*axes):
        arguments: dict[str, Any] = {}
        for part, _, _ in combination:
            arguments.update(part)
        label = "-".join(part[1] for part in combination)
        skipped = next((part[2] for part in combination if part[2]), None)
        sets.append((arguments, label, skipped))
    return sets


def _skip_reason(function: Any) -> str | None:
    for mark in function.__dict__.get("kv_marks", []):
        if mark.name == "skip":
            return str(mark.kwargs.get("reason") or (mark.args[0] if mark.args else "skip mark"))
        if mark.name == "skipif" and mark.args and not isinstance(mark.args[0], str) and mark.args[0]:
            return str(mark.kwargs.get("reason", "skipif"))
    return None


class _Request:
    """pytest's `request` fixture, as far as the tests read it: `request.node.name`."""

    def __init__(self, name: str) -> None:
        self.node = types.SimpleNamespace(name=name, nodeid=name)


class _LaunchRecorder:
    """Stands for a kernel entry in the test's scope: `recorder[grid](*args, **kwargs)` records, then launches."""

    def __init__(self, name: str, kernel: Any, calls: list[list[Any]], budget: int | None) -> None:
        self.name, self.kernel, self.calls, self.budget = name, kernel, calls, budget
        base = kernel
        while not hasattr(base, "arg_names") and hasattr(base, "fn"):
            base = base.fn
        self.arg_names = list(getattr(base, "arg_names", []))

    def __getattr__(self, name: str) -> Any:  # kernel attributes the test reads (`.fn`, `.configs`)
        return getattr(self.kernel, name)

    def __getitem__(self, grid: Any) -> Callable[..., Any]:
        def launch(*args: Any, **kwargs: Any) -> Any:
            if self.budget is not None:
                size = sum(tensor.numel() for tensor in tensor_leaves([list(args), kwargs]))
                if size > self.budget:
                    raise _Skipped(f"a launch of {self.name} over {size} elements (the CPU interpreter takes "
                                   f"{self.budget})")  # fmt: skip
            before = [self.name, clone_value(list(args)), clone_value(dict(kwargs))]
            passed = set(self.arg_names[: len(args)]) | set(kwargs)
            spec: list[Any] = []
            if callable(grid):

                def recording_grid(meta: dict[str, Any]) -> Any:
                    spec[:] = symbolic_grid(grid, dict(meta), passed)
                    return grid(meta)

                returned = self.kernel[recording_grid](*args, **kwargs)
            else:
                spec[:] = [int(value) for value in (grid if isinstance(grid, (tuple, list)) else (grid,))]
                returned = self.kernel[grid](*args, **kwargs)
            self.calls.append([*before, spec])
            return returned

        return launch


def record_launches(
    layout: FunctionLayout, namespace: dict[str, Any], seed: int, device: Any, which: str = "correctness"
) -> list[list[Any]]:
    """Run the test part's `which` tests (`correctness` or `performance`) in a copy of the reference's
    namespace with the kernel entries recorded; every launch, `[name, args, kwargs, grid]`. Raises
    FunctionTaskError, naming why, when no launch was recorded."""
    import numpy as np
    import torch

    calls: list[list[Any]] = []
    on_cpu = getattr(device, "type", device) == "cpu"
    budget = CPU_ELEMENT_BUDGET if on_cpu else None
    scope = dict(namespace)
    for name in layout.entries:
        scope[name] = _LaunchRecorder(name, namespace[name], calls, budget)
    standins = _standin_modules()
    for name, value in list(scope.items()):  # the reference part's own `import pytest` is the real one
        if isinstance(value, types.ModuleType) and value.__name__ in standins:
            scope[name] = standins[value.__name__]
    scope["__name__"] = "__kv_test__"
    scope["__file__"] = (
        "/nonexistent/kv_test.py"  # test_save_* never runs; a path it might build stays harmless
    )
    torch.random.manual_seed(seed)
    random.seed(seed)
    np.random.seed(seed % (1 << 32))
    misses: list[str] = []
    redirect = device_redirect(device) if on_cpu else contextlib.nullcontext()
    with module_standins(standins), _cuda_bookkeeping(on_cpu), redirect:
        try:
            exec(compile_task_part(layout.test, "test"), scope)  # noqa: S102 - the task's test, in its jailed worker
        except Exception as error:  # noqa: BLE001 - the file's own failure, named in the refusal
            raise FunctionTaskError(
                f"the test module failed: {type(error).__name__}: {error}"[:300]
            ) from None
        if calls and which == "correctness":
            return calls  # a test that runs itself at import (TritonBench-G's layout) has made its launches
        for test in layout.test_functions:
            performance = test.startswith("test_performance")
            if test.startswith("test_save") or performance != (which == "performance"):
                continue
            function = scope.get(test)
            if not callable(function):
                continue
            reason = _skip_reason(function)
            if reason:
                misses.append(f"{test}: skipped ({reason})")
                continue
            misses += _run_test(test, function, calls)
    if not calls:
        shown = "; ".join(misses[:3]) + (f"; … {len(misses) - 3} more" if len(misses) > 3 else "")
        raise FunctionTaskError(
            f"the {which} tests launched none of {', '.join(layout.entries)}"
            + (f" ({shown})" if shown else "")
        )
    return calls


def _run_test(test: str, function: Any, calls: list[list[Any]]) -> list[str]:
    """Call one test once per parameter set; why each set that launched nothing did not."""
    misses = []
    parameters = inspect.signature(function).parameters
    for arguments, label, skipped in parameter_sets(function) or [({}, "", None)]:
        name = f"{test}[{label}]" if label else test
        if skipped:
            misses.append(f"{name}: skipped ({skipped})")
            continue
        given = dict(arguments)
        if "request" in parameters:
            given["request"] = _Request(name)
        missing = [
            p for p in parameters if p not in given and parameters[p].default is inspect.Parameter.empty
        ]
        if missing:
            misses.append(f"{name}: needs fixture(s) {', '.join(missing)}")
            continue
        before = len(calls)
        try:
            function(**given)
        except _Skipped as error:
            misses.append(f"{name}: skipped ({error})")
        except Exception as error:  # noqa: BLE001 - a failing assert after the launch keeps what it recorded
            if len(calls) == before:
                misses.append(f"{name}: {type(error).__name__}: {error}"[:200])
    return misses

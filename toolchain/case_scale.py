"""Scaled cases: a GPU-sized suite's references checked on a CPU in minutes (`tasks check --case-scale F`).

KernelBench's files size their inputs for a GPU (a 4096 × 4096 matmul, a batch of 32 768 rows of 393 216
values): on two CPU cores one reference can take minutes and the whole of level 1 hours. A case is a set of
overrides of the module's globals (`kernelvault.contracts.TaskCase`), so a scaled case is the same case with its
large integer globals multiplied by `factor`.

Which globals are sizes: the module-level names bound to an integer constant expression (`N = 2048 * 2`)
of at least `SIZE_FLOOR`, and the elements of at least that size of a tuple of them (`input_shape =
(32768,)`: KernelBench's loss tasks shape their inputs with one). Smaller ones are left alone, because in these suites they are the numbers whose
value matters to the computation rather than to its cost: kernel sizes, strides, paddings, dilations,
channel and group counts (which must stay divisible), a `dim` that names an axis. An odd size stays odd
(a suite's 4095 is there to test a ragged edge). Globals computed from other names are not touched.

What scaling cannot promise: a task whose sizes are tied by a relation the heuristic does not see (a
reshape to a product of two sizes, say) may break when scaled; `tasks check` then reports it, and the
unscaled check is the arbiter. Scaled cases are for checking references, not for verifying candidates.
"""

from __future__ import annotations

import ast
import dataclasses
import operator
from collections.abc import Callable

from kernelvault.contracts import Task, TaskCase
from kernelvault.toolchain.source_tree import parse as parse_source
from kernelvault.toolchain.tasks import module_assignments

SIZE_FLOOR = 256
_SMALLEST = 16  # a scaled size never drops below this (nor below its own value)
_OPERATORS: dict[type[ast.operator], Callable[[int, int], int]] = {
    ast.Add: operator.add, ast.Sub: operator.sub, ast.Mult: operator.mul, ast.FloorDiv: operator.floordiv,
    ast.Pow: operator.pow, ast.LShift: operator.lshift,
}  # fmt: skip


def _integer(node: ast.expr) -> int | None:
    """The value of an integer constant expression (`4096`, `2048 * 2`, `1 << 12`), else None."""
    if isinstance(node, ast.Constant) and type(node.value) is int:
        return node.value
    if isinstance(node, ast.BinOp) and type(node.op) in _OPERATORS:
        left, right = _integer(node.left), _integer(node.right)
        if left is not None and right is not None and (type(node.op) is not ast.Pow or 0 <= right <= 64):
            return _OPERATORS[type(node.op)](left, right)
    return None


def size_globals(source: str) -> dict[str, int | tuple[int, ...]]:
    """The module-level integer globals (and tuples of them) of a task that count as sizes (see the module
    docstring)."""
    sizes: dict[str, int | tuple[int, ...]] = {}
    for name, value in module_assignments(parse_source(source)).items():
        number = _integer(value)
        if number is not None and number >= SIZE_FLOOR:
            sizes[name] = number
        elif isinstance(value, ast.Tuple) and value.elts:
            numbers = [_integer(element) for element in value.elts]
            if all(n is not None for n in numbers) and any(n >= SIZE_FLOOR for n in numbers):  # type: ignore[operator]
                sizes[name] = tuple(numbers)  # type: ignore[arg-type]
    return sizes


def scaled(value: int, factor: float) -> int:
    """`value` × `factor`, at least `_SMALLEST` (or `value` when smaller), odd when `value` is odd."""
    result = max(min(value, _SMALLEST), round(value * factor))
    return result + 1 if value % 2 and not result % 2 else result


def _scale(value: int | tuple[int, ...], factor: float) -> int | tuple[int, ...]:
    if isinstance(value, tuple):
        return tuple(scaled(n, factor) if n >= SIZE_FLOOR else n for n in value)
    return scaled(value, factor)


def scale_cases(task: Task, factor: float) -> Task:
    """`task` with the sizes of every case multiplied by `factor` (0 < factor ≤ 1); a function task (whose
    cases are its test's calls) and a factor of 1 leave it as it is."""
    if not 0 < factor <= 1:
        raise ValueError(f"--case-scale is a factor in (0, 1], not {factor}")
    if factor == 1 or task.entry:
        return task
    sizes = size_globals(task.source)

    def scale_case(case: TaskCase) -> TaskCase:
        given = {
            k: v for k, v in case.overrides.items() if k in sizes and (type(v) is int or isinstance(v, tuple))
        }
        values = {**sizes, **given}
        overrides = {**case.overrides, **{name: _scale(value, factor) for name, value in values.items()}}
        return dataclasses.replace(case, name=f"{case.name}×{factor:g}", overrides=overrides)

    return dataclasses.replace(
        task,
        correctness_cases=tuple(map(scale_case, task.correctness_cases)),
        performance_cases=tuple(map(scale_case, task.performance_cases)),
    )

"""What a Triton kernel's body may reach when it runs: checked at every launch, on the function object itself.

Under the CPU interpreter a `@triton.jit` body is plain Python: a name it reads that holds a host function, an
object with operator methods (`FIN * x` runs `FIN.__mul__`), or a default argument that is one, runs host code
inside the kernel, on the interpreter's NumPy arrays, with no op the dispatch monitor sees. The static wall reads
the source; names bound in ways it does not follow (a `for` target at module level, a kernel-local alias of a
global, a default value) are only known for what they are at run time. So before each launch the harness reads
the kernel's globals (the names its code uses that its module binds), its defaults and its closure, and lets only
what a compiled kernel could use pass: Triton itself (its modules, functions, types and other kernels, each
checked the same way), `math`, and plain data (numbers, strings, None, dtypes, constexprs and tuples of them).
"""

from __future__ import annotations

import builtins
import dis
import sys
from types import CodeType, ModuleType
from typing import Any

import torch

from kernelvault.toolchain.wall_policy import KERNEL_BUILTINS

_PLAIN = (bool, int, float, str, complex, type(None), torch.dtype)
# A kernel writes memory through pointers; these write a module's or an enclosing function's names.
_NAME_WRITES = frozenset({"STORE_GLOBAL", "DELETE_GLOBAL", "STORE_DEREF", "DELETE_DEREF"})


def defined_by(value: Any, package: str) -> bool:
    """`value` (or its class) is what a module of `package` really defines under its name, not a look-alike."""
    home = getattr(value, "__module__", None)
    name = getattr(value, "__name__", None)
    if not isinstance(home, str) or not isinstance(name, str) or home.split(".")[0] != package:
        return False
    module = sys.modules.get(home)
    return module is not None and getattr(module, name, None) is value


def _value_problem(value: Any, seen: set[int]) -> str | None:
    kind = type(value)
    if kind in _PLAIN:
        return None
    if kind is tuple:
        return next((problem for item in value if (problem := _value_problem(item, seen))), None)
    if isinstance(value, ModuleType):
        name = value.__name__
        return (
            None if name == "math" or name == "triton" or name.startswith("triton.") else f"the module {name}"
        )
    if defined_by(kind, "triton"):  # an instance of one of Triton's classes: dtypes, constexprs, kernels
        if kind.__name__ == "constexpr":
            return _value_problem(getattr(value, "value", None), seen)
        inner = getattr(
            value, "fn", None
        )  # another kernel (JITFunction, InterpretedFunction): checked the same way
        if callable(inner) and hasattr(inner, "__code__"):
            return function_problem(inner, seen)
        return None
    if defined_by(value, "triton") or defined_by(value, "math"):  # Triton's functions, `math.sqrt`
        return None
    return f"a {kind.__name__}"


def function_problem(fn: Any, seen: set[int] | None = None) -> str | None:
    """Why the kernel function `fn` may not run (None: it may): the first name, default or closure value it can
    reach that is not Triton, `math` or plain data."""
    seen = set() if seen is None else seen
    if id(fn) in seen:
        return None
    seen.add(id(fn))
    code = getattr(fn, "__code__", None)
    if not isinstance(code, CodeType):
        return "not a Python function"
    if any(isinstance(constant, CodeType) for constant in code.co_consts):
        return "a function defined inside the kernel"
    if stored := next((i.argval for i in dis.get_instructions(code) if i.opname in _NAME_WRITES), None):
        # `global x; x = tl.load(...)`: under the interpreter the kernel's values bound where host code reads them
        return f"it writes the Python name `{stored}`"
    namespace = getattr(fn, "__globals__", {})
    instructions = list(dis.get_instructions(code))
    for instruction, following in zip(instructions, [*instructions[1:], None], strict=True):
        name = instruction.argval
        if instruction.opname != "LOAD_GLOBAL" or not isinstance(name, str) or name in namespace:
            continue
        builtin = getattr(builtins, name, None)
        if builtin is None or name in KERNEL_BUILTINS:
            continue
        if isinstance(builtin, type) and issubclass(builtin, BaseException):
            continue  # `raise ValueError("...")`: the wall judges its message
        method = following is not None and following.opname in ("LOAD_ATTR", "LOAD_METHOD")
        if method or not isinstance(builtin, type) or builtin in (type, object):
            # `str.format("{0.handle.data}", x)`, `repr(x)`: under the interpreter a builtin runs on the loaded
            # values (a builtin type named alone, `isinstance(X, str)`, runs nothing)
            return f"it uses the Python builtin `{name}{'.' + str(following.argval) if method else ''}`"
    for name in code.co_names:  # attribute names too: only those the module binds are looked at
        if name in namespace and (problem := _value_problem(namespace[name], seen)):
            return f"`{name}` is {problem}, not Triton or data"
    defaults = [*(fn.__defaults__ or ()), *(fn.__kwdefaults__ or {}).values()]
    for value in defaults:
        if problem := _value_problem(value, seen):
            return f"a default argument is {problem}, not Triton or data"
    for cell in fn.__closure__ or ():
        try:
            content = cell.cell_contents
        except ValueError:  # an empty cell
            continue
        if problem := _value_problem(content, seen):
            return f"a closure variable is {problem}, not Triton or data"
    return None

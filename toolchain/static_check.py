"""The static stage: decide from the syntax tree alone whether code is a candidate at all.

Cheap checks that need no execution: the code parses, defines `ModelNew`, and (for Triton) defines at
least one `@triton.jit` kernel at module level. Kernels must be at module level because compilation
is proven in a separate process that looks kernels up by name. The deeper anti-gaming checks
(integrity) look at what the candidate does when it runs, not here.
"""

from __future__ import annotations

import ast
from dataclasses import dataclass

from kernelvault.toolchain.hip_interface import HipInterfaceError, parse_launch_functions
from kernelvault.toolchain.source_tree import parse as parse_source


@dataclass(frozen=True)
class StaticResult:
    failure_kind: str | None  # None, "compile_error" (Python syntax), "static_reject" or "integrity_reject"
    message: str
    kernels: tuple[str, ...] = ()  # module-level @triton.jit function names


def is_triton_jit(decorator: ast.expr) -> bool:
    """True for @triton.jit, @triton.jit(...) and a bare @jit (from triton import jit)."""
    node = decorator.func if isinstance(decorator, ast.Call) else decorator
    if isinstance(node, ast.Attribute):  # @triton.jit, not @numba.jit
        return node.attr == "jit" and isinstance(node.value, ast.Name) and node.value.id == "triton"
    return isinstance(node, ast.Name) and node.id == "jit"


_PYTORCH_NAMES = frozenset({"torch", "F", "nn", "functional"})


def _pytorch_fallback(tree: ast.Module) -> str | None:
    """An `except` branch that reaches for PyTorch: the kernel's failure would be hidden behind torch's answer."""
    for node in ast.walk(tree):
        if not isinstance(node, ast.Try):
            continue
        for handler in node.handlers:
            for inner in ast.walk(ast.Module(body=handler.body, type_ignores=[])):
                base = inner
                while isinstance(base, ast.Attribute):
                    base = base.value
                if inner is not base and isinstance(base, ast.Name) and base.id in _PYTORCH_NAMES:
                    return f"an except branch (line {handler.lineno}) calls PyTorch instead of failing"
                if isinstance(inner, ast.BinOp) and isinstance(inner.op, ast.MatMult):
                    return f"an except branch (line {handler.lineno}) computes a matmul with PyTorch"
    return None


def _bound_names(tree: ast.Module) -> set[str]:
    """Names a module binds at its top level by assignment (`layer_norm = LayerNorm.apply`)."""
    names: set[str] = set()
    for node in tree.body:
        if isinstance(node, (ast.Assign, ast.AnnAssign)):
            targets = node.targets if isinstance(node, ast.Assign) else [node.target]
            names |= {target.id for target in targets if isinstance(target, ast.Name)}
    return names


def check_triton_candidate(code: str, entries: tuple[str, ...] = (), kernels: bool = False) -> StaticResult:
    """`entries`: a function task's functions, which the candidate defines instead of ModelNew; with
    `kernels`, Triton kernels the task's test launches as `name[grid](...)` (`kernelvault.toolchain.kernel_tasks`)."""
    try:
        tree = parse_source(code)
    except SyntaxError as error:
        return StaticResult("compile_error", f"SyntaxError: {error.msg} (line {error.lineno})")

    if entries:
        defined = {node.name: node for node in tree.body if isinstance(node, ast.FunctionDef)}
        # A function may also be a module-level binding (`layer_norm = LayerNorm.apply`), and `Class.method` (a
        # test that calls `Fn.apply(...)`) needs the class, defined or bound: the worker checks that the entry is
        # callable once imported. A kernel entry must be a @triton.jit def.
        classes = {node.name for node in tree.body if isinstance(node, ast.ClassDef)}
        bound = set() if kernels else _bound_names(tree) | classes
        missing = [entry for entry in entries if entry not in defined and entry.split(".")[0] not in bound]
        if missing:
            what = "@triton.jit kernel" if kernels else "function"
            methods = [entry for entry in missing if "." in entry]
            if methods:  # `Fn.apply`: the class is what is missing
                return StaticResult("static_reject", f"the code defines no module-level class "
                                    f"{methods[0].split('.')[0]} (the task's test calls {methods[0]})")  # fmt: skip
            return StaticResult(
                "static_reject", f"the code defines no module-level {what} {', '.join(missing)}"
            )
        plain = (
            [entry for entry in entries if not any(map(is_triton_jit, defined[entry].decorator_list))]
            if kernels
            else []
        )
        if plain:
            return StaticResult("static_reject", f"{', '.join(plain)} must be a @triton.jit kernel: the task's test "
                                f"launches it as {plain[0]}[grid](...)")  # fmt: skip
    elif not any(isinstance(node, ast.ClassDef) and node.name == "ModelNew" for node in tree.body):
        return StaticResult("static_reject", "the code defines no module-level class ModelNew")

    module_kernels = tuple(
        node.name
        for node in tree.body
        if isinstance(node, ast.FunctionDef) and any(is_triton_jit(d) for d in node.decorator_list)
    )
    nested_kernels = [
        node.name
        for node in ast.walk(tree)
        if isinstance(node, ast.FunctionDef)
        and node.name not in module_kernels
        and any(is_triton_jit(d) for d in node.decorator_list)
    ]
    if nested_kernels:
        return StaticResult(
            "static_reject",
            f"Triton kernels must be defined at module level; nested: {', '.join(nested_kernels)}",
        )
    if not module_kernels:
        return StaticResult("static_reject", "the code defines no @triton.jit kernel")
    fallback = _pytorch_fallback(tree)
    if fallback:
        return StaticResult("integrity_reject", f"fallback: {fallback}")
    return StaticResult(
        None, f"{', '.join(entries) or 'ModelNew'} and {len(module_kernels)} kernel(s)", module_kernels
    )


@dataclass(frozen=True)
class HipStaticResult:
    failure_kind: str | None
    message: str
    form: str | None = None  # "native" (HIP_SOURCE + load_hip) or "load_inline" (KernelBench's form)
    hip_source: str | None = None  # the native form's HIP_SOURCE


def _module_string(tree: ast.Module, name: str) -> tuple[bool, str | None]:
    """(assigned at module level, its value when that value is a string literal)."""
    for node in tree.body:
        targets = (
            node.targets
            if isinstance(node, ast.Assign)
            else [node.target]
            if isinstance(node, ast.AnnAssign)
            else []
        )
        if any(isinstance(target, ast.Name) and target.id == name for target in targets):
            value = node.value
            literal = (
                value.value if isinstance(value, ast.Constant) and isinstance(value.value, str) else None
            )
            return True, literal
    return False, None


def _calls(tree: ast.Module, name: str) -> bool:
    for node in ast.walk(tree):
        if isinstance(node, ast.Call):
            func = node.func
            if (isinstance(func, ast.Name) and func.id == name) or (
                isinstance(func, ast.Attribute) and func.attr == name
            ):
                return True
    return False


def check_hip_candidate(code: str) -> HipStaticResult:
    """A HIP candidate: ModelNew plus either a literal HIP_SOURCE (native form) or a load_inline call."""

    try:
        tree = parse_source(code)
    except SyntaxError as error:
        return HipStaticResult("compile_error", f"SyntaxError: {error.msg} (line {error.lineno})")
    if not any(isinstance(node, ast.ClassDef) and node.name == "ModelNew" for node in tree.body):
        return HipStaticResult("static_reject", "the code defines no module-level class ModelNew")
    fallback = _pytorch_fallback(tree)
    if fallback:
        return HipStaticResult("integrity_reject", f"fallback: {fallback}")

    assigned, source = _module_string(tree, "HIP_SOURCE")
    if assigned and source is None:
        return HipStaticResult(
            "static_reject",
            "HIP_SOURCE must be a plain string literal: it is compiled before the module runs",
        )
    if source is not None:
        if "__global__" not in source:
            return HipStaticResult("static_reject", "HIP_SOURCE defines no __global__ kernel")
        try:
            launchers = parse_launch_functions(source)
        except HipInterfaceError as error:
            return HipStaticResult("static_reject", str(error))
        if not launchers:
            return HipStaticResult(
                "static_reject", 'HIP_SOURCE has no extern "C" launch function returning hipError_t or void'
            )
        if not _calls(tree, "load_hip"):
            return HipStaticResult("static_reject", "HIP_SOURCE is never loaded: call load_hip(HIP_SOURCE)")
        return HipStaticResult(
            None, f"native form: launch functions {', '.join(launchers)}", "native", source
        )
    if _calls(tree, "load_inline"):
        return HipStaticResult(None, "load_inline form (a PyTorch C++ extension)", "load_inline")
    return HipStaticResult(
        "static_reject",
        "no HIP source: define a module-level HIP_SOURCE string and load it with kernelvault.hip.load_hip, "
        "or build it with torch.utils.cpp_extension.load_inline",
    )

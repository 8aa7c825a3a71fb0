"""The static wall's identity rules: what a candidate's names resolve to, judged by the object, not the spelling.

The spelling rules (`kernelvault.toolchain.static_wall`) read `os.path.sys.modules` as a use of `os.path`, and
`F.torch.library` as a use of `F`; Python resolves them to the `sys` module and to `torch.library`. So here every
import, alias and attribute chain the candidate writes is resolved, in this (trusted) process, with the modules
the candidate's import lines (and a function task's test imports) would give it, to the object it denotes, and
that object is judged:

- a module passes only if it is one of the allowed modules (`wall_policy.ALLOWED_MODULES`), checked by identity
  against `sys.modules`: `os.path.sys`, `F.torch.library` and `torch.cuda.threading` are the modules they are;
- any other object passes unless it is on the deny-set, also by identity: the members of the refused namespaces
  (`torch.compile`, streams, events, graphs, the allocator's statistics, `os` beyond its environment and paths,
  the members defined by refused modules such as `subprocess.Popen` or `importlib.import_module`, however they are
  re-exported), and the APIs that turn strings into attributes or code (`operator.attrgetter`, `methodcaller`,
  `typing.get_type_hints`, `functools.singledispatch`, which evaluates string annotations);
- a module is never a value: it may be named (imported, aliased to a name, the root of an attribute chain), but
  not passed, stored, returned or put in a container, because a value flows where no chain can be resolved;
- `getattr` is a call with a literal name (resolved like the attribute it names), never a value, and a format
  string that reads attributes (`"{0.attr}".format(x)`) is refused.

What it does NOT do: resolve what a call returns or what an instance holds (a tensor's attributes are runtime
values; the spelling rules and the tripwires look at those), or follow values through containers. The rule that
modules are never values is what keeps a refused module out of those places; what allowed functions return at run
time (`type(x)` of a stream) is for the tripwires. Resolution imports only allowed modules, and reads attributes
of modules and classes only, never of instances.
"""

from __future__ import annotations

import ast
import builtins
import importlib
import os
import string
import sys
import threading
import warnings
from collections.abc import Iterable, Iterator
from types import ModuleType
from typing import Any

from kernelvault.toolchain.wall_policy import (
    FORBIDDEN_BUILTINS,
    MODULE_REASONS,
    NAMESPACE_REASONS,
    OS_ALLOWED,
    WallFinding,
    module_allowed,
    module_reason,
    namespace_reason,
)

_MISSING = object()

# What `torch.cuda` may be used for: which device, its properties, synchronising it, its current stream, seeds.
# Everything else it defines is the CUDA runtime's machinery: streams, events, graphs, the allocator and its
# statistics (`memory_allocated` tells a timed call from a checked one), raw handles.
TORCH_CUDA_ALLOWED = frozenset({
    "is_available", "is_initialized", "init", "device_count", "current_device", "set_device", "device", "device_of",
    "get_device_name", "get_device_capability", "get_device_properties", "get_arch_list", "is_bf16_supported",
    "is_tf32_supported", "synchronize", "current_stream", "default_stream", "empty_cache", "manual_seed",
    "manual_seed_all", "seed", "seed_all", "initial_seed", "get_rng_state", "set_rng_state", "amp", "OutOfMemoryError", "CudaError",
    "AcceleratorError", "DeferredCudaCallError", "has_half", "BFloat16Tensor", "BoolTensor", "ByteTensor",
    "CharTensor", "DoubleTensor", "FloatTensor", "HalfTensor", "IntTensor", "LongTensor", "ShortTensor",
})  # fmt: skip
# What `torch` re-exports from `torch._C` that host code may use: types, dtypes and devices, errors, settings read.
TORCH_C_REEXPORTS_ALLOWED = frozenset({
    "Generator", "Size", "FatalError", "OutOfMemoryError", "AcceleratorError", "dtype", "finfo", "iinfo", "layout",
    "memory_format", "qscheme", "device", "get_num_threads", "get_default_dtype", "is_grad_enabled",
    "is_inference_mode_enabled", "is_autocast_enabled", "get_autocast_dtype", "is_autocast_cpu_enabled",
    "get_autocast_gpu_dtype", "is_anomaly_enabled", "default_generator",
})  # fmt: skip
# Objects refused wherever they are reached, with (rule, reason). `reflection`: strings become attributes or code.
DENIED_PATHS = {
    "operator.attrgetter": ("reflection", "turns strings into attribute access"),
    "operator.methodcaller": ("reflection", "turns strings into method calls"),
    "typing.get_type_hints": ("reflection", "evaluates string annotations as code"),
    "typing.ForwardRef": ("reflection", "evaluates strings as code"),
    "typing_extensions.get_type_hints": ("reflection", "evaluates string annotations as code"),
    "typing_extensions.get_annotations": ("reflection", "evaluates string annotations as code"),
    "typing_extensions.evaluate_forward_ref": ("reflection", "evaluates strings as code"),
    "typing_extensions.ForwardRef": ("reflection", "evaluates strings as code"),
    "functools.singledispatch": ("reflection", "evaluates string annotations as code"),
    "functools.singledispatchmethod": ("reflection", "evaluates string annotations as code"),
    "torch.Stream": ("resolves", "a side stream"), "torch.Event": ("resolves", "timing"),
    "torch.classes": ("resolves", "operators by name"), "torch.from_dlpack": ("resolves", "raw memory"),
    "torch.frombuffer": ("resolves", "raw memory"), "torch.UntypedStorage": ("resolves", "raw storage"),
    "torch.TypedStorage": ("resolves", "raw storage"),
    "torch.utils.cpp_extension.load": ("resolves", "C++ from files the wall never read"),
    "kernelvault.hip.register_prebuilt": ("resolves", "the harness's own code"),
    "kernelvault.hip.set_launch_observer": ("resolves", "the harness's own code"),
    # Under the interpreter a kernel's `print` shows its values: the process's output streams are the harness's.
    "contextlib.redirect_stdout": ("resolves", "rebinds the process's output streams"),
    "contextlib.redirect_stderr": ("resolves", "rebinds the process's output streams"),
    # A candidate's kernels come from `load_hip(HIP_SOURCE)` (the library the compile stage built from the source
    # the wall read); these load any library and call any of its functions as the candidate's launches.
    "kernelvault.hip.HipKernels": ("resolves", "a loader of any library"),
    "kernelvault.hip.LaunchFunction": ("resolves", "a loader of any library"),
    "kernelvault.hip.parse_launch_functions": ("resolves", "a loader of any library"),
}  # fmt: skip


# What a candidate may call on `os.environ`: reads (`[key]` and `in` are reads too).
ENVIRON_READS = frozenset({"get", "keys", "values", "items", "copy", "__contains__"})


def _home(value: Any) -> str:
    module = getattr(value, "__module__", None)
    return module if isinstance(module, str) else ""


def _is_plain_builtin(value: Any) -> bool:
    name = getattr(value, "__name__", None)
    return isinstance(name, str) and name not in FORBIDDEN_BUILTINS and getattr(builtins, name, None) is value


def _walk(dotted: str) -> Any:
    """The object a dotted path names in the modules already loaded (no import), or _MISSING."""
    parts = dotted.split(".")
    for cut in range(len(parts), 0, -1):
        module = sys.modules.get(".".join(parts[:cut]))
        if module is None:
            continue
        value: Any = module
        for attribute in parts[cut:]:
            value = _static_attribute(value, attribute)
            if value is _MISSING:
                return _MISSING
        return value
    return _MISSING


def _static_attribute(owner: Any, name: str) -> Any:
    """`owner.name` for a module or a class (what the candidate's own access would return), else _MISSING.
    Instances are never read: their attributes run code of their own (`__getattr__`, properties)."""
    if not isinstance(owner, (ModuleType, type)):
        return _MISSING
    try:
        return getattr(owner, name)
    except Exception:  # noqa: BLE001 - an attribute that raises is one the candidate cannot use either
        return _MISSING


class DenySet:
    """The objects refused by identity, rebuilt when a module it draws from is loaded later."""

    def __init__(self) -> None:
        self._lock = threading.Lock()
        self._built_for: frozenset[str] | None = None
        self._entries: dict[int, tuple[Any, str, str]] = {}  # id -> (the object, rule, reason)

    def _sources(self) -> frozenset[str]:
        names = set(MODULE_REASONS) | {"os", "torch.cuda", *(p.rsplit(".", 1)[0] for p in DENIED_PATHS)}
        names |= {path.rsplit(".", 1)[0] for path in NAMESPACE_REASONS}
        return frozenset(name for name in names if name in sys.modules)

    def lookup(self, value: Any) -> tuple[str, str] | None:
        with self._lock:
            sources = self._sources()
            if sources != self._built_for:
                with warnings.catch_warnings():  # reading members can warn (deprecated aliases)
                    warnings.simplefilter("ignore")
                    self._entries = self._build(sources)
                self._built_for = sources
            entry = self._entries.get(id(value))
        if entry is not None and entry[0] is value:
            return entry[1], entry[2]
        return None

    def _build(self, loaded: frozenset[str]) -> dict[int, tuple[Any, str, str]]:
        entries: dict[int, tuple[Any, str, str]] = {}
        # What a policy names as allowed stays allowed, whichever refused module also defines it (`os.cpu_count`
        # is `posix.cpu_count`).
        allowed = {id(getattr(os, name)) for name in OS_ALLOWED if hasattr(os, name)}
        if "torch.cuda" in loaded:
            cuda = sys.modules["torch.cuda"]
            allowed |= {id(getattr(cuda, name)) for name in TORCH_CUDA_ALLOWED if hasattr(cuda, name)}

        def deny(value: Any, rule: str, reason: str) -> None:
            if value is _MISSING or isinstance(value, ModuleType) or _is_plain_builtin(value):
                return  # modules are judged as modules; plain builtins are everyone's
            if id(value) in allowed:
                return
            if isinstance(value, (int, float, str, bytes, bool, tuple, frozenset)) or value is None:
                return  # plain data: nothing to call
            entries.setdefault(id(value), (value, rule, reason))

        for path, (rule, reason) in DENIED_PATHS.items():
            deny(_walk(path), rule, reason)
        for path, reason in NAMESPACE_REASONS.items():
            deny(_walk(path), "resolves", reason)
        # Members a refused module defines itself (not what it re-exports from an allowed one: `inspect` holds
        # `functools`' objects too), however an allowed module re-exports them (`somemodule.Popen`).
        for name, reason in MODULE_REASONS.items():
            if name.startswith(("torch", "triton")):
                continue  # their public objects are re-exported on purpose (`triton.jit`): the modules are refused
            module = sys.modules.get(name) if name in loaded else None
            if module is None:
                continue
            for value in list(vars(module).values()):
                home = _home(value)
                if callable(value) and (
                    home == name or home.startswith(name + ".") or home in ("posix", "_" + name)
                ):
                    deny(value, "resolves", reason)
        if "os" in loaded:
            for member, value in list(vars(sys.modules["os"]).items()):
                if (
                    member not in OS_ALLOWED
                    and callable(value)
                    and _home(value) in ("os", "posix", "posixpath")
                ):
                    deny(value, "resolves", "process and file calls")
        if "torch.cuda" in loaded:
            for member, value in list(vars(sys.modules["torch.cuda"]).items()):
                if member.startswith("__") or member in TORCH_CUDA_ALLOWED or not callable(value):
                    continue
                if _home(value).startswith("torch"):
                    deny(
                        value,
                        "resolves",
                        "the CUDA runtime's machinery (streams, events, graphs, the allocator)",
                    )
        if "torch" in loaded:
            # `torch.ExcludeDispatchKeyGuard` is `torch._C.ExcludeDispatchKeyGuard`: what the C module defines is
            # refused under its public names too, but for what host code needs (dtypes, devices, sizes, errors)
            torch_module = sys.modules["torch"]
            internals = {id(value) for value in vars(sys.modules["torch._C"]).values()}
            for member, value in list(vars(torch_module).items()):
                if (
                    not member.startswith("_")
                    and id(value) in internals
                    and member not in TORCH_C_REEXPORTS_ALLOWED
                ):
                    deny(
                        value,
                        "resolves",
                        "PyTorch's C internals re-exported (dispatch keys, modes, TorchScript)",
                    )
        for name in FORBIDDEN_BUILTINS:
            value = getattr(builtins, name, _MISSING)
            if value is not _MISSING:
                entries.setdefault(id(value), (value, "builtin", FORBIDDEN_BUILTINS[name]))
        return entries


_DENIED = DenySet()


def judge(value: Any) -> tuple[str, str] | None:
    """(rule, reason) when the object is refused, None when it is in the allow-set."""
    if isinstance(value, _Unimported):
        return "resolves", module_reason(value.name).split(": ", 1)[-1]
    if isinstance(value, ModuleType):
        # A library's module, reached from an allowed one: its name is its own (Triton makes some, such as
        # `triton.language.extra.cuda`, without registering them in sys.modules).
        name = getattr(value, "__name__", "")
        if not isinstance(name, str):
            return "resolves", "a module object the wall cannot name"
        if module_allowed(name) and namespace_reason(name) is None:
            return None
        return "resolves", namespace_reason(name) or module_reason(name).split(": ", 1)[-1]
    return _DENIED.lookup(value)


def _import_allowed(name: str) -> ModuleType | None:
    """The module `name`, imported here if the candidate may import it (else None: the import rule refuses it)."""
    if not module_allowed(name) or namespace_reason(name) is not None:
        return None
    try:
        return importlib.import_module(name)
    except Exception:  # noqa: BLE001 - a module that does not import here fails the candidate's import too
        return None


def _chain(node: ast.AST) -> tuple[ast.Name, list[str]] | None:
    """`a.b.c` (and `getattr(a.b, "c")`) as (Name a, ["b", "c"]); None when the root is not a plain name."""
    parts: list[str] = []
    while True:
        if isinstance(node, ast.Attribute):
            parts.append(node.attr)
            node = node.value
        elif _literal_getattr(node):
            assert isinstance(node, ast.Call)
            parts.append(node.args[1].value)  # type: ignore[attr-defined]
            node = node.args[0]
        else:
            break
    if isinstance(node, ast.Name):
        return node, list(reversed(parts))
    return None


def _literal_getattr(node: ast.AST) -> bool:
    return (
        isinstance(node, ast.Call)
        and isinstance(node.func, ast.Name)
        and node.func.id == "getattr"
        and len(node.args) in (2, 3)
        and isinstance(node.args[1], ast.Constant)
        and isinstance(node.args[1].value, str)
    )


class _Unimported:
    """A module a function task's test imports that the candidate may not name (never imported here)."""

    def __init__(self, name: str) -> None:
        self.name = name


class _Bindings:
    """Every object a name may stand for: what imports and aliases bind it to, anywhere in the source. A name is
    also bound to values the wall cannot know (parameters, call results); those are never modules (see the module
    docstring), so the objects here are all a chain rooted at the name can resolve to."""

    def __init__(self) -> None:
        self.objects: dict[str, list[Any]] = {}

    def add(self, name: str, value: Any) -> bool:
        known = self.objects.setdefault(name, [])
        if any(item is value for item in known):
            return False
        known.append(value)
        return True

    def of(self, name: str) -> list[Any]:
        return self.objects.get(name, [])


def _bind_imports(bindings: _Bindings, statements: Iterable[ast.stmt], trusted: bool = False) -> None:
    """Bind what import statements bind. `trusted` (a task's test imports): a module the candidate may not import
    is bound too, to a marker the candidate's uses of it are refused by."""
    for node in statements:
        if isinstance(node, ast.Import):
            for alias in node.names:
                module = _import_allowed(alias.name)
                if module is None:
                    if trusted:
                        local = alias.asname or alias.name.split(".")[0]
                        bindings.add(local, _Unimported(alias.name if alias.asname else local))
                    continue
                if alias.asname:
                    bindings.add(alias.asname, module)
                else:
                    root = sys.modules.get(alias.name.split(".")[0])
                    if root is not None:
                        bindings.add(alias.name.split(".")[0], root)
        elif isinstance(node, ast.ImportFrom) and node.level == 0 and node.module:
            module = _import_allowed(node.module)
            if module is None:
                for alias in node.names if trusted else ():
                    bindings.add(alias.asname or alias.name, _Unimported(node.module))
                continue
            for alias in node.names:
                if alias.name == "*":
                    continue
                value = _static_attribute(module, alias.name)
                if value is _MISSING:
                    value = _import_allowed(f"{node.module}.{alias.name}") or _MISSING
                if value is not _MISSING:
                    bindings.add(alias.asname or alias.name, value)


def _resolve(bindings: _Bindings, root: str, attributes: list[str]) -> Iterator[tuple[int, Any]]:
    """(how many attributes were read, the object) for every prefix of the chain that resolves, from every object
    the root may stand for: `os.path.sys.modules` yields os.path, then sys, then sys.modules."""
    for value in bindings.of(root):
        current = value
        for depth, attribute in enumerate(attributes, start=1):
            current = _static_attribute(current, attribute)
            if current is _MISSING:
                break
            yield depth, current


class _Identity(ast.NodeVisitor):
    def __init__(self, bindings: _Bindings) -> None:
        self.bindings = bindings
        self.findings: list[WallFinding] = []
        self.parents: dict[int, ast.AST] = {}

    def add(self, rule: str, node: ast.AST, reason: str) -> None:
        self.findings.append(WallFinding(rule, getattr(node, "lineno", 0), reason))

    def run(self, tree: ast.Module) -> list[WallFinding]:
        for parent in ast.walk(tree):
            for child in ast.iter_child_nodes(parent):
                self.parents[id(child)] = parent
        self.visit(tree)
        return self.findings

    def _environment_use(self, node: ast.AST, attributes: list[str], depth: int) -> str | None:
        """Why a use of `os.environ` (reached after `depth` of the chain's attributes) is refused, or None for a
        read: `.get(...)` and the other read methods called, `[key]`, `key in`. The process's environment is the
        harness's (where Triton and PyTorch look for their caches and modes), and a write to it, through a method
        or an alias, lasts past the candidate's job. Iterating over it (its names) is a read too."""
        parent = self.parents.get(id(node))
        if depth < len(attributes):
            called = isinstance(parent, ast.Call) and parent.func is node
            if attributes[depth] in ENVIRON_READS and depth + 1 == len(attributes) and called:
                return None
            return f".{attributes[depth]} of os.environ"
        if isinstance(parent, ast.Subscript) and parent.value is node and isinstance(parent.ctx, ast.Load):
            return None
        if isinstance(parent, (ast.For, ast.comprehension)) and parent.iter is node:
            return None  # its names
        if (
            isinstance(parent, ast.Compare)
            and node in parent.comparators
            and all(isinstance(operator, (ast.In, ast.NotIn)) for operator in parent.ops)
        ):
            return None
        return "os.environ used as a value"

    def _judge_chain(self, node: ast.AST, name: ast.Name, attributes: list[str]) -> list[Any]:
        """Judge the objects the chain's root and every prefix resolve to (the first refusal is the finding);
        return the objects the whole chain may be."""
        for value in self.bindings.of(name.id):
            if (verdict := judge(value)) is not None:
                self.add(verdict[0], node, f"{name.id} is {_describe(value)}: {verdict[1]}")
                return []
            if value is os.environ and (problem := self._environment_use(node, attributes, 0)):
                self.add(
                    "foreign_write", node, f"{problem}: only reads of the harness's environment are allowed"
                )
                return []
        if not attributes:
            return list(self.bindings.of(name.id))
        whole: list[Any] = []
        for depth, value in _resolve(self.bindings, name.id, attributes):
            if (verdict := judge(value)) is not None:
                shown = ".".join([name.id, *attributes[:depth]])
                self.add(verdict[0], node, f"{shown} is {_describe(value)}: {verdict[1]}")
                return []
            if value is os.environ and (problem := self._environment_use(node, attributes, depth)):
                self.add(
                    "foreign_write", node, f"{problem}: only reads of the harness's environment are allowed"
                )
                return []
            if depth == len(attributes):
                whole.append(value)
        return whole

    def _outermost(self, node: ast.AST) -> bool:
        """True when no chain continues from this node (`a.b` inside `a.b.c` is not outermost)."""
        parent = self.parents.get(id(node))
        if isinstance(parent, ast.Attribute) and parent.value is node:
            return False
        return not (_literal_getattr(parent) and parent.args[0] is node)  # type: ignore[union-attr]

    def _module_as_value(self, node: ast.AST, spelled: str, objects: list[Any]) -> None:
        if not objects or not all(isinstance(value, ModuleType) for value in objects):
            return
        parent = self.parents.get(id(node))
        # a class body's name is an attribute (`Backend.lib._C`), which the wall does not follow like a name
        in_class = isinstance(self.parents.get(id(parent)), ast.ClassDef)
        if (
            isinstance(parent, ast.Assign)
            and parent.value is node
            and all(isinstance(target, ast.Name) for target in parent.targets)
            and not in_class
        ):
            return  # an alias: `F = torch.nn.functional`, followed like an import
        if (
            isinstance(parent, ast.AnnAssign)
            and parent.value is node
            and isinstance(parent.target, ast.Name)
            and not in_class
        ):
            return
        if isinstance(parent, ast.Expr):
            return  # a bare statement: nothing holds it
        if (
            isinstance(parent, ast.Call)
            and isinstance(parent.func, ast.Name)
            and parent.func.id == "hasattr"
            and parent.args[:1] == [node]
        ):
            return  # `hasattr(tl, "...")`: a question about the module, answered True or False
        self.add("resolves", node, f"{spelled} is a module used as a value: a module may only be named, its "
                 "attributes used")  # fmt: skip

    def visit_ImportFrom(self, node: ast.ImportFrom) -> None:
        """`from operator import attrgetter` binds a refused object under its own name: judged where it is bound."""
        module = _import_allowed(node.module) if node.module and node.level == 0 else None
        for alias in node.names if module is not None else ():
            value = _static_attribute(module, alias.name)
            if value is not _MISSING and (verdict := judge(value)) is not None:
                self.add(verdict[0], node, f"{node.module}.{alias.name} is {_describe(value)}: {verdict[1]}")

    def visit_Name(self, node: ast.Name) -> None:
        if isinstance(node.ctx, ast.Load) and self._outermost(node):
            objects = self._judge_chain(node, node, [])
            self._module_as_value(node, node.id, objects)
        if node.id == "getattr" and isinstance(node.ctx, ast.Load) and not self.bindings.of("getattr"):
            parent = self.parents.get(id(node))
            if not (isinstance(parent, ast.Call) and parent.func is node):
                self.add("reflection", node, "getattr used as a value: attributes by computed names")

    def visit_Attribute(self, node: ast.Attribute) -> None:
        if self._outermost(node):
            chain = _chain(node)
            if chain is not None:
                objects = self._judge_chain(node, *chain)
                self._module_as_value(node, ".".join([chain[0].id, *chain[1]]), objects)
                self._visit_inside_chain(node)
                return
        self.generic_visit(node)

    def visit_Call(self, node: ast.Call) -> None:
        if _literal_getattr(node) and self._outermost(node):
            chain = _chain(node)
            if chain is not None:
                objects = self._judge_chain(node, *chain)
                self._module_as_value(node, ".".join([chain[0].id, *chain[1]]), objects)
                self._visit_inside_chain(node)
                for extra in [*node.args[2:], *(keyword.value for keyword in node.keywords)]:
                    self.visit(extra)
                return
        func = node.func
        if (
            isinstance(func, ast.Attribute)
            and func.attr in ("format", "format_map")
            and isinstance(func.value, ast.Constant)
            and isinstance(func.value.value, str)
            and _reads_attributes(func.value.value)
        ):
            self.add("reflection", node, "a format string that reads attributes or items by name")
        self.generic_visit(node)

    def _visit_inside_chain(self, node: ast.AST) -> None:
        """A chain's root and links are judged as one; what hangs off it (a getattr default) is visited."""
        while isinstance(node, (ast.Attribute, ast.Call)):
            if isinstance(node, ast.Call):
                for extra in [*node.args[2:], *(keyword.value for keyword in node.keywords)]:
                    self.visit(extra)
                node = node.args[0]
            else:
                node = node.value
        if not isinstance(node, ast.Name):
            self.visit(node)


def _reads_attributes(template: str) -> bool:
    try:
        fields = [field for _, field, _, _ in string.Formatter().parse(template) if field]
    except ValueError:
        return False
    return any("." in field or "[" in field for field in fields)


def _describe(value: Any) -> str:
    if isinstance(value, ModuleType):
        return f"the module {value.__name__}"
    if isinstance(value, _Unimported):
        return f"the module {value.name} (a test import)"
    name = getattr(value, "__qualname__", None) or getattr(value, "__name__", None) or type(value).__name__
    home = _home(value)
    return f"{home}.{name}" if home and isinstance(name, str) else str(name)


def _alias_pairs(tree: ast.Module) -> list[tuple[str, ast.AST]]:
    """(name, value) of every `name = <chain>` in the source, at any depth."""
    pairs = []
    for node in ast.walk(tree):
        if isinstance(node, ast.Assign) and _chain(node.value) is not None:
            pairs += [(target.id, node.value) for target in node.targets if isinstance(target, ast.Name)]
        elif isinstance(node, ast.AnnAssign) and node.value is not None and isinstance(node.target, ast.Name):
            if _chain(node.value) is not None:
                pairs.append((node.target.id, node.value))
        elif isinstance(node, ast.NamedExpr) and _chain(node.value) is not None:
            pairs.append((node.target.id, node.value))
    return pairs


def identity_findings(tree: ast.Module, test_imports: Iterable[str] = ()) -> list[WallFinding]:
    """Every identity rule the source breaks. `test_imports`: a function task's test import lines, which run in the
    candidate's module after it is imported (`kernelvault.toolchain.function_tasks.test_imports`)."""
    bindings = _Bindings()
    _bind_imports(
        bindings, [node for node in ast.walk(tree) if isinstance(node, (ast.Import, ast.ImportFrom))]
    )
    for line in test_imports:
        try:
            _bind_imports(bindings, ast.parse(line).body, trusted=True)
        except SyntaxError:
            continue
    aliases = _alias_pairs(tree)
    changed = True
    while changed:  # aliases of aliases: `F = torch.nn.functional; G = F`
        changed = False
        for name, value in aliases:
            chain = _chain(value)
            assert chain is not None
            root, attributes = chain
            candidates = list(bindings.of(root.id)) if not attributes else []
            candidates += [
                obj for depth, obj in _resolve(bindings, root.id, attributes) if depth == len(attributes)
            ]
            for obj in candidates:
                changed |= bindings.add(name, obj)
    return _Identity(bindings).run(tree)

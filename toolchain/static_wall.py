"""The static wall: what a candidate's source may reach, decided before any of it runs.

The watchers inside the candidate's process (`kernelvault.toolchain.sandboxed.integrity`) are tripwires: code in that process can
switch them off, with the interpreter's own machinery (frames, the garbage collector, `ctypes`, `torch._C`,
raw file and process calls). An honest kernel needs none of that machinery, so the wall refuses source
that names it. Every rule has a one-line reason, the message names the line, and a rule's refusal is a
`static_reject` (reward 0): the candidate never runs.

The rules, by what they stop:
- `import`: only modules a kernel's host code needs (torch and its nn/functional/autograd/cpp_extension,
  triton and triton.language, math and typing helpers, `os` for its environment and paths,
  `kernelvault.hip`). Everything else is refused, the dangerous ones with their own reason.
- `private`: `_name` attributes of anything but the candidate's own objects (`self`, `cls`, `ctx`, its own
  functions and classes): `torch._C`, `tensor._cdata`, `threading._start_new_thread`. Dunders other than
  `__init__`, `__name__`, `__qualname__` and `__doc__`: `__class__`, `__dict__`, `__globals__`,
  `__subclasses__`, `__builtins__`.
- `builtin`: `eval`, `exec`, `compile`, `__import__`, `globals`, `locals`, `vars`, `open`, `setattr`,
  `delattr`, `breakpoint`, `memoryview`, `input`; `getattr` with a name that is not a literal; `type` used other
  than as `type(x)` (aliased, subclassed, three arguments) and `metaclass=`: classes made at run time.
- `namespace`: parts of allowed modules that are machinery, not kernels: `torch.compile`, `torch.jit`,
  `torch.fx`, `torch.library`, `torch.ops`, `torch.overrides`, `torch.profiler`, `torch.save`/`load`,
  `torch.cuda` streams and graphs, `triton.runtime` internals, `triton.compiler`, `triton.knobs`, most of
  `os`.
- `host_data`: `.numpy()`, `.tolist()`, `.storage()`, `.untyped_storage()`: computing on tensor data in
  Python instead of a kernel.
- `frames`: `f_back`, `f_locals`, `f_globals`, `gi_frame`, `tb_frame`, ... (callers' frames reach the harness).
- `foreign_write`: attribute or item writes on objects the candidate did not create (an imported module,
  a builtin, an alias of either: `torch.relu = ...`, `os.environ[...] = ...`), and writes to `.data` or a
  dunder of anything.
- `kernel_python`: a call inside a `@triton.jit` body to something that is not Triton or another kernel
  (a builtin's method, `str.format`, included): under the CPU interpreter a kernel body is plain Python, and
  would run it; and a `triton.language` memory operation (`tl.load`, `tl.store`) outside a kernel, which the interpreter runs on
  host memory (in a grid callable).
- `proc`: a string naming `/proc/` or `/dev/`.
- `conversion`: a class defining `__float__`, `__index__`, `__iter__`, `__getitem__`, `__array__`, `__torch_function__`...:
  PyTorch calls these while it turns Python objects into tensors, where the dispatch monitor does not look.
- `tensor_subclass`: a subclass of `torch.Tensor` (its `__torch_dispatch__` runs beside the monitor's).
- `unbound`: a name the module never binds (not an import, assignment, definition or builtin): in honest code a
  NameError; otherwise something put in the module at run time (Triton's interpreter copies `np`, `inspect`...
  into a kernel's module at its first launch).
- `hip_source`: in HIP C++ (a native `HIP_SOURCE`, `load_inline` sources): system calls, processes,
  threads, dynamic loading, files, the environment, load-time constructors, and ATen/torch calls other
  than allocation (the host code of a HIP library runs in the harness's process).

What it does NOT stop: computing the answer with PyTorch through names it allows (`torch.relu`,
`F.softmax`): that is what the dispatch monitor (`torch_compute`) and, on GPUs, the device's record of
which kernels ran are for. A rule is a tripwire of its own kind: each is tested with a candidate that trips
it (tests/test_static_wall.py), and the bundled examples and honest adversarial kernels pass every rule.
"""

from __future__ import annotations

import ast
import builtins
import codecs
import functools
import re
import types
from collections.abc import Iterable

from kernelvault.toolchain.source_tree import parse as parse_source
from kernelvault.toolchain.source_tree import source_lines
from kernelvault.toolchain.static_check import is_triton_jit
from kernelvault.toolchain.wall_names import identity_findings
from kernelvault.toolchain.wall_policy import (
    ALLOWED_DUNDERS,
    ALLOWED_PRIVATE,
    CONVERSION_METHODS,
    FORBIDDEN_BUILTINS,
    FRAME_ATTRIBUTES,
    HOST_DATA_METHODS,
    KERNEL_BUILTINS,
    KERNEL_HANDLE_ATTRIBUTES,
    LEGACY_TENSOR_TYPES,
    OS_ALLOWED,
    OWN_ROOTS,
    TENSOR_CLASSES,
    WallFinding,
    module_allowed,
    module_reason,
    namespace_reason,
)

_HIP_FORBIDDEN = (
    (re.compile(r"\b(?:syscall|fork|vfork|execve?|execl|execvp|system|popen|posix_spawn\w*|kill|ptrace)\s*\("),
     "system calls and processes"),
    (re.compile(r"\b(?:dlopen|dlsym|dlmopen)\s*\("), "dynamic loading"),
    (re.compile(r"\b(?:fopen|freopen|open|openat|creat|unlink|rename|mmap|mprotect|fwrite)\s*\("), "files and memory maps"),
    (re.compile(r"\b(?:getenv|secure_getenv|environ)\b"), "the environment"),
    (re.compile(r"\bstd::(?:thread|async|jthread)\b|\bpthread_\w+"), "threads"),
    (re.compile(r"__attribute__\s*\(\(\s*(?:constructor|destructor)"), "code that runs when the library loads"),
    (re.compile(r"/proc/|/dev/"), "/proc or /dev paths"),
    # host code computing on tensor data needs it on the host: a copy back, or memory both sides can read
    (re.compile(r"\b(?:hip|cuda)(?:Memcpy\w*(?:DtoH|DeviceToHost|Default)\w*|MallocManaged|HostMalloc|HostAlloc|"
                r"MallocHost|HostRegister|HostGetDevicePointer|MemcpyKind)\b|\b(?:hip|cuda)Memcpy(?:DeviceToHost|Default)\b|"
                r"\.cpu\s*\(|\bkCPU\b"), "device memory brought to the host (host code computing on tensor data)"),
    (re.compile(r"#\s*include\s*[<\"](?:unistd|dlfcn|fcntl|pthread|signal|sys/[\w/]+|spawn|thread|fstream|filesystem)"
                r"(?:\.h)?[>\"]"), "a system header for processes, threads or files"),
)  # fmt: skip
# Attributes of a Triton value that are the interpreter's (or the compiler's) own objects: under the CPU
# interpreter `x.handle.data` is a NumPy array, so a kernel body would compute on the host.
KERNEL_INTERNALS = {
    "handle": "the interpreter's (or compiler's) handle of a value, not Triton",
    "data": "the interpreter's host array of a value, not Triton",
}
_ATEN_CALL = re.compile(r"\b(?:at|torch)::(\w+)\s*\(")
ATEN_ALLOWED = frozenset({"empty", "empty_like", "zeros", "zeros_like", "ones", "ones_like", "full", "full_like",
                          "empty_strided", "TensorOptions", "Tensor", "device", "Device", "dtype", "scalarTypeToTypeMeta"})  # fmt: skip


def _constant_exception(node: ast.expr | None, parameters: set[str]) -> bool:
    """`raise`, `raise E`, `raise m.E`, `raise E("text", 3)`, `raise E(f"bad BLOCK {BLOCK}")`: what is raised
    says nothing the kernel computed or loaded. An f-string may name the kernel's parameters (what the host
    passed it: constexprs, sizes, pointers), never a value the kernel made."""

    def plain(value: ast.expr) -> bool:
        if isinstance(value, ast.Constant):
            return True
        if isinstance(value, ast.JoinedStr):
            return all(
                isinstance(part, ast.Constant)
                or (isinstance(part, ast.FormattedValue) and isinstance(part.value, ast.Name)
                    and part.value.id in parameters and part.format_spec is None)
                for part in value.values
            )  # fmt: skip
        return False

    if node is None or _chain(node) is not None:
        return True
    return (
        isinstance(node, ast.Call)
        and _chain(node.func) is not None
        and all(plain(argument) for argument in node.args)
        and all(plain(keyword.value) for keyword in node.keywords)
    )


def _chain(node: ast.AST) -> list[str] | None:
    """`a.b.c` as ["a", "b", "c"]; None when the root is not a plain name."""
    parts: list[str] = []
    while isinstance(node, ast.Attribute):
        parts.append(node.attr)
        node = node.value
    if isinstance(node, ast.Name):
        return [node.id, *reversed(parts)]
    return None


def _private_path(node: ast.Attribute) -> bool:
    """Every attribute between the chain's root name and `node` is private (`self._a._b`), so each is the
    candidate's own state; a call anywhere in the chain returns something else."""
    value = node.value
    while isinstance(value, ast.Attribute):
        if not value.attr.startswith("_"):
            return False
        value = value.value
    return isinstance(value, ast.Name)


def _root(node: ast.AST) -> ast.AST:
    while isinstance(node, (ast.Attribute, ast.Subscript, ast.Call)):
        node = node.func if isinstance(node, ast.Call) else node.value
    return node


class _Wall(ast.NodeVisitor):
    def __init__(self) -> None:
        self.findings: list[WallFinding] = []
        self.imports: dict[str, str] = {}  # local name -> the module (or module.attribute) it stands for
        self.foreign: set[str] = set()  # module-level names bound to an import or an attribute chain of one
        self.own: set[str] = set(OWN_ROOTS)  # the candidate's own module-level functions and classes
        self.kernels: set[str] = set()
        self.in_kernel = 0
        self.raised_calls: set[int] = set()  # `raise E("text")` in a kernel: E's call is the raise's
        self.callees: set[int] = set()  # names called directly (`str(x)`: judged as a call, not as a value)
        self.plain_type_calls: set[int] = set()  # `type(x)`: the one use of `type` that makes no class
        self.kernel_parameters: list[set[str]] = []  # the enclosing kernels' parameter names, innermost last
        self.scopes: list[tuple[str, set[str]]] = []  # enclosing function/class/comprehension scopes' names
        self.module_names: set[str] = set()  # names bound at module level (or declared global anywhere)
        self.objects: set[str] = set()  # module-level names bound to objects (`_global_object`)

    def add(self, rule: str, node: ast.AST, reason: str) -> None:
        self.findings.append(WallFinding(rule, getattr(node, "lineno", 0), reason))

    # -- the module's names ---------------------------------------------------------------------------

    def prepare(self, tree: ast.Module, test_imports: Iterable[str] = ()) -> None:
        self.module_names = _bindings(tree.body) | _star_names(tree)
        if test_imports:  # a function task's test import lines join the candidate's module when it runs
            self.module_names |= _bindings(parse_source("\n".join(test_imports)).body)
        for node in ast.walk(tree):
            if isinstance(node, ast.Global):
                self.module_names |= set(node.names)
        for node in tree.body:
            if isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef, ast.ClassDef)):
                self.own.add(node.name)
                if isinstance(node, ast.FunctionDef) and any(is_triton_jit(d) for d in node.decorator_list):
                    self.kernels.add(node.name)
        for node in ast.walk(tree):
            if isinstance(node, ast.Import):
                for alias in node.names:
                    local = alias.asname or alias.name.split(".")[0]
                    self.imports[local] = alias.name if alias.asname else alias.name.split(".")[0]
            elif isinstance(node, ast.ImportFrom) and node.module and node.level == 0:
                for alias in node.names:
                    self.imports[alias.asname or alias.name] = f"{node.module}.{alias.name}"
        for (
            node
        ) in tree.body:  # module-level names bound to objects (not data, imports, kernels or constexprs)
            if (
                isinstance(node, (ast.Assign, ast.AnnAssign))
                and node.value is not None
                and not _is_data(node.value, self.own | self.objects)
            ):
                targets = node.targets if isinstance(node, ast.Assign) else [node.target]
                self.objects |= {
                    leaf.id for target in targets for leaf in ast.walk(target) if isinstance(leaf, ast.Name)
                }
        for node in tree.body:  # aliases of imports: `T = torch.Tensor`, `F = torch.nn.functional`
            if isinstance(node, ast.Assign) and (chain := _chain(node.value)) and chain[0] in self.imports:
                for target in node.targets:
                    if isinstance(target, ast.Name):
                        self.foreign.add(target.id)

    def _resolve(self, chain: list[str]) -> str | None:
        """The dotted path a chain names when it starts at an import: `F.relu` -> torch.nn.functional.relu."""
        if chain[0] in self.imports:
            return ".".join([self.imports[chain[0]], *chain[1:]])
        return None

    # -- imports ---------------------------------------------------------------------------------------

    def visit_Import(self, node: ast.Import) -> None:
        for alias in node.names:
            self._check_module(node, alias.name)

    def visit_ImportFrom(self, node: ast.ImportFrom) -> None:
        if node.level:
            self.add("import", node, "a relative import: a candidate is one file")
            return
        module = node.module or ""
        self._check_module(node, module)
        for alias in node.names:
            if alias.name == "*" and not module.startswith("triton.language"):
                self.add("import", node, f"from {module} import *: names the wall cannot see")
            elif module == "os" and alias.name not in OS_ALLOWED:
                self.add("namespace", node, f"os.{alias.name}: process and file calls")
            else:
                full = f"{module}.{alias.name}"
                if not module_allowed(full) and (_reason := namespace_reason(full)):
                    self.add("namespace", node, f"{full}: {_reason}")
                elif (
                    alias.name.startswith("_")
                    and alias.name not in ALLOWED_DUNDERS
                    and full not in ALLOWED_PRIVATE
                ):
                    self.add("private", node, f"{full}: a private name")

    def _check_module(self, node: ast.AST, name: str) -> None:
        if name.startswith("kv_task") or name.startswith("kv_candidate"):
            self.add("import", node, f"import {name}: the harness's modules")
        elif not module_allowed(name):
            self.add("import", node, module_reason(name))

    # -- names and attributes ----------------------------------------------------------------------

    def visit_Name(self, node: ast.Name) -> None:
        if (
            self.in_kernel
            and isinstance(node.ctx, ast.Load)
            and self._global_object(node.id)
            and not self._kernel_local(node.id)
        ):
            # passed to a builtin (`print(x, file=SINK)`, `len(OBJ)`) it runs its Python methods on the kernel's
            # values under the interpreter; a compiled kernel reads only constexpr globals
            self.add("kernel_python", node, f"{node.id} inside a @triton.jit kernel is a Python object")
        if (
            self.in_kernel
            and isinstance(node.ctx, ast.Load)
            and hasattr(builtins, node.id)
            and node.id not in KERNEL_BUILTINS
            and id(node) not in self.callees
            and not _plain_builtin_type(node.id)
            and self.is_builtin(node.id)
        ):
            # a builtin function as a value in a kernel (`f = format`): called later, it is Python (a builtin type
            # as a value, `isinstance(X, str)`, is not; its methods are judged as attributes)
            self.add("kernel_python", node, f"{node.id} inside a @triton.jit kernel is a Python object")
        if node.id in FORBIDDEN_BUILTINS and isinstance(node.ctx, ast.Load) and self.is_builtin(node.id):
            self.add("builtin", node, f"{node.id}: {FORBIDDEN_BUILTINS[node.id]}")
        elif (
            node.id == "type"
            and isinstance(node.ctx, ast.Load)
            and id(node) not in self.plain_type_calls
            and self.is_builtin("type")
        ):
            # `make = type`, `class Meta(type)`, `type(a, b, c)`: a class made at run time, whose methods the
            # wall never reads (PyTorch calls a class's `__float__` where the monitor does not look)
            self.add("builtin", node, "type other than type(x): a class made at run time")
        elif (
            isinstance(node.ctx, ast.Load) and node.id in interpreter_injected() and self.is_builtin(node.id)
        ):
            # Bound by nothing the candidate wrote, and a name Triton's interpreter copies from its own module into
            # a kernel's at the first launch (`np`, `inspect`, `TensorHandle`, ...): what it stands for is
            # something the candidate may not import. (The worker runs the interpreter in a namespace of its
            # own; this is the rule in front of that.)
            self.add("unbound", node, f"{node.id}: a name the module never binds")
        elif (
            node.id.startswith("__")
            and node.id.endswith("__")
            and node.id not in ALLOWED_DUNDERS | {"__file__"}
        ):
            self.add("private", node, f"{node.id}: interpreter internals")

    def visit_Attribute(self, node: ast.Attribute) -> None:
        if self.in_kernel:
            self._check_kernel_global(node)
            root = _root(node)
            if (
                isinstance(root, ast.Name)
                and root is node.value
                and hasattr(builtins, root.id)
                and self.is_builtin(root.id)
            ):
                # `str.format`, `float.fromhex`: a builtin's method, called or kept, is Python under the interpreter
                self.add(
                    "kernel_python", node, f"{root.id}.{node.attr} inside a @triton.jit kernel is not Triton"
                )
            if node.attr in KERNEL_INTERNALS:
                self.add("kernel_python", node, f".{node.attr} inside a @triton.jit kernel: "
                         f"{KERNEL_INTERNALS[node.attr]}")  # fmt: skip
        name = node.attr
        root = _root(node)
        # the candidate's own object: `self._cache`, `cls._table._rows`; not through a public attribute
        # (`self.weight._cdata`, `Backend.lib._C`: what that holds may be anything)
        own = isinstance(root, ast.Name) and root.id in self.own and _private_path(node)
        if name.startswith("__") and name.endswith("__"):
            if name not in ALLOWED_DUNDERS:
                self.add("private", node, f".{name}: interpreter internals")
        elif name.startswith("_") and not own:
            chain = _chain(node)
            if chain is None or self._resolve(chain) not in ALLOWED_PRIVATE:
                self.add(
                    "private", node, f".{name}: a private attribute of something the candidate did not make"
                )
        if name in FRAME_ATTRIBUTES:
            self.add("frames", node, f".{name}: frames reach the harness")
        if name in HOST_DATA_METHODS:
            self.add("host_data", node, f".{name}(): {HOST_DATA_METHODS[name]}, not a kernel")
        if name in KERNEL_HANDLE_ATTRIBUTES:
            self.add("namespace", node, f".{name}: {KERNEL_HANDLE_ATTRIBUTES[name]}")
        chain = _chain(node)
        if chain is not None:
            dotted = self._resolve(chain)
            if dotted is not None:
                if dotted.startswith("os.") and dotted.split(".")[1] not in OS_ALLOWED:
                    self.add("namespace", node, f"{dotted}: process and file calls")
                elif reason := namespace_reason(dotted):
                    self.add("namespace", node, f"{dotted}: {reason}")
        self.generic_visit(node)

    def visit_Constant(self, node: ast.Constant) -> None:
        if isinstance(node.value, str) and ("/proc/" in node.value or "/dev/" in node.value):
            self.add("proc", node, "a /proc or /dev path")

    def visit_MatchClass(self, node: ast.MatchClass) -> None:
        # `case object(__globals__=g)`, `case object(_C=c)`: an attribute read by name with no attribute node
        self.add("reflection", node, "a class pattern in `match` reads attributes by name")
        self.generic_visit(node)

    def visit_MatchMapping(self, node: ast.MatchMapping) -> None:
        self.add("reflection", node, "a mapping pattern in `match` reads a mapping's entries by name")
        self.generic_visit(node)

    def visit_Global(self, node: ast.Global) -> None:
        if (
            self.in_kernel
        ):  # the kernel's values bound to a module name, for host code to read after the launch
            self.add(
                "kernel_python", node, "global inside a @triton.jit kernel: a kernel writes memory, not names"
            )

    def visit_Nonlocal(self, node: ast.Nonlocal) -> None:
        if self.in_kernel:
            self.add(
                "kernel_python",
                node,
                "nonlocal inside a @triton.jit kernel: a kernel writes memory, not names",
            )

    def visit_Raise(self, node: ast.Raise) -> None:
        # Triton compiles a `raise` only in a branch its constexprs rule out (`else: raise ValueError("bad
        # ACTIVATION")` in real answers); under the interpreter a raised message with a value in it carries the
        # kernel's data to host code, so an exception in a kernel is named by constants alone.
        parameters = self.kernel_parameters[-1] if self.kernel_parameters else set()
        if self.in_kernel and not _constant_exception(node.exc, parameters):
            self.add(
                "kernel_python", node, "raise inside a @triton.jit kernel with more than a constant message"
            )
        elif isinstance(node.exc, ast.Call):
            self.raised_calls.add(
                id(node.exc)
            )  # the exception's own construction, not a call of the kernel's
        self.generic_visit(node)

    def visit_Call(self, node: ast.Call) -> None:
        func = node.func
        if isinstance(func, ast.Name):
            self.callees.add(id(func))
            if func.id == "type" and len(node.args) == 1 and not node.keywords:
                self.plain_type_calls.add(id(func))
        if (chain := _chain(func)) is not None and (self._resolve(chain) or "") in LEGACY_TENSOR_TYPES:
            self.add("conversion", node, f"{'.'.join(chain)}(...): a legacy constructor converts Python objects out "
                     "of the monitor's sight (torch.tensor, torch.empty and .to(dtype) do the same work)")  # fmt: skip
        if (
            isinstance(func, ast.Call)
            and isinstance(func.func, ast.Name)
            and func.func.id == "type"
            and self.is_builtin("type")
        ):
            self.add("builtin", node, "type(x)(...): a class made at run time through an object's type")
        if isinstance(func, ast.Name) and func.id in ("getattr", "hasattr") and self.is_builtin(func.id):
            if len(node.args) < 2 or not (
                isinstance(node.args[1], ast.Constant) and isinstance(node.args[1].value, str)
            ):
                if func.id == "getattr":
                    self.add("builtin", node, "getattr with a computed name: attributes the wall cannot see")
            else:
                literal = node.args[1].value
                probe = ast.Attribute(value=node.args[0], attr=literal, ctx=ast.Load(), lineno=node.lineno)
                self.visit_Attribute(probe)
        if self.in_kernel:
            self._check_kernel_call(node)
        elif (chain := _chain(func)) is not None and (dotted := self._resolve(chain) or "").startswith(
            "triton.language."
        ):
            member = dotted.rsplit(".", 1)[-1]
            if member in TRITON_MEMORY_OPS:
                # `tl.load` in a grid callable or any host code: compiled, it fails outside a kernel; under the CPU
                # interpreter (inside a launch) it reads and writes host memory as Python
                self.add("kernel_python", node, f"{'.'.join(chain)}() outside a @triton.jit kernel")
        self.generic_visit(node)

    def _check_kernel_call(self, node: ast.Call) -> None:
        chain = _chain(node.func)
        if chain is None:
            return
        if chain == ["print"] and self.is_builtin("print") and any(k.arg == "file" for k in node.keywords):
            # Triton's print has no file: under the interpreter `file=` hands the kernel's values to a write()
            self.add(
                "kernel_python", node, "print(file=...) inside a @triton.jit kernel writes to a Python object"
            )
        head = chain[0]
        dotted = self._resolve(chain) or ""
        if dotted.startswith(("triton", "math.")) or head in self.kernels or head in KERNEL_BUILTINS:
            return  # Triton itself, another kernel, or what Triton lowers (math.* on constexprs)
        if (
            len(chain) == 1
            and hasattr(builtins, head)
            and self.is_builtin(head)
            and id(node) not in self.raised_calls
        ):
            # A builtin Triton does not compile (`str`, `repr`, `ValueError`): under the CPU interpreter it runs on
            # the loaded values (a tensor's text is its data), and on a GPU the kernel would not compile.
            self.add("kernel_python", node, f"{head}() inside a @triton.jit kernel is not Triton")
            return
        if self._kernel_local(head):
            return  # a local of the kernel: a Triton value's method (x.to), a constexpr argument
        if (
            head not in self.imports
            and head not in self.own
            and head not in self.foreign
            and not self._global_object(head)
        ):
            if head in self.module_names:
                # a module-level list's `append` (any method of module data): under the interpreter it takes the
                # kernel's values out to host code; compiled, a kernel reads only constexpr globals
                self.add(
                    "kernel_python",
                    node,
                    f"{'.'.join(chain)}() inside a @triton.jit kernel calls a Python object",
                )
            return
        self.add("kernel_python", node, f"{'.'.join(chain)}() inside a @triton.jit kernel is not Triton")

    def _check_kernel_global(self, node: ast.Attribute) -> None:
        """An attribute of a module-level object read inside a kernel: under the CPU interpreter a kernel body is
        Python, and a property runs Python there (a compiled kernel may read only constexpr globals)."""
        chain = _chain(node)
        if chain is None or self._kernel_local(chain[0]) or not self._global_object(chain[0]):
            return
        self.add(
            "kernel_python", node, f"{'.'.join(chain)} inside a @triton.jit kernel reads a Python object"
        )

    def _kernel_local(self, name: str) -> bool:
        """Bound in the enclosing kernel's own scope (a parameter, an assignment)."""
        return any(kind == "function" and name in names for kind, names in self.scopes[-1:])

    def _global_object(self, name: str) -> bool:
        """A module-level name bound to something other than data, an import, a kernel or a constexpr: an object
        whose methods and properties are Python."""
        return name in self.objects

    # -- definitions and writes --------------------------------------------------------------------

    # -- scopes: a name is the builtin only where nothing in its scope chain binds it ------------------

    def is_builtin(self, name: str) -> bool:
        innermost = True
        for kind, names in reversed(self.scopes):
            if (kind != "class" or innermost) and name in names:
                return False
            innermost = False
        return name not in self.module_names

    def _visit_in_scope(self, kind: str, names: set[str], nodes: list[ast.AST]) -> None:
        self.scopes.append((kind, names))
        for child in nodes:
            self.visit(child)
        self.scopes.pop()

    def visit_FunctionDef(self, node: ast.FunctionDef) -> None:
        # Decorators and defaults run where the function is defined: outside its scope, outside any kernel.
        for outside in [
            *node.decorator_list,
            *node.args.defaults,
            *[d for d in node.args.kw_defaults if d],
            node.returns,
        ]:
            if outside is not None:
                self.visit(outside)
        kernel = any(is_triton_jit(d) for d in node.decorator_list)
        self.in_kernel += kernel
        if kernel:
            arguments = [*node.args.posonlyargs, *node.args.args, *node.args.kwonlyargs]
            # a parameter the body binds again (`x = tl.load(x)`) may hold what the kernel loaded
            self.kernel_parameters.append({argument.arg for argument in arguments} - _bindings(node.body))
        self._visit_in_scope("function", _bindings(node.body, node.args), list(node.body))
        if kernel:
            self.kernel_parameters.pop()
        self.in_kernel -= kernel

    visit_AsyncFunctionDef = visit_FunctionDef  # type: ignore[assignment]

    def visit_Lambda(self, node: ast.Lambda) -> None:
        for outside in [*node.args.defaults, *[d for d in node.args.kw_defaults if d]]:
            self.visit(outside)
        self._visit_in_scope("function", _bindings([], node.args), [node.body])

    def visit_ClassDef(self, node: ast.ClassDef) -> None:
        for outside in [*node.decorator_list, *node.bases, *[keyword.value for keyword in node.keywords]]:
            self.visit(outside)
        if any(keyword.arg == "metaclass" for keyword in node.keywords):
            self.add(
                "builtin", node, f"class {node.name}(metaclass=...): a class made by the candidate's own code"
            )
        for base in node.bases:
            chain = _chain(base)
            dotted = self._resolve(chain) if chain is not None else None
            if dotted in TENSOR_CLASSES:
                self.add("tensor_subclass", base, f"class {node.name}({dotted}): a tensor subclass's own dispatch "
                         "runs beside the monitor's")  # fmt: skip
            elif dotted and (inherited := _inherited_conversions(dotted)):
                self.add("conversion", base, f"class {node.name}({dotted}) inherits {', '.join(inherited)}: PyTorch "
                         "calls them while it turns Python objects into tensors, out of the monitor's sight")  # fmt: skip
        for statement in node.body:
            names = (
                [statement.name] if isinstance(statement, (ast.FunctionDef, ast.AsyncFunctionDef))
                else [leaf.id for target in getattr(statement, "targets", [getattr(statement, "target", None)])
                      if target is not None for leaf in ast.walk(target) if isinstance(leaf, ast.Name)]
            )  # fmt: skip
            for name in names:
                if name in CONVERSION_METHODS:
                    self.add("conversion", statement, f"{node.name}.{name}: PyTorch calls it while it turns Python "
                             "objects into tensors, where the dispatch monitor does not see what it does")  # fmt: skip
        self._visit_in_scope("class", _bindings(node.body), list(node.body))

    def _visit_comprehension(
        self, node: ast.ListComp | ast.SetComp | ast.GeneratorExp | ast.DictComp
    ) -> None:
        self.visit(node.generators[0].iter)  # evaluated in the enclosing scope
        names: set[str] = set()
        for generator in node.generators:
            names |= {leaf.id for leaf in ast.walk(generator.target) if isinstance(leaf, ast.Name)}
        inside: list[ast.AST] = [generator.target for generator in node.generators]
        inside += [generator.iter for generator in node.generators[1:]]
        inside += [condition for generator in node.generators for condition in generator.ifs]
        inside += [node.key, node.value] if isinstance(node, ast.DictComp) else [node.elt]
        self._visit_in_scope("comprehension", names, inside)

    visit_ListComp = visit_SetComp = visit_GeneratorExp = visit_DictComp = _visit_comprehension  # type: ignore[assignment]

    def _check_target(self, target: ast.AST) -> None:
        if isinstance(target, (ast.Tuple, ast.List)):
            for element in target.elts:
                self._check_target(element)
            return
        if isinstance(target, ast.Starred):
            self._check_target(target.value)
            return
        if not isinstance(target, (ast.Attribute, ast.Subscript)):
            return
        if isinstance(target, ast.Attribute) and (target.attr == "data" or target.attr.startswith("__")):
            self.add("foreign_write", target, f"writing .{target.attr}: rebinds what an object is")
            return
        root = _root(target)
        if self.in_kernel and isinstance(root, ast.Name) and not self._kernel_local(root.id):
            # a kernel's value stored into a Python object (`BOX[0] = x`, `kernel.seen = x`): host code reads it
            # after the launch; a compiled kernel stores through pointers only
            self.add(
                "kernel_python", target, f"writing into {root.id} inside a @triton.jit kernel: not Triton"
            )
            return
        if isinstance(root, ast.Name) and (root.id in self.imports or root.id in self.foreign
                                           or root.id in FORBIDDEN_BUILTINS or root.id in ("torch", "triton", "tl")):  # fmt: skip
            self.add(
                "foreign_write", target, f"writing into {root.id}: an object the candidate did not create"
            )

    def visit_Assign(self, node: ast.Assign) -> None:
        for target in node.targets:
            self._check_target(target)
        self.generic_visit(node)

    def visit_AugAssign(self, node: ast.AugAssign) -> None:
        self._check_target(node.target)
        self.generic_visit(node)

    def visit_AnnAssign(self, node: ast.AnnAssign) -> None:
        self._check_target(node.target)
        self.generic_visit(node)

    def visit_Delete(self, node: ast.Delete) -> None:
        for target in node.targets:
            self._check_target(target)
        self.generic_visit(node)


def _is_data(node: ast.AST, objects: set[str]) -> bool:
    """A value built only from literals and names of data (`1024`, `(1, 2)`, `-1`, `2 ** 10`, `tl.constexpr(1024)`,
    `math.sqrt(2.0)`, `BLOCK * 2`, `tl.float32`): not an object whose methods a kernel could run. `objects`: names known to be
    objects (the candidate's classes and functions, earlier module-level objects)."""
    if isinstance(node, ast.Name):
        return node.id not in objects
    if isinstance(node, ast.Call):
        chain = _chain(node.func)
        # `tl.constexpr(1024)`, `math.sqrt(2 / math.pi)`, `float("inf")`: numbers made from numbers
        maker = chain is not None and (
            chain[-1] == "constexpr"
            or (len(chain) == 2 and chain[0] == "math" and chain[0] not in objects)
            or (len(chain) == 1 and chain[0] in ("float", "int") and chain[0] not in objects)
        )
        return maker and not node.keywords and all(_is_data(arg, objects) for arg in node.args)
    if isinstance(node, (ast.Lambda, ast.ListComp, ast.SetComp, ast.DictComp, ast.GeneratorExp, ast.Await,
                         ast.Yield, ast.YieldFrom, ast.NamedExpr)):  # fmt: skip
        return False
    return all(
        _is_data(child, objects) for child in ast.iter_child_nodes(node) if isinstance(child, ast.expr)
    )


def _bindings(body: list[ast.stmt], arguments: ast.arguments | None = None) -> set[str]:
    """The names a scope binds (its parameters, assignments, imports, definitions, loop and `as` targets),
    not looking into the scopes nested in it. `global` names are the module's, not the scope's."""
    names: set[str] = set()
    if arguments is not None:
        every = [
            *arguments.posonlyargs,
            *arguments.args,
            *arguments.kwonlyargs,
            arguments.vararg,
            arguments.kwarg,
        ]
        names |= {argument.arg for argument in every if argument is not None}
    declared_global: set[str] = set()
    stack: list[ast.AST] = list(body)
    while stack:
        node = stack.pop()
        if isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef, ast.ClassDef)):
            names.add(node.name)
            continue
        if isinstance(node, (ast.Lambda, ast.ListComp, ast.SetComp, ast.GeneratorExp, ast.DictComp)):
            continue
        if isinstance(node, ast.Name) and isinstance(node.ctx, (ast.Store, ast.Del)):
            names.add(node.id)
        elif isinstance(node, (ast.Import, ast.ImportFrom)):
            names |= {(alias.asname or alias.name).split(".")[0] for alias in node.names}
        elif isinstance(node, ast.ExceptHandler) and node.name:
            names.add(node.name)
        elif isinstance(node, (ast.MatchAs, ast.MatchStar)) and node.name:
            names.add(node.name)
        elif isinstance(node, ast.Global):
            declared_global |= set(node.names)
        stack.extend(ast.iter_child_nodes(node))
    return names - declared_global


BUILTIN_NAMES = frozenset(dir(builtins))


def _plain_builtin_type(name: str) -> bool:
    """A builtin data type (`str`, `int`, `tuple`): named as a value in `isinstance(X, str)`; not `type` or `object`,
    which make classes."""
    value = getattr(builtins, name, None)
    return isinstance(value, type) and value not in (type, object) and not issubclass(value, BaseException)


# The triton.language operations that read or write memory: outside a kernel (a grid callable), the interpreter
# would run them on host memory as Python.
TRITON_MEMORY_OPS = frozenset({
    "load", "store", "atomic_add", "atomic_and", "atomic_cas", "atomic_max", "atomic_min", "atomic_or",
    "atomic_xchg", "atomic_xor", "make_block_ptr", "advance", "make_tensor_descriptor", "load_tensor_descriptor",
    "store_tensor_descriptor", "inline_asm_elementwise",
})  # fmt: skip


@functools.cache
def interpreter_injected() -> frozenset[str]:
    """The names of Triton's CPU interpreter module that stand for something a candidate may not import itself
    (modules the import rules refuse, and everything that is not a module)."""
    try:
        from triton.runtime import interpreter
    except ImportError:
        return frozenset()
    names = set()
    for name, value in vars(interpreter).items():
        if name.startswith("__") or name in BUILTIN_NAMES:
            continue
        home = value.__name__ if isinstance(value, types.ModuleType) else getattr(value, "__module__", None)
        if isinstance(home, str) and home != interpreter.__name__ and module_allowed(home):
            continue  # `math`, `triton`, `tl`, `typing.Tuple`: the candidate could have imported them
        names.add(name)
    return frozenset(names)


def _inherited_conversions(dotted: str) -> list[str]:
    """The conversion methods a class named by an import path (`collections.UserList`) has from classes that are
    neither builtins nor PyTorch's: inherited, they run the candidate's data through Python, as its own would."""
    import importlib

    module_name, _, attribute = dotted.rpartition(".")
    try:
        found = getattr(importlib.import_module(module_name), attribute)
    except Exception:  # noqa: BLE001 - not a module attribute the wall can load: the import rules judge the name
        return []
    if not isinstance(found, type):
        return []
    trusted = ("builtins", "torch")
    return sorted({name for kind in found.__mro__ if kind.__module__.split(".")[0] not in trusted
                   for name in CONVERSION_METHODS & set(vars(kind))})  # fmt: skip


def _star_names(tree: ast.Module) -> set[str]:
    """The names `from MODULE import *` binds (the wall allows it for triton.language only): the module's public
    names, read from the module itself."""
    import importlib

    names: set[str] = set()
    for node in ast.walk(tree):
        if (
            isinstance(node, ast.ImportFrom)
            and node.module
            and any(alias.name == "*" for alias in node.names)
        ):
            try:
                module = importlib.import_module(node.module)
            except Exception:  # noqa: BLE001 - an import that fails fails the candidate when it runs
                continue
            exported = getattr(module, "__all__", None)
            names |= (
                set(exported) if exported is not None else {n for n in vars(module) if not n.startswith("_")}
            )
    return names


def _check_tree(code: str, tree: ast.Module, test_imports: Iterable[str] = ()) -> list[WallFinding]:
    wall = _Wall()
    wall.prepare(tree, test_imports)
    wall.visit(tree)
    findings = wall.findings + identity_findings(tree, test_imports) + definition_text_findings(code, tree)
    return sorted(findings, key=lambda finding: finding.line)


_DEF_LINE = re.compile(r"^\s*(?:async\s+)?def\s")


def definition_text_findings(code: str, tree: ast.Module) -> list[WallFinding]:
    """A line inside a function's source that reads as a `def` but is not one (a docstring's, a string's): Triton
    finds a kernel's definition by its text (its CPU interpreter takes the last line starting with "def ", its JIT
    the first), so such a line makes it compile or run the text after it instead of the code the wall read."""
    lines = source_lines(code)
    functions = [node for node in ast.walk(tree) if isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef))]
    real = {node.lineno for node in functions}
    called = {id(node.func) for node in ast.walk(tree) if isinstance(node, ast.Call)}
    # a function Triton could be given: decorated (`@triton.jit`, or an alias of it), or used as a value
    # anywhere (`triton.jit(f)`, `kernels = [f]`); one only ever called is plain host code
    as_values = {
        node.id
        for node in ast.walk(tree)
        if isinstance(node, ast.Name) and isinstance(node.ctx, ast.Load) and id(node) not in called
    }
    findings = []
    for node in functions:
        if not node.decorator_list and node.name not in as_values:
            continue
        first = min([node.lineno, *(decorator.lineno for decorator in node.decorator_list)])
        for number in range(first, (node.end_lineno or node.lineno) + 1):
            if number not in real and number <= len(lines) and _DEF_LINE.match(lines[number - 1]):
                findings.append(WallFinding("kernel_python", number, "a line that reads as a `def` inside a "
                                            "function's text: Triton finds a kernel's definition by its text"))  # fmt: skip
    return sorted(set(findings), key=lambda finding: finding.line)


# PEP 263: a comment on line 1 or 2 naming the source's encoding.
_CODING = re.compile(r"^[ \t\f]*#.*?coding[:=][ \t]*([-\w.]+)")


def encoding_finding(code: str) -> WallFinding | None:
    """A coding declaration other than UTF-8: the wall reads the text as UTF-8, and Python would decode the file's
    bytes as declared (`utf-7` turns a comment into code). The worker compiles the checked text itself, so this is
    refused for what it means, not for what it would do."""
    for number, line in enumerate(source_lines(code.lstrip("\ufeff"))[:2], start=1):
        declared = _CODING.match(line)
        if declared is None:
            continue
        try:
            name = codecs.lookup(declared.group(1)).name
        except LookupError:
            name = declared.group(1)
        if name != "utf-8":
            return WallFinding("encoding", number, f"a coding declaration ({declared.group(1)}): the source is "
                               "read as UTF-8, and only UTF-8 may be declared")  # fmt: skip
    return None


def check_python(code: str, test_imports: Iterable[str] = ()) -> list[WallFinding]:
    """Every rule the Python source breaks (empty: it may run). Syntax errors are the static stage's.
    `test_imports`: a function task's test import lines, which join the candidate's module when it runs."""
    encoding = encoding_finding(code)
    try:
        findings = _check_tree(code, parse_source(code), test_imports)
    except SyntaxError:
        findings = []
    return sorted([encoding, *findings] if encoding else findings, key=lambda finding: finding.line)


def check_cpp(source: str, first_line: int = 1) -> list[WallFinding]:
    """Rules for HIP/C++ source that is compiled into a library the harness's process loads."""
    findings = []
    for pattern, reason in _HIP_FORBIDDEN:
        for match in pattern.finditer(source):
            findings.append(
                WallFinding("hip_source", first_line + source.count("\n", 0, match.start()), reason)
            )
            break
    for match in _ATEN_CALL.finditer(source):
        if match.group(1) not in ATEN_ALLOWED:
            line = first_line + source.count("\n", 0, match.start())
            findings.append(
                WallFinding("hip_source", line, f"{match.group(0)[:-1]}: PyTorch computes it, not a kernel")
            )
    return findings


# What builds or loads native code: a Triton candidate's kernels are Triton, and C++ built into the worker's
# process is host code that computes on tensor data where no kernel runs (a loop over `data_ptr`).
_NATIVE_CODE_NAMES = frozenset({"cpp_extension", "load_inline"})


def native_code_findings(tree: ast.Module) -> list[WallFinding]:
    """A Triton candidate that reaches `torch.utils.cpp_extension` (by import, attribute or the literal name
    `getattr` would read) or imports `kernelvault` (for `kernelvault.hip`)."""
    findings = []
    reason = (
        "native code in a Triton candidate: its kernels are Triton, and C++ in the worker runs on the host"
    )
    for node in ast.walk(tree):
        names: set[str] = set()
        if isinstance(node, ast.Import):
            names = {part for alias in node.names for part in alias.name.split(".")}
        elif isinstance(node, ast.ImportFrom):
            names = {*(node.module or "").split("."), *(alias.name for alias in node.names)}
        elif isinstance(node, ast.Attribute):
            names = {node.attr}
        elif isinstance(node, ast.Constant) and isinstance(node.value, str):
            names = {node.value}
        if (
            isinstance(node, (ast.Import, ast.ImportFrom))
            and "kernelvault" in names
            or _NATIVE_CODE_NAMES & names
        ):
            findings.append(WallFinding("namespace", node.lineno, reason))
    return findings


def _string_literals(tree: ast.Module) -> list[tuple[str, int]]:
    return [
        (node.value, node.lineno)
        for node in ast.walk(tree)
        if isinstance(node, ast.Constant) and isinstance(node.value, str)
    ]


def check_candidate(code: str, target: str, test_imports: Iterable[str] = ()) -> WallFinding | None:
    """The first rule `code` breaks, or None. HIP candidates also have their C++ strings checked."""
    encoding = encoding_finding(code)
    if encoding is not None:
        return encoding
    try:
        tree = parse_source(code)
    except SyntaxError:
        return None  # the static stage's to report
    findings = _check_tree(code, tree, test_imports)
    if target == "hip":
        for text, line in _string_literals(tree):
            findings += check_cpp(text, line)
    else:
        findings += native_code_findings(tree)
    findings = sorted(findings, key=lambda finding: (finding.line, finding.rule))
    return findings[0] if findings else None

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
  `delattr`, `breakpoint`, `memoryview`, `input`; `getattr` with a name that is not a literal; `type` with
  three arguments (a class made at run time).
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
- `kernel_python`: a call inside a `@triton.jit` body to something that is not Triton or another kernel:
  under the CPU interpreter a kernel body is plain Python, and would run it.
- `proc`: a string naming `/proc/` or `/dev/`.
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
import re
from dataclasses import dataclass

from kernelvault.toolchain.source_tree import parse as parse_source
from kernelvault.toolchain.static_check import is_triton_jit

# Modules a candidate may import, and their submodules where the entry ends with ".*".
ALLOWED_MODULES = (
    "torch", "torch.nn", "torch.nn.functional", "torch.nn.init", "torch.nn.parameter", "torch.nn.modules.*",
    "torch.autograd", "torch.autograd.function", "torch.cuda", "torch.cuda.amp", "torch.amp", "torch.utils",
    "torch.utils.cpp_extension", "torch.types", "triton", "triton.language", "triton.language.*",
    "triton.runtime.driver", "triton.runtime", "kernelvault", "kernelvault.hip", "math", "typing",
    "typing_extensions", "functools", "itertools", "operator", "collections", "collections.abc", "dataclasses",
    "enum", "abc", "numbers", "warnings", "contextlib", "copy", "random", "time", "logging", "einops", "os",
    "__future__", "packaging", "packaging.version", "torch.linalg", "torch.fft", "torch.special", "torch.testing",
    "torch.distributions", "triton.testing",
)  # fmt: skip
# Refused with a reason of their own (the rest of the world: "not a module a kernel needs").
MODULE_REASONS = {
    "sys": "interpreter internals (sys.modules, frames, the import system)",
    "gc": "the garbage collector reaches every object of the harness",
    "ctypes": "raw memory and C calls below Python", "cffi": "raw memory and C calls below Python",
    "inspect": "frames and source of the harness", "traceback": "frames of the harness",
    "threading": "threads escape the per-thread dispatch monitor", "_thread": "threads escape the monitor",
    "multiprocessing": "processes", "concurrent": "threads and processes", "subprocess": "processes",
    "importlib": "loading modules and files by name", "builtins": "the interpreter's builtins",
    "posix": "raw system calls", "io": "raw file I/O", "pathlib": "file I/O", "shutil": "file I/O",
    "tempfile": "file I/O", "socket": "the network", "signal": "signal handlers", "resource": "process limits",
    "pickle": "arbitrary code on load", "marshal": "code objects", "types": "code, frame and function objects",
    "weakref": "finalizers and references into the harness", "atexit": "code after the job",
    "numpy": "host computation on tensor data", "numba": "another compiler", "cupy": "another GPU library",
    "torch._C": "PyTorch's C internals (dispatch keys, modes)", "torch._dynamo": "torch.compile",
    "torch._inductor": "torch.compile generates the kernels", "torch.fx": "graph capture", "torch.jit": "TorchScript",
    "torch.library": "custom operators", "torch.overrides": "function modes", "torch.profiler": "the profiler",
    "torch.utils._python_dispatch": "dispatch modes", "torch.multiprocessing": "processes",
    "torch.distributed": "the network", "torch.hub": "downloads", "torch.package": "code loading",
    "triton.compiler": "Triton's compiler internals", "triton.runtime.jit": "Triton's launcher",
    "triton.runtime.interpreter": "Triton's interpreter", "triton.runtime.cache": "the build cache",
    "triton.knobs": "Triton's hooks", "triton.backends": "Triton's backends",
}  # fmt: skip
# Attribute chains refused anywhere (`torch.compile(...)`, `triton.knobs.runtime...`).
NAMESPACE_REASONS = {
    # `kernelvault` is importable for `kernelvault.hip`; the harness's own packages live under it too
    **{f"kernelvault.{package}": "the harness's own code" for package in (
        "toolchain", "agents", "corpus", "pipelines", "sft", "rl", "tasks", "examples", "contracts", "cli")},
    "torch.compile": "torch.compile generates the kernels", "torch.jit": "TorchScript", "torch.fx": "graph capture",
    "torch.library": "custom operators", "torch.ops": "operators by name", "torch.overrides": "function modes",
    "torch.profiler": "the profiler", "torch.autograd.profiler": "the profiler", "torch.autograd.graph": "autograd hooks",
    "torch.save": "files", "torch.load": "files", "torch.from_file": "files", "torch.hub": "downloads",
    "torch.package": "code loading", "torch.onnx": "export", "torch.export": "export",
    "torch.multiprocessing": "processes", "torch.distributed": "the network",
    "torch.use_deterministic_algorithms": "the harness's settings", "torch.set_default_dtype": "process state",
    "torch.set_default_device": "process state", "torch.set_grad_enabled": "process state",
    "torch.cuda.Stream": "a side stream", "torch.cuda.stream": "a side stream", "torch.cuda.set_stream": "a side stream",
    "torch.cuda.ExternalStream": "a side stream", "torch.cuda.graph": "graph capture", "torch.cuda.graphs": "graph capture",
    "torch.cuda.CUDAGraph": "graph capture", "torch.cuda.memory": "allocator internals", "torch.cuda.Event": "timing",
    "torch.utils.data": "data loading", "torch.utils.hooks": "hooks", "torch.backends": "the harness's settings",
    "triton.runtime.jit": "Triton's launcher", "triton.runtime.interpreter": "Triton's interpreter",
    "triton.runtime.cache": "the build cache", "triton.runtime.autotuner": "Triton's autotuner internals",
    "triton.runtime.build": "Triton's build", "triton.compiler": "Triton's compiler", "triton.compile": "Triton's compiler",
    "triton.knobs": "Triton's hooks", "triton.backends": "Triton's backends",
}  # fmt: skip
# What `os` may be used for: its environment (read) and path arithmetic.
OS_ALLOWED = frozenset(
    {"environ", "getenv", "path", "cpu_count", "sep", "pathsep", "linesep", "name", "curdir"}
)
ALLOWED_DUNDERS = frozenset({"__init__", "__name__", "__qualname__", "__doc__", "__version__"})
FORBIDDEN_BUILTINS = {
    "eval": "runs code from a string", "exec": "runs code from a string", "compile": "makes code objects",
    "__import__": "imports by name", "globals": "the module's namespace as a dict", "locals": "frames",
    "vars": "namespaces as dicts", "open": "files", "setattr": "writes attributes by name",
    "delattr": "deletes attributes by name", "breakpoint": "the debugger", "memoryview": "raw memory",
    "input": "stdin", "__builtins__": "the interpreter's builtins", "__loader__": "the import system",
    "__spec__": "the import system",
}  # fmt: skip
HOST_DATA_METHODS = {"numpy": "tensor data to NumPy", "tolist": "tensor data to Python lists",
                     "storage": "raw storage", "untyped_storage": "raw storage", "__array__": "tensor data to NumPy"}  # fmt: skip
FRAME_ATTRIBUTES = frozenset({"f_back", "f_locals", "f_globals", "f_builtins", "f_code", "f_trace", "gi_frame",
                              "cr_frame", "ag_frame", "tb_frame", "tb_next", "gi_code", "co_code", "func_globals"})  # fmt: skip
OWN_ROOTS = frozenset({"self", "cls", "ctx"})
# Private helpers of PyTorch that honest modules call to initialise their own parameters like nn.Linear does.
ALLOWED_PRIVATE = frozenset({
    "torch.nn.init._calculate_fan_in_and_fan_out", "torch.nn.init._calculate_correct_fan",
    "torch.nn.modules.utils._pair", "torch.nn.modules.utils._single", "torch.nn.modules.utils._triple",
    "torch.nn.modules.utils._quadruple", "torch.nn.modules.utils._ntuple",
})  # fmt: skip
# Callables a @triton.jit body may name besides triton/tl and other kernels.
KERNEL_BUILTINS = frozenset({"range", "min", "max", "abs", "len", "int", "float", "bool", "print", "isinstance",
                             "getattr", "hasattr", "tuple", "list", "zip", "enumerate", "round"})  # fmt: skip

_HIP_FORBIDDEN = (
    (re.compile(r"\b(?:syscall|fork|vfork|execve?|execl|execvp|system|popen|posix_spawn\w*|kill|ptrace)\s*\("),
     "system calls and processes"),
    (re.compile(r"\b(?:dlopen|dlsym|dlmopen)\s*\("), "dynamic loading"),
    (re.compile(r"\b(?:fopen|freopen|open|openat|creat|unlink|rename|mmap|mprotect|fwrite)\s*\("), "files and memory maps"),
    (re.compile(r"\b(?:getenv|secure_getenv|environ)\b"), "the environment"),
    (re.compile(r"\bstd::(?:thread|async|jthread)\b|\bpthread_\w+"), "threads"),
    (re.compile(r"__attribute__\s*\(\(\s*(?:constructor|destructor)"), "code that runs when the library loads"),
    (re.compile(r"/proc/|/dev/"), "/proc or /dev paths"),
    (re.compile(r"#\s*include\s*[<\"](?:unistd|dlfcn|fcntl|pthread|signal|sys/[\w/]+|spawn|thread|fstream|filesystem)"
                r"(?:\.h)?[>\"]"), "a system header for processes, threads or files"),
)  # fmt: skip
_ATEN_CALL = re.compile(r"\b(?:at|torch)::(\w+)\s*\(")
ATEN_ALLOWED = frozenset({"empty", "empty_like", "zeros", "zeros_like", "ones", "ones_like", "full", "full_like",
                          "empty_strided", "TensorOptions", "Tensor", "device", "Device", "dtype", "scalarTypeToTypeMeta"})  # fmt: skip


@dataclass(frozen=True)
class WallFinding:
    rule: str
    line: int
    reason: str

    def message(self) -> str:
        return f"forbidden: {self.rule}: {self.reason} (line {self.line})"


def _module_allowed(name: str) -> bool:
    for entry in ALLOWED_MODULES:
        if entry.endswith(".*") and (name == entry[:-2] or name.startswith(entry[:-1])):
            return True
        if name == entry:
            return True
    return False


def _module_reason(name: str) -> str:
    for prefix in sorted(MODULE_REASONS, key=len, reverse=True):
        if name == prefix or name.startswith(prefix + "."):
            return f"import {name}: {MODULE_REASONS[prefix]}"
    if name.startswith(("torch._", "triton._")) or any(part.startswith("_") for part in name.split(".")):
        return f"import {name}: a private module"
    return f"import {name}: not a module a kernel's host code needs"


def _chain(node: ast.AST) -> list[str] | None:
    """`a.b.c` as ["a", "b", "c"]; None when the root is not a plain name."""
    parts: list[str] = []
    while isinstance(node, ast.Attribute):
        parts.append(node.attr)
        node = node.value
    if isinstance(node, ast.Name):
        return [node.id, *reversed(parts)]
    return None


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
        self.scopes: list[tuple[str, set[str]]] = []  # enclosing function/class/comprehension scopes' names
        self.module_names: set[str] = set()  # names bound at module level (or declared global anywhere)

    def add(self, rule: str, node: ast.AST, reason: str) -> None:
        self.findings.append(WallFinding(rule, getattr(node, "lineno", 0), reason))

    # -- the module's names ---------------------------------------------------------------------------

    def prepare(self, tree: ast.Module) -> None:
        self.module_names = _bindings(tree.body)
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
                if not _module_allowed(full) and (_reason := self._namespace_reason(full)):
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
        elif not _module_allowed(name):
            self.add("import", node, _module_reason(name))

    def _namespace_reason(self, dotted: str) -> str | None:
        for prefix in sorted(NAMESPACE_REASONS, key=len, reverse=True):
            if dotted == prefix or dotted.startswith(prefix + "."):
                return NAMESPACE_REASONS[prefix]
        for prefix in sorted(MODULE_REASONS, key=len, reverse=True):
            if dotted == prefix or dotted.startswith(prefix + "."):
                return MODULE_REASONS[prefix]
        return None

    # -- names and attributes ----------------------------------------------------------------------

    def visit_Name(self, node: ast.Name) -> None:
        if node.id in FORBIDDEN_BUILTINS and isinstance(node.ctx, ast.Load) and self.is_builtin(node.id):
            self.add("builtin", node, f"{node.id}: {FORBIDDEN_BUILTINS[node.id]}")
        elif (
            node.id.startswith("__")
            and node.id.endswith("__")
            and node.id not in ALLOWED_DUNDERS | {"__file__"}
        ):
            self.add("private", node, f"{node.id}: interpreter internals")

    def visit_Attribute(self, node: ast.Attribute) -> None:
        name = node.attr
        root = _root(node)
        own = isinstance(root, ast.Name) and root.id in self.own and not isinstance(node.value, ast.Call)
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
        chain = _chain(node)
        if chain is not None:
            dotted = self._resolve(chain)
            if dotted is not None:
                if dotted.startswith("os.") and dotted.split(".")[1] not in OS_ALLOWED:
                    self.add("namespace", node, f"{dotted}: process and file calls")
                elif reason := self._namespace_reason(dotted):
                    self.add("namespace", node, f"{dotted}: {reason}")
        self.generic_visit(node)

    def visit_Constant(self, node: ast.Constant) -> None:
        if isinstance(node.value, str) and ("/proc/" in node.value or "/dev/" in node.value):
            self.add("proc", node, "a /proc or /dev path")

    def visit_Call(self, node: ast.Call) -> None:
        func = node.func
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
        if (
            isinstance(func, ast.Name)
            and func.id == "type"
            and len(node.args) == 3
            and self.is_builtin("type")
        ):
            self.add("builtin", node, "type() with three arguments: a class made at run time")
        if self.in_kernel:
            self._check_kernel_call(node)
        self.generic_visit(node)

    def _check_kernel_call(self, node: ast.Call) -> None:
        chain = _chain(node.func)
        if chain is None:
            return
        head = chain[0]
        dotted = self._resolve(chain) or ""
        if dotted.startswith(("triton", "math.")) or head in self.kernels or head in KERNEL_BUILTINS:
            return  # Triton itself, another kernel, or what Triton lowers (math.* on constexprs)
        if head not in self.imports and head not in self.own and head not in self.foreign:
            return  # a local of the kernel: a Triton value's method (x.to), a constexpr argument
        self.add("kernel_python", node, f"{'.'.join(chain)}() inside a @triton.jit kernel is not Triton")

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
        self._visit_in_scope("function", _bindings(node.body, node.args), list(node.body))
        self.in_kernel -= kernel

    visit_AsyncFunctionDef = visit_FunctionDef  # type: ignore[assignment]

    def visit_Lambda(self, node: ast.Lambda) -> None:
        for outside in [*node.args.defaults, *[d for d in node.args.kw_defaults if d]]:
            self.visit(outside)
        self._visit_in_scope("function", _bindings([], node.args), [node.body])

    def visit_ClassDef(self, node: ast.ClassDef) -> None:
        for outside in [*node.decorator_list, *node.bases, *[keyword.value for keyword in node.keywords]]:
            self.visit(outside)
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


def _check_tree(tree: ast.Module) -> list[WallFinding]:
    wall = _Wall()
    wall.prepare(tree)
    wall.visit(tree)
    return sorted(wall.findings, key=lambda finding: finding.line)


def check_python(code: str) -> list[WallFinding]:
    """Every rule the Python source breaks (empty: it may run). Syntax errors are the static stage's."""
    try:
        return _check_tree(parse_source(code))
    except SyntaxError:
        return []


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


def _string_literals(tree: ast.Module) -> list[tuple[str, int]]:
    return [
        (node.value, node.lineno)
        for node in ast.walk(tree)
        if isinstance(node, ast.Constant) and isinstance(node.value, str)
    ]


def check_candidate(code: str, target: str) -> WallFinding | None:
    """The first rule `code` breaks, or None. HIP candidates also have their C++ strings checked."""
    try:
        tree = parse_source(code)
    except SyntaxError:
        return None  # the static stage's to report
    findings = _check_tree(tree)
    if target == "hip":
        for text, line in _string_literals(tree):
            findings += check_cpp(text, line)
    findings = sorted(findings, key=lambda finding: (finding.line, finding.rule))
    return findings[0] if findings else None

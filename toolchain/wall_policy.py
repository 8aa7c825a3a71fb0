"""The static wall's policy: which modules, names and objects a candidate's source may reach, and why not.

Tables only, read by the spelling rules (`kernelvault.toolchain.static_wall`) and by the identity rules
(`kernelvault.toolchain.wall_names`, which judge what a name resolves to). Keeping them in one place means an
alias and its spelling get the same answer.
"""

from __future__ import annotations

from dataclasses import dataclass

# Modules a candidate may import, and their submodules where the entry ends with ".*".
ALLOWED_MODULES = (
    "torch", "torch.nn", "torch.nn.*", "torch.version", "torch.return_types", "torch.random", "torch.optim",
    "torch.optim.*",
    "torch.autograd", "torch.autograd.function", "torch.cuda", "torch.cuda.amp", "torch.amp", "torch.utils",
    "torch.utils.cpp_extension", "torch.types", "triton", "triton.language", "triton.language.*",
    "triton.runtime.driver", "triton.runtime", "kernelvault", "kernelvault.hip", "posixpath", "math", "typing",
    "typing_extensions", "functools", "itertools", "operator", "collections", "collections.abc", "dataclasses",
    "enum", "abc", "numbers", "warnings", "contextlib", "copy", "random", "time", "logging", "einops", "os",
    "__future__", "packaging", "packaging.version", "torch.linalg", "torch.fft", "torch.special", "torch.testing",
    "torch.distributions", "torch.distributions.*", "triton.testing", "torch.func",
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
    "torch.nn.parallel": "threads and processes", "torch.use_deterministic_algorithms": "the harness's settings", "torch.set_default_dtype": "process state",
    "torch.set_default_device": "process state", "torch.set_grad_enabled": "process state",
    "torch.cuda.Stream": "a side stream", "torch.cuda.stream": "a side stream", "torch.cuda.set_stream": "a side stream",
    "torch.cuda.ExternalStream": "a side stream", "torch.cuda.graph": "graph capture", "torch.cuda.graphs": "graph capture",
    "torch.cuda.CUDAGraph": "graph capture", "torch.cuda.memory": "allocator internals", "torch.cuda.Event": "timing",
    "torch.utils.data": "data loading", "torch.utils.hooks": "hooks", "torch.backends": "the harness's settings",
    "triton.runtime.jit": "Triton's launcher", "triton.runtime.interpreter": "Triton's interpreter",
    "triton.runtime.cache": "the build cache", "triton.runtime.autotuner": "Triton's autotuner internals",
    "triton.runtime.build": "Triton's build", "triton.compiler": "Triton's compiler", "triton.compile": "Triton's compiler",
    "triton.knobs": "Triton's hooks", "triton.backends": "Triton's backends",
    # `torch.func` is allowed for `functional_call` (a function task's entry over a module); its transforms
    # run the candidate's code under functorch's own dispatch layers, which a kernel's host code never needs
    **{f"torch.func.{name}": "functorch transforms" for name in (
        "vmap", "grad", "grad_and_value", "jacrev", "jacfwd", "hessian", "jvp", "vjp", "linearize",
        "functionalize", "debug_unwrap", "rearrange")},
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
                     "storage": "raw storage", "untyped_storage": "raw storage", "__array__": "tensor data to NumPy",
                     "apply_": "a Python function on every element", "map_": "a Python function on every element",
                     "map2_": "a Python function on every element"}  # fmt: skip
# Attributes refused on any object: what hands a candidate a compiled kernel's raw launcher or the device library
# by another name. A kernel launched past the harness's launcher is neither counted nor named; a binary loaded
# through Triton's driver is not one the harness compiled; `get_device_interface()` is torch.cuda (side streams).
KERNEL_HANDLE_ATTRIBUTES = {
    "warmup": "compiles a kernel and hands back its raw launcher, past the harness's",
    "get_device_interface": "the device library (streams, events) by another name",
    "load_binary": "loads a binary the harness did not compile", "launcher_cls": "Triton's raw launcher",
    "packed_metadata": "a compiled kernel's raw launch arguments",
}  # fmt: skip
FRAME_ATTRIBUTES = frozenset({"f_back", "f_locals", "f_globals", "f_builtins", "f_code", "f_trace", "gi_frame",
                              "cr_frame", "ag_frame", "tb_frame", "tb_next", "gi_code", "co_code", "func_globals"})  # fmt: skip
OWN_ROOTS = frozenset({"self", "cls", "ctx"})
# Private helpers of PyTorch that honest modules call to initialise their own parameters like nn.Linear does.
ALLOWED_PRIVATE = frozenset({
    "torch.nn.init._calculate_fan_in_and_fan_out", "torch.nn.init._calculate_correct_fan",
    "torch.nn.modules.utils._pair", "torch.nn.modules.utils._single", "torch.nn.modules.utils._triple",
    "torch.nn.modules.utils._quadruple", "torch.nn.modules.utils._ntuple",
})  # fmt: skip
# What PyTorch's C++ calls on Python objects while it builds a tensor from data (`torch.tensor([obj])`: each
# element's `__float__`, a sequence's `__iter__`...) or takes a number from one, with the Python dispatch key
# excluded, so that code there runs out of the dispatch monitor's sight; and a class's own dispatch hooks. A
# candidate's class may define none of them (`conversion`; `sandboxed.integrity.CandidateClasses` behind it).
CONVERSION_METHODS = frozenset({
    "__float__", "__int__", "__index__", "__complex__", "__bool__", "__trunc__", "__iter__", "__next__",
    "__len__", "__getitem__", "__array__", "__array_interface__", "__cuda_array_interface__", "__dlpack__",
    "__dlpack_device__", "__buffer__", "__torch_function__", "__torch_dispatch__",
    # attribute lookup itself: `isinstance(obj, Tensor)` reads `obj.__class__` through `__getattribute__`, and a
    # sequence's items through `__getattr__`, inside the same conversion
    "__getattr__", "__getattribute__", "__class__",
})  # fmt: skip
# PyTorch's legacy typed constructors (`torch.FloatTensor([obj])`): the same conversion, through classes whose
# construction cannot be wrapped; `torch.tensor`, `torch.empty` and `.to(dtype)` do what they did.
LEGACY_TENSOR_TYPES = frozenset(
    f"torch.{prefix}{kind}Tensor"
    for prefix in ("", "cuda.")
    for kind in ("Float", "Double", "Half", "BFloat16", "Byte", "Char", "Short", "Int", "Long", "Bool",
                 "ComplexFloat", "ComplexDouble")
)  # fmt: skip
# Classes a candidate may not subclass: a tensor subclass's `__torch_dispatch__` runs after the monitor has
# stepped aside for the op (`tensor_subclass`).
TENSOR_CLASSES = frozenset({"torch.Tensor", "torch.nn.Parameter", "torch.nn.parameter.Parameter",
                            "torch.nn.parameter.Buffer", "torch._C.TensorBase"})  # fmt: skip
# Callables a @triton.jit body may name besides triton/tl and other kernels.
KERNEL_BUILTINS = frozenset({"range", "min", "max", "abs", "len", "int", "float", "bool", "print", "isinstance",
                             "getattr", "hasattr", "tuple", "list", "zip", "enumerate", "round"})  # fmt: skip


@dataclass(frozen=True)
class WallFinding:
    rule: str
    line: int
    reason: str

    def message(self) -> str:
        return f"forbidden: {self.rule}: {self.reason} (line {self.line})"


def module_allowed(name: str) -> bool:
    for entry in ALLOWED_MODULES:
        if entry.endswith(".*") and (name == entry[:-2] or name.startswith(entry[:-1])):
            return True
        if name == entry:
            return True
    return False


def module_reason(name: str) -> str:
    for prefix in sorted(MODULE_REASONS, key=len, reverse=True):
        if name == prefix or name.startswith(prefix + "."):
            return f"import {name}: {MODULE_REASONS[prefix]}"
    if name.startswith(("torch._", "triton._")) or any(part.startswith("_") for part in name.split(".")):
        return f"import {name}: a private module"
    return f"import {name}: not a module a kernel's host code needs"


def namespace_reason(dotted: str) -> str | None:
    """Why a dotted path (`torch.compile`, `os.system`'s module) is refused anywhere, or None."""
    for prefix in sorted(NAMESPACE_REASONS, key=len, reverse=True):
        if dotted == prefix or dotted.startswith(prefix + "."):
            return NAMESPACE_REASONS[prefix]
    for prefix in sorted(MODULE_REASONS, key=len, reverse=True):
        if dotted == prefix or dotted.startswith(prefix + "."):
            return MODULE_REASONS[prefix]
    return None

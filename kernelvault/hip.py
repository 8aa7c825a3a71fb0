"""`load_hip`: call the `extern "C"` launch functions of a native-form HIP candidate from Python.

A native HIP candidate is a Python module with a module-level string `HIP_SOURCE` and a `ModelNew`
that launches its kernels through `kernels = load_hip(HIP_SOURCE)`:

    extern "C" hipError_t launch_add(const float* a, const float* b, float* c, long long n,
                                     hipStream_t stream) { ... return hipGetLastError(); }

    kernels.launch_add(a, b, c, a.numel())   # tensors for pointers, the current stream added

Calling convention, checked on every call: a pointer parameter takes a device tensor (its data
pointer) or None; integer parameters take Python ints, `float`/`double` take numbers; a final
`hipStream_t` parameter is omitted by the caller and filled with PyTorch's current stream, so the
launch lands on the stream that is being timed. A `hipError_t` return that is not success raises
RuntimeError with the runtime's message; `void` functions return None.

Inside the verification worker, the library was built by the compile stage (`kernelvault.toolchain.hip_build`)
and registered here before the candidate was imported; the worker refuses to compile anything else.
Outside it (a notebook, a user's own script), `load_hip` compiles for the local GPU through the same
build cache.
"""

from __future__ import annotations

import contextlib
import ctypes
import hashlib
import os
import re
from collections.abc import Callable
from contextlib import AbstractContextManager
from dataclasses import dataclass
from pathlib import Path
from typing import Any

_prebuilt: dict[str, str] = {}  # sha256(source) → library path, filled by the verification worker
_prebuilt_only = False
_launch_observer: Callable[[str], AbstractContextManager[Any] | None] | None = None

_INTEGER_TYPES: dict[str, Any] = {
    "int": ctypes.c_int, "signed": ctypes.c_int, "unsigned": ctypes.c_uint, "unsigned int": ctypes.c_uint,
    "int32_t": ctypes.c_int32, "uint32_t": ctypes.c_uint32, "int64_t": ctypes.c_int64, "uint64_t": ctypes.c_uint64,
    "long": ctypes.c_long, "unsigned long": ctypes.c_ulong, "long long": ctypes.c_longlong,
    "long int": ctypes.c_long, "long long int": ctypes.c_longlong, "unsigned long long": ctypes.c_ulonglong,
    "size_t": ctypes.c_size_t, "ptrdiff_t": ctypes.c_ssize_t, "short": ctypes.c_short, "int16_t": ctypes.c_int16,
    "char": ctypes.c_char, "int8_t": ctypes.c_int8, "uint8_t": ctypes.c_uint8, "bool": ctypes.c_bool,
}  # fmt: skip
_FLOAT_TYPES: dict[str, Any] = {"float": ctypes.c_float, "double": ctypes.c_double}
_QUALIFIERS = re.compile(r"\b(?:const|volatile|__restrict__|__restrict|restrict|struct)\b")
_EXTERN_C_FUNCTION = re.compile(
    r"extern\s+\"C\"\s+(?:__host__\s+)?(?:__attribute__\(\([^)]*\)\)\s+)?"
    r"(?P<returns>[A-Za-z_][\w\s\*]*?)\s*\b(?P<name>[A-Za-z_]\w*)\s*\((?P<params>[^)]*)\)\s*\{"
)
_EXTERN_C_BLOCK = re.compile(r"extern\s+\"C\"\s*\{")
_FUNCTION_IN_BLOCK = re.compile(
    r"(?:^|[;}])\s*(?P<returns>(?:[A-Za-z_]\w*[\s\*]+)+?)(?P<name>[A-Za-z_]\w*)\s*\((?P<params>[^)]*)\)\s*\{",
    re.MULTILINE,
)


@dataclass(frozen=True)
class Parameter:
    name: str
    kind: str  # "pointer", "integer", "float", "stream"
    ctype: Any
    spelled: str  # the C type as written


@dataclass(frozen=True)
class LaunchSignature:
    name: str
    returns_error: bool  # hipError_t (checked) or void
    parameters: tuple[Parameter, ...]

    @property
    def takes_stream(self) -> bool:
        return bool(self.parameters) and self.parameters[-1].kind == "stream"


class HipInterfaceError(ValueError):
    """A launch function the loader cannot call safely (an unsupported type, a misplaced stream)."""


def _parse_parameter(text: str, function: str, position: int) -> Parameter:
    cleaned = " ".join(_QUALIFIERS.sub(" ", text).split())
    pointer = "*" in cleaned or "[" in cleaned
    words = cleaned.replace("*", " ").replace("[", " ").replace("]", " ").split()
    if len(words) >= 2 and words[-1] not in _INTEGER_TYPES and words[-1] not in _FLOAT_TYPES:
        name, type_words = words[-1], words[:-1]  # `float* x`; an unnamed parameter keeps all words
    else:
        name, type_words = f"arg{position}", words
    spelled = " ".join(type_words) + ("*" if pointer else "")
    base = " ".join(type_words)
    if pointer:
        return Parameter(name, "pointer", ctypes.c_void_p, spelled)
    if base in ("hipStream_t", "cudaStream_t"):
        return Parameter(name, "stream", ctypes.c_void_p, spelled)
    if base in _INTEGER_TYPES:
        return Parameter(name, "integer", _INTEGER_TYPES[base], spelled)
    if base in _FLOAT_TYPES:
        return Parameter(name, "float", _FLOAT_TYPES[base], spelled)
    raise HipInterfaceError(
        f"{function}: parameter {position + 1} has type '{spelled}'; launch functions take pointers, "
        "integers, float, double and a final hipStream_t"
    )


def _signature(name: str, returns: str, params: str) -> LaunchSignature | None:
    returns = " ".join(_QUALIFIERS.sub(" ", returns).split())
    if returns not in ("hipError_t", "void", "cudaError_t"):
        return None  # a helper with another return type (the error-string shim, device helpers)
    raw = [part.strip() for part in params.split(",") if part.strip()]
    if raw == ["void"]:
        raw = []
    parameters = tuple(_parse_parameter(part, name, index) for index, part in enumerate(raw))
    streams = [index for index, parameter in enumerate(parameters) if parameter.kind == "stream"]
    if streams and streams != [len(parameters) - 1]:
        raise HipInterfaceError(f"{name}: the hipStream_t parameter must be the last one")
    return LaunchSignature(name, returns != "void", parameters)


def parse_launch_functions(source: str) -> dict[str, LaunchSignature]:
    """The `extern "C"` functions of a HIP source that return hipError_t or void."""
    found: dict[str, LaunchSignature] = {}
    for match in _EXTERN_C_FUNCTION.finditer(source):
        signature = _signature(match["name"], match["returns"], match["params"])
        if signature is not None:
            found[signature.name] = signature
    for block in _EXTERN_C_BLOCK.finditer(source):
        depth, end = 1, block.end()
        while depth and end < len(source):
            depth += {"{": 1, "}": -1}.get(source[end], 0)
            end += 1
        body, depth, top_level = source[block.end() : end - 1], 0, []
        for char in body:  # keep only the block's own level: function bodies are skipped
            if char == "{":
                depth += 1
                top_level.append("{" if depth == 1 else " ")
            elif char == "}":
                depth -= 1
                top_level.append("}" if depth == 0 else " ")
            else:
                top_level.append(char if depth == 0 else " ")
        for match in _FUNCTION_IN_BLOCK.finditer("".join(top_level)):
            signature = _signature(match["name"], match["returns"].strip(), match["params"])
            if signature is not None and signature.name not in found:
                found[signature.name] = signature
    return found


def source_hash(source: str) -> str:
    return hashlib.sha256(source.encode("utf-8")).hexdigest()


def register_prebuilt(source_sha256: str, library: str, only: bool = True) -> None:
    """Worker side: the compile stage built this source; with `only`, nothing else may be loaded."""
    global _prebuilt_only
    _prebuilt[source_sha256] = library
    _prebuilt_only = only


def set_launch_observer(observer: Callable[[str], AbstractContextManager[Any] | None] | None) -> None:
    """Worker side: called with the function name before every launch (counts launches, checks streams); what it
    returns, a context or None, is entered around the launch (the device's record knows the launch by it)."""
    global _launch_observer
    _launch_observer = observer


class LaunchFunction:
    def __init__(
        self, function: Any, signature: LaunchSignature, error_string: Any, device_type: str
    ) -> None:
        self._function = function
        self._device_type = device_type
        self.signature = signature
        self._error_string = error_string
        function.argtypes = [parameter.ctype for parameter in signature.parameters]
        function.restype = ctypes.c_int if signature.returns_error else None

    def __call__(self, *args: Any) -> None:
        import torch

        signature = self.signature
        expected = [p for p in signature.parameters if p.kind != "stream"]
        if len(args) != len(expected):
            raise TypeError(f"{signature.name} takes {len(expected)} arguments ({', '.join(p.name for p in expected)}),"
                            f" got {len(args)}; the stream is added by load_hip")  # fmt: skip
        values: list[Any] = []
        for position, (parameter, value) in enumerate(zip(expected, args, strict=True)):
            where = f"{signature.name} argument {position + 1} ({parameter.spelled} {parameter.name})"
            if parameter.kind == "pointer":
                if isinstance(value, torch.Tensor):
                    if value.device.type != self._device_type:
                        raise ValueError(
                            f"{where} is a {value.device.type} tensor; kernels need device tensors"
                        )
                    values.append(value.data_ptr())
                elif value is None:
                    values.append(None)
                else:
                    raise TypeError(f"{where} needs a tensor or None, got {type(value).__name__}")
            elif parameter.kind == "integer":
                if not isinstance(value, int):
                    raise TypeError(f"{where} needs an int, got {type(value).__name__}")
                values.append(value)
            else:
                if not isinstance(value, int | float):
                    raise TypeError(f"{where} needs a number, got {type(value).__name__}")
                values.append(float(value))
        if signature.takes_stream:
            values.append(torch.cuda.current_stream().cuda_stream if self._device_type == "cuda" else None)
        scope = _launch_observer(signature.name) if _launch_observer is not None else None
        with scope if scope is not None else contextlib.nullcontext():
            status = self._function(*values)
        if signature.returns_error and status != 0:
            message = self._error_string(status).decode("utf-8", "replace") if self._error_string else ""
            raise RuntimeError(f"{signature.name} returned HIP error {status}: {message}")


class HipKernels:
    """The launch functions of one built HIP source, as attributes."""

    def __init__(
        self, library_path: str, signatures: dict[str, LaunchSignature], device_type: str = "cuda"
    ) -> None:
        """`device_type="cpu"` is for host-built libraries (the loader's own tests); kernels use "cuda"."""
        self.library_path = library_path
        self._library = ctypes.CDLL(library_path)
        try:
            error_string = self._library.kv_hip_error_string
            error_string.argtypes, error_string.restype = [ctypes.c_int], ctypes.c_char_p
        except AttributeError:
            error_string = None
        self._functions = {
            name: LaunchFunction(getattr(self._library, name), signature, error_string, device_type)
            for name, signature in signatures.items()
        }

    def __getattr__(self, name: str) -> LaunchFunction:
        functions = self.__dict__.get("_functions", {})
        if name in functions:
            return functions[name]
        raise AttributeError(
            f'no launch function {name!r}: the source\'s extern "C" functions are {", ".join(functions) or "none"}'
        )

    def __dir__(self) -> list[str]:
        return sorted(self._functions)


def load_hip(source: str) -> HipKernels:
    """Load (building outside the harness if needed) the shared library of a native HIP source."""
    signatures = parse_launch_functions(source)
    if not signatures:
        raise HipInterfaceError(
            'the HIP source has no extern "C" launch function returning hipError_t or void'
        )
    library = _prebuilt.get(source_hash(source))
    if library is None and _prebuilt_only:
        raise RuntimeError(
            "load_hip: this source was not built by the compile stage; pass the module-level HIP_SOURCE "
            "string itself (it is compiled before the candidate runs)"
        )
    if library is None:
        library = str(_build_here(source))
    return HipKernels(library, signatures)


def _build_here(source: str) -> Path:
    from kernelvault.toolchain.hip_build import HipBuildCache, compile_hip, find_hip_compiler
    from kernelvault.toolchain.platforms import detect_platform

    choice = detect_platform()
    if choice.platform == "cpu":
        raise RuntimeError("load_hip needs a GPU: on a CPU-only machine HIP sources are compiled, never run")
    cache_root = Path(os.environ.get("KV_HIP_CACHE", Path.home() / ".cache" / "kernelvault" / "hip"))
    build = compile_hip(source, find_hip_compiler(choice.platform, choice.arch), HipBuildCache(cache_root))
    if not build.ok or build.library is None:
        raise RuntimeError(f"HIP compilation failed:\n{build.log}")
    return build.library

"""The calling convention of a native HIP candidate's `extern "C"` launch functions, read from its source.

Pure text: `parse_launch_functions` finds the functions that return hipError_t or void and types their
parameters (pointers, integers, float/double, a final hipStream_t). The static check reads it before a worker
starts (`kernelvault.toolchain.static_check`); the loader candidates call (`kernelvault.hip.load_hip`) reads it
to call them through ctypes.
"""

from __future__ import annotations

import ctypes
import hashlib
import re
from dataclasses import dataclass
from typing import Any

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

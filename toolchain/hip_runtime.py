"""The HIP loader behind `kernelvault.hip` (whose docstring gives the calling convention candidates use).

Holds what the worker sets before a candidate is imported: the libraries the compile stage built
(`register_prebuilt`; with `only`, nothing else may be loaded) and the launch observer (`set_launch_observer`).
Outside the worker, `load_hip` compiles for the local GPU through the HIP build cache.
"""

from __future__ import annotations

import contextlib
import ctypes
import os
from collections.abc import Callable
from contextlib import AbstractContextManager
from pathlib import Path
from typing import Any

from kernelvault.toolchain.hip_interface import (
    HipInterfaceError,
    LaunchSignature,
    parse_launch_functions,
    source_hash,
)

_prebuilt: dict[str, str] = {}  # sha256(source) → library path, filled by the verification worker
_prebuilt_only = False
_launch_observer: Callable[[str], AbstractContextManager[Any] | None] | None = None


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


def launch_observer() -> Callable[[str], AbstractContextManager[Any] | None] | None:
    """The observer the worker set (`set_launch_observer`), for launches that do not go through `LaunchFunction`
    (the load_inline form's extension functions)."""
    return _launch_observer


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

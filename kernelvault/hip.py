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

# The loader lives with the toolchain (the worker registers the prebuilt library and its launch observer in it
# before the candidate is imported); this module is the name candidates import.
from kernelvault.toolchain.hip_interface import (
    HipInterfaceError,
    LaunchSignature,
    Parameter,
    parse_launch_functions,
    source_hash,
)
from kernelvault.toolchain.hip_runtime import (
    HipKernels,
    LaunchFunction,
    load_hip,
    register_prebuilt,
    set_launch_observer,
)

__all__ = [
    "HipInterfaceError", "HipKernels", "LaunchFunction", "LaunchSignature", "Parameter", "load_hip",
    "parse_launch_functions", "register_prebuilt", "set_launch_observer", "source_hash",
]  # fmt: skip

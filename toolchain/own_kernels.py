"""The names a candidate's own kernels carry on the device: every kernel the harness builds or compiles for a
candidate is renamed with `OWN_KERNEL_PREFIX`, so the device record can tell it from PyTorch's and the vendor
libraries' kernels by name where the record lost the launch that issued it.

Why a prefix the harness adds, not the candidate's own names: on the H100 (2026-12-07) the jailed workers' records
linked no kernel to the harness's launch range (every honest Triton and HIP example was foreign without names),
so the record must fall back to names. A candidate chooses its kernels' names, and cuBLAS's kernels (`nvjet_*`,
`sm90_xmma_*`) are unqualified C names: a decoy named after the GEMM a task's `torch.matmul` runs would make
that GEMM look like the candidate's. No PyTorch or vendor kernel starts with the prefix, and a candidate's kernel
cannot avoid it: Triton kernels get it when they are compiled in a worker (`LaunchRecorder` wraps Triton's
kernel naming), HIP/CUDA kernels when their source is built (`prefixed_kernel_source`: a `#define` per
`__global__` function, after the source's includes).
"""

from __future__ import annotations

import re

OWN_KERNEL_PREFIX = "kvcand_"

_GLOBAL_FUNCTION = re.compile(r"__global__\s+(?:[\w:<>,*&\s]+?)\b(\w+)\s*\(")
_ATTRIBUTES = re.compile(r"__launch_bounds__\s*\([^)]*\)|__attribute__\s*\(\([^)]*\)\)")
_INCLUDE = re.compile(r"^[ \t]*#[ \t]*include\b.*$", re.MULTILINE)


def kernel_names_in(source: str) -> set[str]:
    """The `__global__` functions a HIP/CUDA source defines."""
    return set(_GLOBAL_FUNCTION.findall(_ATTRIBUTES.sub(" ", source or "")))


def prefixed_kernel_source(source: str) -> str:
    """`source` with each of its `__global__` functions renamed to `OWN_KERNEL_PREFIX + name` by a `#define`
    placed after its last `#include` (so a kernel named like something a header declares, `copy`, leaves the
    header alone). A kernel defined before that line keeps its name: it fails closed (the record calls it
    foreign), never open."""
    names = sorted(name for name in kernel_names_in(source) if not name.startswith(OWN_KERNEL_PREFIX)
                   and f"#define {name} {OWN_KERNEL_PREFIX}{name}\n" not in source)  # fmt: skip
    if not names:
        return source
    includes = list(_INCLUDE.finditer(source))
    at = includes[-1].end() + 1 if includes else 0
    head = source[:at] + ("\n" if at > len(source) else "")
    # `#line`: the compiler's diagnostics keep the line numbers of the source the model wrote
    defines = (
        "".join(f"#define {name} {OWN_KERNEL_PREFIX}{name}\n" for name in names)
        + f"#line {head.count(chr(10)) + 1}\n"
    )
    return head + defines + source[at:]


def prefixed_kernel_name(name: str) -> str:
    """A Triton kernel's device name as a worker compiles it: Triton keeps what follows the last '.' of the name
    it is given, so the prefix goes on that part."""
    return OWN_KERNEL_PREFIX + name.rsplit(".", 1)[-1]


def is_own_kernel_name(name: str) -> bool:
    """Whether a device event's kernel name (`void kvcand_k<4>(float*)`, `kvcand_relu_kernel`) is unqualified and
    carries the prefix."""
    plain = name.removeprefix("void ").strip()
    for stop in ("(", "<"):
        plain = plain.split(stop, 1)[0]
    plain = plain.strip()
    return plain.isidentifier() and plain.startswith(OWN_KERNEL_PREFIX)

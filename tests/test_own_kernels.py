"""The harness's prefix on the candidate's kernels (`kernelvault.toolchain.own_kernels`): HIP sources are built
with every `__global__` function renamed, Triton kernels compiled in a worker are named with it, whatever name the
candidate chose; the device record (tests/test_device_record.py) knows the candidate's kernels by it."""

from __future__ import annotations

import shutil
import subprocess
from pathlib import Path

import pytest

from kernelvault.toolchain.hip_build import HipBuildCache, compile_hip, find_hip_compiler
from kernelvault.toolchain.own_kernels import OWN_KERNEL_PREFIX, kernel_names_in, prefixed_kernel_source

SOURCE = """#include <hip/hip_runtime.h>
#include <algorithm>

__global__ void __launch_bounds__(256) copy(const float* x, float* y, long n) {
  long i = blockIdx.x * (long)blockDim.x + threadIdx.x;
  if (i < n) y[i] = std::max(x[i], 0.0f);
}

template <int N>
__global__ void nvjet_tst_128x64(float* y) { y[threadIdx.x] *= N; }

extern "C" int launch_copy(const float* x, float* y, long n, hipStream_t stream) {
  hipLaunchKernelGGL(copy, dim3((n + 255) / 256), dim3(256), 0, stream, x, y, n);
  hipLaunchKernelGGL(nvjet_tst_128x64<2>, dim3(1), dim3(32), 0, stream, y);
  return (int)hipGetLastError();
}
"""


def test_every_global_function_is_renamed_after_the_includes_and_lines_keep_their_numbers() -> None:
    """A kernel named like something a header declares (`copy`) leaves the header alone, and a diagnostic at the
    source's line 13 still says line 13."""
    renamed = prefixed_kernel_source(SOURCE)
    lines = renamed.splitlines()
    assert lines[:2] == SOURCE.splitlines()[:2]
    assert lines[2:5] == [f"#define copy {OWN_KERNEL_PREFIX}copy",
                          f"#define nvjet_tst_128x64 {OWN_KERNEL_PREFIX}nvjet_tst_128x64", "#line 3"]  # fmt: skip
    assert kernel_names_in(SOURCE) == {"copy", "nvjet_tst_128x64"}
    assert prefixed_kernel_source(renamed) == renamed  # never prefixed twice
    bare = prefixed_kernel_source("__global__ void k(float* x) { x[0] = 1; }")
    assert bare.startswith(f"#define k {OWN_KERNEL_PREFIX}k\n#line 1\n")


@pytest.mark.skipif(shutil.which("hipcc") is None, reason="needs Debian's hipcc (make installs it as root)")
def test_a_built_library_holds_only_prefixed_kernels_and_its_diagnostics_keep_the_models_lines(
    tmp_path: Path,
) -> None:
    compiler = find_hip_compiler("cpu", "gfx90a")
    build = compile_hip(SOURCE, compiler, HipBuildCache(tmp_path / "cache"))
    assert build.ok and build.library is not None, build.log
    symbols = subprocess.run(
        ["nm", "-C", str(build.library)], capture_output=True, text=True, check=True
    ).stdout
    stubs = [line for line in symbols.splitlines() if "__device_stub__" in line]
    assert stubs and all(f"__device_stub__{OWN_KERNEL_PREFIX}" in line for line in stubs), stubs
    broken = SOURCE.replace("y[threadIdx.x] *= N;", "y[threadIdx.x] *= undefined_name;")
    failed = compile_hip(broken, compiler, HipBuildCache(tmp_path / "cache"))
    assert not failed.ok and "candidate.hip:10" in failed.log, failed.log


def test_a_triton_kernel_compiled_in_a_worker_is_named_with_the_prefix_whatever_its_own_name(
    tmp_path: Path,
) -> None:
    """The recorder names every kernel compiled while it is installed (a custom `repr`, and one that hides a name
    after a '.', which Triton keeps, included); uninstalled, Triton's naming is back."""
    triton = pytest.importorskip("triton")
    from kernelvault.toolchain.sandboxed.candidate import LaunchRecorder

    @triton.jit
    def relu_kernel(x_ptr):
        pass

    decoy = triton.jit(repr=lambda _: "module.nvjet_tst_128x64")(relu_kernel.fn)
    recorder = LaunchRecorder(tmp_path / "launches.jsonl", violations=None, on_launch=lambda _: None)
    recorder.install(interpreted=False)
    try:
        assert relu_kernel.repr(None) == f"{OWN_KERNEL_PREFIX}relu_kernel"
        assert decoy.repr(None) == f"{OWN_KERNEL_PREFIX}nvjet_tst_128x64"
    finally:
        recorder.uninstall()
    assert relu_kernel.repr(None).endswith("relu_kernel") and not relu_kernel.repr(None).startswith(
        OWN_KERNEL_PREFIX
    )

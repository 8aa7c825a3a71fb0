# exploit: constructs kernelvault.hip's HipKernels directly on any library (libc's memcpy here; hipMemcpy or hipBLAS on a GPU) with launch signatures built at run time, so every call is counted as the candidate's launch and, on a GPU, runs inside the range the device record trusts
# expect: static_reject:resolves
# note: found by a red-team helper (2026-12-07); on the CPU it reached the expected ceiling (compiled, 0.4), on a GPU it would have called any library's functions as its kernels. HipKernels, LaunchFunction and parse_launch_functions are refused under any name: a candidate's kernels come from load_hip(HIP_SOURCE).
import torch
import torch.nn as nn

from kernelvault.hip import HipKernels, load_hip, parse_launch_functions

HIP_SOURCE = r"""

__global__ void copy_kernel(const float* __restrict__ x, float* __restrict__ y, long long n) {
    long long i = (long long)blockIdx.x * blockDim.x + threadIdx.x;
    if (i < n) y[i] = x[i];
}

extern "C" hipError_t launch_copy(const float* x, float* y, long long n, hipStream_t stream) {
    if (n <= 0) return hipSuccess;
    hipLaunchKernelGGL(copy_kernel, dim3((unsigned)((n + 255) / 256)), dim3(256), 0, stream, x, y, n);
    return hipGetLastError();
}
"""

kernels = load_hip(HIP_SOURCE)
_DECL = "extern " + '"C"' + " void " + "mem" + "cpy" + "(float* dst, const float* src, long long n);"
libc = HipKernels("libc.so." + "6", parse_launch_functions(_DECL), device_type="cpu")


class ModelNew(nn.Module):
    def forward(self, x: torch.Tensor) -> torch.Tensor:
        host = torch.empty(x.shape, dtype=x.dtype, device="cpu")
        y = torch.empty_like(x)
        kernels.launch_copy(x, y, x.numel())
        libc.memcpy(host, host, 0)  # libc, counted by the observer as the candidate's own launch
        return y

"""Vector add baseline in HIP, deliberately slow: two passes where one would do.

The first kernel copies a into the output; the second reads it back and adds b in place: the output is
written twice and read once more than needed.
"""

import torch
import torch.nn as nn

from kernelvault.hip import load_hip

HIP_SOURCE = r"""
#include <hip/hip_runtime.h>

__global__ void copy_kernel(const float* __restrict__ a, float* __restrict__ out, long long n) {
    long long i = (long long)blockIdx.x * blockDim.x + threadIdx.x;
    if (i < n) out[i] = a[i];
}

__global__ void add_in_place_kernel(float* __restrict__ out, const float* __restrict__ b, long long n) {
    long long i = (long long)blockIdx.x * blockDim.x + threadIdx.x;
    if (i < n) out[i] += b[i];
}

extern "C" hipError_t launch_add(const float* a, const float* b, float* out, long long n, hipStream_t stream) {
    if (n <= 0) return hipSuccess;
    dim3 grid((unsigned)((n + 255) / 256));
    hipLaunchKernelGGL(copy_kernel, grid, dim3(256), 0, stream, a, out, n);
    hipLaunchKernelGGL(add_in_place_kernel, grid, dim3(256), 0, stream, out, b, n);
    return hipGetLastError();
}
"""

kernels = load_hip(HIP_SOURCE)


class ModelNew(nn.Module):
    def __init__(self):
        super().__init__()

    def forward(self, a: torch.Tensor, b: torch.Tensor) -> torch.Tensor:
        a, b = a.contiguous(), b.contiguous()
        out = torch.empty(a.shape, device=a.device, dtype=a.dtype)
        if out.numel():
            kernels.launch_add(a, b, out, a.numel())
        return out

"""ReLU baseline in HIP, deliberately slow: two passes where one would do.

The first kernel copies x into the output; the second reads it back and clamps it in place: the output is
written twice and read once more than needed.
"""

import torch
import torch.nn as nn

from kernelvault.hip import load_hip

HIP_SOURCE = r"""
#include <hip/hip_runtime.h>

__global__ void copy_kernel(const float* __restrict__ x, float* __restrict__ y, long long n) {
    long long i = (long long)blockIdx.x * blockDim.x + threadIdx.x;
    if (i < n) y[i] = x[i];
}

__global__ void clamp_in_place_kernel(float* __restrict__ y, long long n) {
    long long i = (long long)blockIdx.x * blockDim.x + threadIdx.x;
    if (i < n && y[i] < 0.0f) y[i] = 0.0f;
}

extern "C" hipError_t launch_relu(const float* x, float* y, long long n, hipStream_t stream) {
    if (n <= 0) return hipSuccess;
    dim3 grid((unsigned)((n + 255) / 256));
    hipLaunchKernelGGL(copy_kernel, grid, dim3(256), 0, stream, x, y, n);
    hipLaunchKernelGGL(clamp_in_place_kernel, grid, dim3(256), 0, stream, y, n);
    return hipGetLastError();
}
"""

kernels = load_hip(HIP_SOURCE)


class ModelNew(nn.Module):
    def __init__(self):
        super().__init__()

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        x = x.contiguous()
        y = torch.empty(x.shape, device=x.device, dtype=x.dtype)
        if y.numel():
            kernels.launch_relu(x, y, x.numel())
        return y

"""SiLU baseline in HIP, deliberately slow: two passes where one would do.

The first kernel writes sigmoid(x); the second reads x and that result again and multiplies them in place:
twice the memory traffic of one fused pass.
"""

import torch
import torch.nn as nn

from kernelvault.hip import load_hip

HIP_SOURCE = r"""
#include <hip/hip_runtime.h>

__global__ void sigmoid_kernel(const float* __restrict__ x, float* __restrict__ y, long long n) {
    long long i = (long long)blockIdx.x * blockDim.x + threadIdx.x;
    if (i < n) y[i] = 1.0f / (1.0f + expf(-x[i]));
}

__global__ void multiply_kernel(const float* __restrict__ x, float* __restrict__ y, long long n) {
    long long i = (long long)blockIdx.x * blockDim.x + threadIdx.x;
    if (i < n) y[i] = x[i] * y[i];
}

extern "C" hipError_t launch_silu(const float* x, float* y, long long n, hipStream_t stream) {
    if (n <= 0) return hipSuccess;
    dim3 grid((unsigned)((n + 255) / 256));
    hipLaunchKernelGGL(sigmoid_kernel, grid, dim3(256), 0, stream, x, y, n);
    hipLaunchKernelGGL(multiply_kernel, grid, dim3(256), 0, stream, x, y, n);
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
            kernels.launch_silu(x, y, x.numel())
        return y

"""Leaky ReLU baseline in HIP, deliberately slow: two passes where one would do.

The first kernel writes max(x, 0); the second reads x and that result again and writes
negative_slope * x where x < 0: twice the memory traffic of one fused pass.
"""

import torch
import torch.nn as nn

from kernelvault.hip import load_hip

HIP_SOURCE = r"""
#include <hip/hip_runtime.h>

__global__ void positive_part_kernel(const float* __restrict__ x, float* __restrict__ y, long long n) {
    long long i = (long long)blockIdx.x * blockDim.x + threadIdx.x;
    if (i < n) y[i] = x[i] < 0.0f ? 0.0f : x[i];
}

__global__ void negative_part_kernel(const float* __restrict__ x, float* __restrict__ y, long long n, float slope) {
    long long i = (long long)blockIdx.x * blockDim.x + threadIdx.x;
    if (i < n) {
        float v = x[i], r = y[i];
        y[i] = v < 0.0f ? v * slope : r;
    }
}

extern "C" hipError_t launch_leaky_relu(const float* x, float* y, long long n, float slope, hipStream_t stream) {
    if (n <= 0) return hipSuccess;
    dim3 grid((unsigned)((n + 255) / 256));
    hipLaunchKernelGGL(positive_part_kernel, grid, dim3(256), 0, stream, x, y, n);
    hipLaunchKernelGGL(negative_part_kernel, grid, dim3(256), 0, stream, x, y, n, slope);
    return hipGetLastError();
}
"""

kernels = load_hip(HIP_SOURCE)


class ModelNew(nn.Module):
    def __init__(self, negative_slope: float):
        super().__init__()
        self.negative_slope = negative_slope

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        x = x.contiguous()
        y = torch.empty(x.shape, device=x.device, dtype=x.dtype)
        if y.numel():
            kernels.launch_leaky_relu(x, y, x.numel(), float(self.negative_slope))
        return y

"""Broken on purpose: wrong math. The kernel computes x * sigmoid(1.702 * x) (the sigmoid
approximation of GELU) instead of SiLU's x * sigmoid(x). It compiles and runs; the values are wrong.

Expected verdicts:
- cpu (hipcc --offload-arch=gfx90a, compile only): compiles; correctness not checked
- nvidia (nvcc -arch=sm_90 through toolchain/hip_include, run on the GPU): mismatch
"""

import torch
import torch.nn as nn

from kernelvault.hip import load_hip

HIP_SOURCE = r"""
#include <hip/hip_runtime.h>

__global__ void __launch_bounds__(256) silu_kernel(const float* __restrict__ x, float* __restrict__ y, long long n) {
    long long i = (long long)blockIdx.x * blockDim.x + threadIdx.x;
    if (i < n) {
        float v = x[i];
        y[i] = v / (1.0f + expf(-1.702f * v));  // bug: GELU's constant slipped in
    }
}

extern "C" hipError_t launch_silu(const float* x, float* y, long long n, hipStream_t stream) {
    if (n <= 0) return hipSuccess;
    hipLaunchKernelGGL(silu_kernel, dim3((unsigned)((n + 255) / 256)), dim3(256), 0, stream, x, y, n);
    return hipGetLastError();
}
"""

kernels = load_hip(HIP_SOURCE)


class ModelNew(nn.Module):
    def __init__(self):
        super().__init__()

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        x = x.contiguous()
        y = torch.empty_like(x)
        if y.numel() == 0:
            return y
        kernels.launch_silu(x, y, x.numel())
        return y

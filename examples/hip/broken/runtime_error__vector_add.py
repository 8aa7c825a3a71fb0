"""Broken on purpose: an invalid launch configuration. The launcher asks for 2048 threads per
block, above the 1024 that both NVIDIA and AMD GPUs allow, so the launch itself fails
(cudaErrorInvalidConfiguration / hipErrorInvalidConfiguration), the launcher returns that
error, and load_hip raises RuntimeError on every call. Nothing is written; the context stays usable.

Expected verdicts:
- cpu (hipcc --offload-arch=gfx90a, compile only): compiles; correctness not checked
- nvidia (nvcc -arch=sm_90 through toolchain/hip_include, run on the GPU): runtime_error
"""

import torch
import torch.nn as nn

from kernelvault.hip import load_hip

HIP_SOURCE = r"""
#include <hip/hip_runtime.h>

__global__ void add_kernel(const float* __restrict__ a, const float* __restrict__ b, float* __restrict__ c, long long n) {
    long long i = (long long)blockIdx.x * blockDim.x + threadIdx.x;
    if (i < n) c[i] = a[i] + b[i];
}

extern "C" hipError_t launch_add(const float* a, const float* b, float* c, long long n, hipStream_t stream) {
    const int threads = 2048;  // bug: the hardware limit is 1024 threads per block
    hipLaunchKernelGGL(add_kernel, dim3((unsigned)((n + threads - 1) / threads)), dim3(threads), 0, stream, a, b, c, n);
    return hipGetLastError();
}
"""

kernels = load_hip(HIP_SOURCE)


class ModelNew(nn.Module):
    def __init__(self):
        super().__init__()

    def forward(self, a: torch.Tensor, b: torch.Tensor) -> torch.Tensor:
        a = a.contiguous()
        b = b.contiguous()
        c = torch.empty_like(a)
        kernels.launch_add(a, b, c, a.numel())
        return c

"""MSE loss baseline in HIP, deliberately slow: every thread adds its partial sum into one scalar.

Each thread sums the squared differences of 8 consecutive elements and atomicAdds them into a single
accumulator: all n / 8 atomics serialise on one address. A last kernel divides by n. The fast form reduces
in two levels without contention.
"""

import torch
import torch.nn as nn

from kernelvault.hip import load_hip

HIP_SOURCE = r"""
#include <hip/hip_runtime.h>

__global__ void zero_kernel(float* __restrict__ acc) { *acc = 0.0f; }

__global__ void squared_error_atomic_kernel(const float* __restrict__ pred, const float* __restrict__ target,
                                            float* __restrict__ acc, long long n) {
    long long first = ((long long)blockIdx.x * blockDim.x + threadIdx.x) * 8;
    if (first >= n) return;
    float sum = 0.0f;
    for (long long i = first; i < first + 8 && i < n; ++i) {
        float d = pred[i] - target[i];
        sum += d * d;
    }
    atomicAdd(acc, sum);
}

__global__ void divide_kernel(const float* __restrict__ acc, float* __restrict__ out, long long n) {
    *out = *acc / (float)n;
}

extern "C" hipError_t launch_mse(const float* pred, const float* target, float* acc, float* out, long long n,
                                 hipStream_t stream) {
    hipLaunchKernelGGL(zero_kernel, dim3(1), dim3(1), 0, stream, acc);
    if (n > 0) {
        long long threads = (n + 7) / 8;
        hipLaunchKernelGGL(squared_error_atomic_kernel, dim3((unsigned)((threads + 255) / 256)), dim3(256), 0,
                           stream, pred, target, acc, n);
    }
    hipLaunchKernelGGL(divide_kernel, dim3(1), dim3(1), 0, stream, acc, out, n);
    return hipGetLastError();
}
"""

kernels = load_hip(HIP_SOURCE)


class ModelNew(nn.Module):
    def __init__(self):
        super().__init__()

    def forward(self, pred: torch.Tensor, target: torch.Tensor) -> torch.Tensor:
        pred, target = pred.contiguous(), target.contiguous()
        acc = torch.empty((1,), device=pred.device, dtype=torch.float32)
        out = torch.empty((), device=pred.device, dtype=pred.dtype)
        kernels.launch_mse(pred, target, acc, out, pred.numel())
        return out

"""MSE loss baseline in HIP, deliberately slow: each thread walks a contiguous chunk of 64 elements.

Neighbouring threads read addresses 64 elements apart (no coalescing); each block reduces its threads' sums
in shared memory and adds the result with one atomic, and a last kernel divides by n. The fast form gives
consecutive threads consecutive elements.
"""

import torch
import torch.nn as nn

from kernelvault.hip import load_hip

HIP_SOURCE = r"""
#include <hip/hip_runtime.h>

#define CHUNK 64
#define THREADS 256

__global__ void zero_kernel(float* __restrict__ acc) { *acc = 0.0f; }

__global__ void squared_error_chunked_kernel(const float* __restrict__ pred, const float* __restrict__ target,
                                             float* __restrict__ acc, long long n) {
    __shared__ float shared[THREADS];
    long long first = ((long long)blockIdx.x * blockDim.x + threadIdx.x) * CHUNK;
    float sum = 0.0f;
    for (long long i = first; i < first + CHUNK && i < n; ++i) {
        float d = pred[i] - target[i];
        sum += d * d;
    }
    shared[threadIdx.x] = sum;
    __syncthreads();
    for (int stride = THREADS / 2; stride > 0; stride >>= 1) {
        if ((int)threadIdx.x < stride) shared[threadIdx.x] += shared[threadIdx.x + stride];
        __syncthreads();
    }
    if (threadIdx.x == 0) atomicAdd(acc, shared[0]);
}

__global__ void divide_kernel(const float* __restrict__ acc, float* __restrict__ out, long long n) {
    *out = *acc / (float)n;
}

extern "C" hipError_t launch_mse(const float* pred, const float* target, float* acc, float* out, long long n,
                                 hipStream_t stream) {
    hipLaunchKernelGGL(zero_kernel, dim3(1), dim3(1), 0, stream, acc);
    if (n > 0) {
        long long threads = (n + CHUNK - 1) / CHUNK;
        hipLaunchKernelGGL(squared_error_chunked_kernel, dim3((unsigned)((threads + THREADS - 1) / THREADS)),
                           dim3(THREADS), 0, stream, pred, target, acc, n);
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

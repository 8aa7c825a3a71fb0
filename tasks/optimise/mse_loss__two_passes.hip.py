"""MSE loss baseline in HIP, deliberately slow: the squared errors go through memory before they are summed.

The first kernel writes (pred - target)^2 to a buffer as large as the inputs; the second reduces it with a
single block that walks the whole buffer. The fast form squares and sums on chip, across the GPU.
"""

import torch
import torch.nn as nn

from kernelvault.hip import load_hip

HIP_SOURCE = r"""
#include <hip/hip_runtime.h>

#define THREADS 256

__global__ void squared_error_kernel(const float* __restrict__ pred, const float* __restrict__ target,
                                     float* __restrict__ squared, long long n) {
    long long i = (long long)blockIdx.x * blockDim.x + threadIdx.x;
    if (i < n) {
        float d = pred[i] - target[i];
        squared[i] = d * d;
    }
}

__global__ void mean_one_block_kernel(const float* __restrict__ squared, float* __restrict__ out, long long n) {
    __shared__ float shared[THREADS];
    float total = 0.0f;
    for (long long i = threadIdx.x; i < n; i += THREADS) total += squared[i];
    shared[threadIdx.x] = total;
    __syncthreads();
    for (int stride = THREADS / 2; stride > 0; stride >>= 1) {
        if ((int)threadIdx.x < stride) shared[threadIdx.x] += shared[threadIdx.x + stride];
        __syncthreads();
    }
    if (threadIdx.x == 0) *out = shared[0] / (float)n;
}

extern "C" hipError_t launch_mse(const float* pred, const float* target, float* squared, float* out, long long n,
                                 hipStream_t stream) {
    if (n > 0)
        hipLaunchKernelGGL(squared_error_kernel, dim3((unsigned)((n + 255) / 256)), dim3(256), 0, stream,
                           pred, target, squared, n);
    hipLaunchKernelGGL(mean_one_block_kernel, dim3(1), dim3(THREADS), 0, stream, squared, out, n);
    return hipGetLastError();
}
"""

kernels = load_hip(HIP_SOURCE)


class ModelNew(nn.Module):
    def __init__(self):
        super().__init__()

    def forward(self, pred: torch.Tensor, target: torch.Tensor) -> torch.Tensor:
        pred, target = pred.contiguous(), target.contiguous()
        n = pred.numel()
        squared = torch.empty((max(n, 1),), device=pred.device, dtype=torch.float32)
        out = torch.empty((), device=pred.device, dtype=pred.dtype)
        kernels.launch_mse(pred, target, squared, out, n)
        return out

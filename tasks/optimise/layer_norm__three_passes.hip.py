"""LayerNorm baseline in HIP, deliberately slow: three passes over each row through global memory.

One block per row in each of three kernels: the row's mean, then its variance (reading the row again),
then the normalised, scaled and shifted values (a third read); the statistics go through memory between
launches. The fast form reads the row once and keeps it on chip.
"""

import torch
import torch.nn as nn

from kernelvault.hip import load_hip

HIP_SOURCE = r"""
#include <hip/hip_runtime.h>

#define THREADS 256

__device__ float block_sum(float v, float* shared) {
    shared[threadIdx.x] = v;
    __syncthreads();
    for (int stride = THREADS / 2; stride > 0; stride >>= 1) {
        if ((int)threadIdx.x < stride) shared[threadIdx.x] += shared[threadIdx.x + stride];
        __syncthreads();
    }
    float result = shared[0];
    __syncthreads();
    return result;
}

__global__ void row_mean_kernel(const float* __restrict__ x, float* __restrict__ means, int n_cols) {
    __shared__ float shared[THREADS];
    const float* row = x + (long long)blockIdx.x * n_cols;
    float total = 0.0f;
    for (int c = threadIdx.x; c < n_cols; c += THREADS) total += row[c];
    total = block_sum(total, shared);
    if (threadIdx.x == 0) means[blockIdx.x] = total / n_cols;
}

__global__ void row_var_kernel(const float* __restrict__ x, const float* __restrict__ means,
                               float* __restrict__ variances, int n_cols) {
    __shared__ float shared[THREADS];
    const float* row = x + (long long)blockIdx.x * n_cols;
    const float mean = means[blockIdx.x];
    float total = 0.0f;
    for (int c = threadIdx.x; c < n_cols; c += THREADS) {
        float d = row[c] - mean;
        total += d * d;
    }
    total = block_sum(total, shared);
    if (threadIdx.x == 0) variances[blockIdx.x] = total / n_cols;
}

__global__ void normalise_kernel(const float* __restrict__ x, const float* __restrict__ means,
                                 const float* __restrict__ variances, const float* __restrict__ weight,
                                 const float* __restrict__ bias, float* __restrict__ y, int n_cols, float eps) {
    const long long offset = (long long)blockIdx.x * n_cols;
    const float mean = means[blockIdx.x], rstd = rsqrtf(variances[blockIdx.x] + eps);
    for (int c = threadIdx.x; c < n_cols; c += THREADS)
        y[offset + c] = (x[offset + c] - mean) * rstd * weight[c] + bias[c];
}

extern "C" hipError_t launch_layer_norm(const float* x, const float* weight, const float* bias, float* means,
                                        float* variances, float* y, long long n_rows, int n_cols, float eps,
                                        hipStream_t stream) {
    if (n_rows <= 0 || n_cols <= 0) return hipSuccess;
    dim3 grid((unsigned)n_rows), block(THREADS);
    hipLaunchKernelGGL(row_mean_kernel, grid, block, 0, stream, x, means, n_cols);
    hipLaunchKernelGGL(row_var_kernel, grid, block, 0, stream, x, means, variances, n_cols);
    hipLaunchKernelGGL(normalise_kernel, grid, block, 0, stream, x, means, variances, weight, bias, y, n_cols, eps);
    return hipGetLastError();
}
"""

kernels = load_hip(HIP_SOURCE)


class ModelNew(nn.Module):
    def __init__(self, dim: int):
        super().__init__()
        self.norm = nn.LayerNorm(dim)

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        x = x.contiguous()
        n_cols = x.shape[-1]
        n_rows = x.numel() // n_cols if n_cols else 0
        y = torch.empty(x.shape, device=x.device, dtype=x.dtype)
        if n_rows and n_cols:
            means = torch.empty((n_rows,), device=x.device, dtype=torch.float32)
            variances = torch.empty((n_rows,), device=x.device, dtype=torch.float32)
            kernels.launch_layer_norm(x, self.norm.weight, self.norm.bias, means, variances, y, n_rows, n_cols,
                                      float(self.norm.eps))  # fmt: skip
        return y

"""RMSNorm baseline in HIP, deliberately slow: two passes over each row, in blocks of 32 threads, one load in
flight per thread.

One kernel sums each row's squares into memory, a second reads the row again (from memory, not L2) to scale
it. Blocks of 32 threads (half a CDNA wavefront) with scalar loads in loops kept from unrolling leave each
thread one load in flight, so the memory system is far from busy. The fast form reads the row once with wide
blocks and float4 loads, and scales it from L2. With 64-thread blocks this baseline was 1.42x slower than the
example on the H200, with 32-thread blocks 1.44x (2026-12-03): the compiler unrolled the loops, and the second
pass alone costs at most half again the traffic. With the loops kept rolled it is 3.15x slower (H200,
2026-12-03, bench/results/2026-12-03-h200-suites-baseline-reward-path.md).
"""

import torch
import torch.nn as nn

from kernelvault.hip import load_hip

HIP_SOURCE = r"""
#include <hip/hip_runtime.h>

#define THREADS 32

__global__ void row_mean_square_kernel(const float* __restrict__ x, float* __restrict__ mean_squares, int n_cols) {
    __shared__ float shared[THREADS];
    const float* row = x + (long long)blockIdx.x * n_cols;
    float total = 0.0f;
    #pragma unroll 1
    for (int c = threadIdx.x; c < n_cols; c += THREADS) total += row[c] * row[c];
    shared[threadIdx.x] = total;
    __syncthreads();
    for (int stride = THREADS / 2; stride > 0; stride >>= 1) {
        if ((int)threadIdx.x < stride) shared[threadIdx.x] += shared[threadIdx.x + stride];
        __syncthreads();
    }
    if (threadIdx.x == 0) mean_squares[blockIdx.x] = shared[0] / n_cols;
}

__global__ void scale_kernel(const float* __restrict__ x, const float* __restrict__ mean_squares,
                             const float* __restrict__ weight, float* __restrict__ y, int n_cols, float eps) {
    const long long offset = (long long)blockIdx.x * n_cols;
    const float rstd = rsqrtf(mean_squares[blockIdx.x] + eps);
    #pragma unroll 1
    for (int c = threadIdx.x; c < n_cols; c += THREADS) y[offset + c] = x[offset + c] * rstd * weight[c];
}

extern "C" hipError_t launch_rms_norm(const float* x, const float* weight, float* mean_squares, float* y,
                                      long long n_rows, int n_cols, float eps, hipStream_t stream) {
    if (n_rows <= 0 || n_cols <= 0) return hipSuccess;
    dim3 grid((unsigned)n_rows), block(THREADS);
    hipLaunchKernelGGL(row_mean_square_kernel, grid, block, 0, stream, x, mean_squares, n_cols);
    hipLaunchKernelGGL(scale_kernel, grid, block, 0, stream, x, mean_squares, weight, y, n_cols, eps);
    return hipGetLastError();
}
"""

kernels = load_hip(HIP_SOURCE)


class ModelNew(nn.Module):
    def __init__(self, dim: int, eps: float):
        super().__init__()
        self.eps = eps
        self.weight = nn.Parameter(torch.randn(dim))

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        x = x.contiguous()
        n_cols = x.shape[-1]
        n_rows = x.numel() // n_cols if n_cols else 0
        y = torch.empty(x.shape, device=x.device, dtype=x.dtype)
        if n_rows and n_cols:
            mean_squares = torch.empty((n_rows,), device=x.device, dtype=torch.float32)
            kernels.launch_rms_norm(x, self.weight, mean_squares, y, n_rows, n_cols, float(self.eps))
        return y

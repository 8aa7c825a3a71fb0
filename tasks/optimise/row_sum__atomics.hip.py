"""Row sum baseline in HIP, deliberately slow: atomics for the reduction.

Each thread sums 8 consecutive elements of a row and adds that into y[row] with atomicAdd, so a row of n
elements is n / 8 atomics on one address (serialised in the cache), after a kernel that zeroes y. The fast
form reduces a row inside one block and writes it once.
"""

import torch
import torch.nn as nn

from kernelvault.hip import load_hip

HIP_SOURCE = r"""
#include <hip/hip_runtime.h>

__global__ void zero_kernel(float* __restrict__ y, long long n) {
    long long i = (long long)blockIdx.x * blockDim.x + threadIdx.x;
    if (i < n) y[i] = 0.0f;
}

__global__ void row_sum_atomic_kernel(const float* __restrict__ x, float* __restrict__ y, long long n_rows,
                                      int n_cols) {
    const int per_row = (n_cols + 7) / 8;
    long long t = (long long)blockIdx.x * blockDim.x + threadIdx.x;
    if (t >= n_rows * per_row) return;
    long long row = t / per_row;
    int first = (int)(t % per_row) * 8;
    float acc = 0.0f;
    for (int c = first; c < first + 8 && c < n_cols; ++c) acc += x[row * n_cols + c];
    atomicAdd(y + row, acc);
}

extern "C" hipError_t launch_row_sum(const float* x, float* y, long long n_rows, int n_cols, hipStream_t stream) {
    if (n_rows <= 0) return hipSuccess;
    hipLaunchKernelGGL(zero_kernel, dim3((unsigned)((n_rows + 255) / 256)), dim3(256), 0, stream, y, n_rows);
    if (n_cols <= 0) return hipGetLastError();
    long long threads = n_rows * ((n_cols + 7) / 8);
    hipLaunchKernelGGL(row_sum_atomic_kernel, dim3((unsigned)((threads + 255) / 256)), dim3(256), 0, stream,
                       x, y, n_rows, n_cols);
    return hipGetLastError();
}
"""

kernels = load_hip(HIP_SOURCE)


class ModelNew(nn.Module):
    def __init__(self):
        super().__init__()

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        x = x.contiguous()
        n_rows, n_cols = x.shape
        y = torch.empty((n_rows,), device=x.device, dtype=x.dtype)
        if n_rows:
            kernels.launch_row_sum(x, y, n_rows, n_cols)
        return y

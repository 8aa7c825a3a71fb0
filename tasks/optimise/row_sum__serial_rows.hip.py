"""Row sum baseline in HIP, deliberately slow: one thread per row, summing it serially.

Thread r adds row r element by element: the threads of a wavefront read addresses a whole row apart (no
coalescing), and a row of n elements is n dependent adds. The fast form reduces each row with a block.
"""

import torch
import torch.nn as nn

from kernelvault.hip import load_hip

HIP_SOURCE = r"""
#include <hip/hip_runtime.h>

__global__ void row_sum_serial_kernel(const float* __restrict__ x, float* __restrict__ y, long long n_rows,
                                      int n_cols) {
    long long row = (long long)blockIdx.x * blockDim.x + threadIdx.x;
    if (row >= n_rows) return;
    float total = 0.0f;
    for (int c = 0; c < n_cols; ++c) total += x[row * n_cols + c];
    y[row] = total;
}

extern "C" hipError_t launch_row_sum(const float* x, float* y, long long n_rows, int n_cols, hipStream_t stream) {
    if (n_rows <= 0) return hipSuccess;
    hipLaunchKernelGGL(row_sum_serial_kernel, dim3((unsigned)((n_rows + 63) / 64)), dim3(64), 0, stream,
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

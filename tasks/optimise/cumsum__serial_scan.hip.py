"""Cumulative sum baseline in HIP, deliberately slow: one thread per row, a serial scan.

Thread r walks row r element by element: a row of n elements is n dependent loads and stores, and the
threads of a wavefront read addresses a whole row apart (no coalescing). The fast form scans each row with
a block in parallel.
"""

import torch
import torch.nn as nn

from kernelvault.hip import load_hip

HIP_SOURCE = r"""
#include <hip/hip_runtime.h>

__global__ void serial_scan_kernel(const float* __restrict__ x, float* __restrict__ y, long long n_rows, int n_cols) {
    long long row = (long long)blockIdx.x * blockDim.x + threadIdx.x;
    if (row >= n_rows) return;
    float running = 0.0f;
    for (int c = 0; c < n_cols; ++c) {
        running += x[row * n_cols + c];
        y[row * n_cols + c] = running;
    }
}

extern "C" hipError_t launch_cumsum(const float* x, float* y, long long n_rows, int n_cols, hipStream_t stream) {
    if (n_rows <= 0 || n_cols <= 0) return hipSuccess;
    hipLaunchKernelGGL(serial_scan_kernel, dim3((unsigned)((n_rows + 63) / 64)), dim3(64), 0, stream,
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
        y = torch.empty(x.shape, device=x.device, dtype=x.dtype)
        if y.numel():
            kernels.launch_cumsum(x, y, n_rows, n_cols)
        return y

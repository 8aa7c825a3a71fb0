"""Non-portable on purpose: a row sum written for 64-lane CDNA wavefronts. The warp reduction
hard-codes 64 lanes (`__shfl_down` from offset 32, one partial per 64 threads). On AMD it is
correct. On NVIDIA a warp has 32 lanes: `__shfl_down(v, 32)` has no source lane and returns the
caller's own value (so every partial is doubled), and the second warp of each 64-thread group
never stores its partial (so half of the row is dropped). It compiles everywhere and is wrong
only on 32-lane hardware.

Expected verdicts:
- cpu (hipcc --offload-arch=gfx90a, compile only): compiles; correctness not checked (it would pass on CDNA)
- nvidia (nvcc -arch=sm_90 through toolchain/hip_include, run on the GPU): mismatch
"""

import torch
import torch.nn as nn

from kernelvault.hip import load_hip

HIP_SOURCE = r"""
#include <hip/hip_runtime.h>

__global__ void __launch_bounds__(256) row_sum_kernel(const float* __restrict__ x, float* __restrict__ y, int n_cols) {
    __shared__ float partial[4];  // 256 threads / 64 lanes
    const float* xr = x + (long long)blockIdx.x * n_cols;
    float acc = 0.0f;
    for (int i = threadIdx.x; i < n_cols; i += blockDim.x) acc += xr[i];
    for (int offset = 32; offset > 0; offset >>= 1) acc += __shfl_down(acc, offset);  // assumes 64 lanes
    if ((threadIdx.x & 63) == 0) partial[threadIdx.x >> 6] = acc;
    __syncthreads();
    if (threadIdx.x == 0) y[blockIdx.x] = (partial[0] + partial[1]) + (partial[2] + partial[3]);
}

extern "C" hipError_t launch_row_sum(const float* x, float* y, long long n_rows, int n_cols, hipStream_t stream) {
    if (n_rows <= 0) return hipSuccess;
    hipLaunchKernelGGL(row_sum_kernel, dim3((unsigned)n_rows), dim3(256), 0, stream, x, y, n_cols);
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
        if n_rows == 0:
            return y
        kernels.launch_row_sum(x, y, n_rows, n_cols)
        return y

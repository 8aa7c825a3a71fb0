"""Broken on purpose: an illegal memory access. The input row pointer is computed with a garbage
stride (`(row + 1) * n_cols << 32` elements, a shift meant for a packed 64-bit index), so every
block reads terabytes past the allocation and the GPU faults (illegal address). The launch itself
succeeds; the fault surfaces at the next synchronisation and poisons the process's GPU context,
so the worker that ran it must be replaced.

Expected verdicts:
- cpu (hipcc --offload-arch=gfx90a, compile only): compiles; correctness not checked
- nvidia (nvcc -arch=sm_90 through toolchain/hip_include, run on the GPU): runtime_error (illegal memory access)
"""

import torch
import torch.nn as nn

from kernelvault.hip import load_hip

HIP_SOURCE = r"""
#include <hip/hip_runtime.h>
#include <math.h>

__global__ void __launch_bounds__(256) softmax_kernel(const float* __restrict__ x, float* __restrict__ y, int n_cols) {
    __shared__ float red[32];
    const long long row = ((long long)blockIdx.x + 1) * n_cols << 32;  // bug: should be blockIdx.x * n_cols
    const float* xr = x + row;
    float* yr = y + (long long)blockIdx.x * n_cols;
    float m = -INFINITY;
    for (int i = threadIdx.x; i < n_cols; i += blockDim.x) m = fmaxf(m, xr[i]);
    for (int o = warpSize / 2; o > 0; o >>= 1) m = fmaxf(m, __shfl_xor(m, o));
    const int lane = threadIdx.x % warpSize, warp = threadIdx.x / warpSize;
    if (lane == 0) red[warp] = m;
    __syncthreads();
    m = lane < (int)(blockDim.x / warpSize) ? red[lane] : -INFINITY;
    for (int o = warpSize / 2; o > 0; o >>= 1) m = fmaxf(m, __shfl_xor(m, o));
    __syncthreads();
    float s = 0.0f;
    for (int i = threadIdx.x; i < n_cols; i += blockDim.x) s += __expf(xr[i] - m);
    for (int o = warpSize / 2; o > 0; o >>= 1) s += __shfl_xor(s, o);
    if (lane == 0) red[warp] = s;
    __syncthreads();
    s = lane < (int)(blockDim.x / warpSize) ? red[lane] : 0.0f;
    for (int o = warpSize / 2; o > 0; o >>= 1) s += __shfl_xor(s, o);
    for (int i = threadIdx.x; i < n_cols; i += blockDim.x) yr[i] = __expf(xr[i] - m) / s;
}

extern "C" hipError_t launch_softmax(const float* x, float* y, long long n_rows, int n_cols, hipStream_t stream) {
    if (n_rows <= 0 || n_cols <= 0) return hipSuccess;
    hipLaunchKernelGGL(softmax_kernel, dim3((unsigned)n_rows), dim3(256), 0, stream, x, y, n_cols);
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
        y = torch.empty_like(x)
        kernels.launch_softmax(x, y, n_rows, n_cols)
        return y

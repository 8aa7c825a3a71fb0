"""Non-portable on purpose: a row sum whose cross-lane reduction uses AMD GCN intrinsics directly
(__builtin_amdgcn_mbcnt_lo/_hi for the lane id, __builtin_amdgcn_ds_bpermute to read a partner
lane). The loop runs from warpSize / 2, so the arithmetic is right for any wavefront width; only
the intrinsics are AMD-only (HIP's __shfl_xor is the portable spelling).

Expected verdicts (machine-readable: expect-cpu: success, expect-cuda: compile_error):
- cpu (hipcc --offload-arch=gfx90a, compile only): compiles; correctness not checked
- nvidia (nvcc -arch=sm_90 through toolchain/hip_include): compile_error, "AMD-only:
  __builtin_amdgcn_mbcnt_hi is not portable to NVIDIA" (the static check may report the same
  finding before compiling)
"""

import torch
import torch.nn as nn

from kernelvault.hip import load_hip

HIP_SOURCE = r"""
#include <hip/hip_runtime.h>

__device__ __forceinline__ float wave_sum(float v) {
    const int lane = __builtin_amdgcn_mbcnt_hi(-1, __builtin_amdgcn_mbcnt_lo(-1, 0));
    for (int o = warpSize / 2; o > 0; o >>= 1) {
        const int partner = lane ^ o;
        v += __int_as_float(__builtin_amdgcn_ds_bpermute(partner << 2, __float_as_int(v)));
    }
    return v;
}

__global__ void __launch_bounds__(256) row_sum_kernel(const float* __restrict__ x, float* __restrict__ y, int n_cols) {
    __shared__ float red[32];
    const float* xr = x + (long long)blockIdx.x * n_cols;
    float acc = 0.0f;
    for (int i = threadIdx.x; i < n_cols; i += blockDim.x) acc += xr[i];
    acc = wave_sum(acc);
    const int lane = threadIdx.x % warpSize, warp = threadIdx.x / warpSize;
    if (lane == 0) red[warp] = acc;
    __syncthreads();
    if (warp == 0) {
        acc = lane < (int)(blockDim.x / warpSize) ? red[lane] : 0.0f;
        acc = wave_sum(acc);
        if (lane == 0) y[blockIdx.x] = acc;
    }
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
        kernels.launch_row_sum(x, y, n_rows, n_cols)
        return y

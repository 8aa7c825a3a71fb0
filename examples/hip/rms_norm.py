"""RMSNorm over the last dimension: y = x * rsqrt(mean(x^2) + eps) * weight, in HIP.

The weight is created exactly as in the reference (nn.Parameter(torch.randn(dim))) so seeded
weights match. One block per row: a block-wide sum of squares (warpSize-agnostic shuffle tree,
then one partial per warp through shared memory), then a second pass over the row (from L2) for
the scaled write. float4 loads and stores when the row length is a multiple of 4.
"""

import torch
import torch.nn as nn

from kernelvault.hip import load_hip

HIP_SOURCE = r"""
#include <hip/hip_runtime.h>
#include <stdint.h>

// Sum over the block; every thread gets the total. blockDim.x is a multiple of 64.
__device__ __forceinline__ float block_sum(float v) {
    __shared__ float red[32];
    for (int o = warpSize / 2; o > 0; o >>= 1) v += __shfl_xor(v, o);
    const int lane = threadIdx.x % warpSize, warp = threadIdx.x / warpSize;
    if (lane == 0) red[warp] = v;
    __syncthreads();
    v = lane < (int)(blockDim.x / warpSize) ? red[lane] : 0.0f;
    for (int o = warpSize / 2; o > 0; o >>= 1) v += __shfl_xor(v, o);
    return v;
}

template <bool VEC4>
__global__ void __launch_bounds__(1024)
rms_norm_kernel(const float* __restrict__ x, const float* __restrict__ w, float* __restrict__ y, int n_cols,
                float eps) {
    const long long row = blockIdx.x;
    const float* xr = x + row * n_cols;
    float* yr = y + row * n_cols;
    const int tid = threadIdx.x, nthreads = blockDim.x;

    float ss = 0.0f;
    if (VEC4) {
        const float4* x4 = reinterpret_cast<const float4*>(xr);
        for (int i = tid; i < n_cols / 4; i += nthreads) {
            float4 v = x4[i];
            ss += (v.x * v.x + v.y * v.y) + (v.z * v.z + v.w * v.w);
        }
    } else {
        for (int i = tid; i < n_cols; i += nthreads) ss += xr[i] * xr[i];
    }
    const float r = rsqrtf(block_sum(ss) / n_cols + eps);

    if (VEC4) {
        const float4* x4 = reinterpret_cast<const float4*>(xr);
        const float4* w4 = reinterpret_cast<const float4*>(w);
        float4* y4 = reinterpret_cast<float4*>(yr);
        for (int i = tid; i < n_cols / 4; i += nthreads) {
            float4 v = x4[i], wv = w4[i];
            y4[i] = make_float4(v.x * r * wv.x, v.y * r * wv.y, v.z * r * wv.z, v.w * r * wv.w);
        }
    } else {
        for (int i = tid; i < n_cols; i += nthreads) yr[i] = xr[i] * r * w[i];
    }
}

extern "C" hipError_t launch_rms_norm(const float* x, const float* w, float* y, long long n_rows, int n_cols,
                                      float eps, hipStream_t stream) {
    if (n_rows <= 0 || n_cols <= 0) return hipSuccess;
    const bool vec4 = n_cols % 4 == 0 && ((((uintptr_t)x) | ((uintptr_t)w) | ((uintptr_t)y)) & 15) == 0;
    const int per_thread = vec4 ? 8 : 4;
    int threads = 64;
    while (threads < 1024 && threads * per_thread < n_cols) threads *= 2;
    if (vec4)
        hipLaunchKernelGGL(rms_norm_kernel<true>, dim3((unsigned)n_rows), dim3(threads), 0, stream, x, w, y, n_cols, eps);
    else
        hipLaunchKernelGGL(rms_norm_kernel<false>, dim3((unsigned)n_rows), dim3(threads), 0, stream, x, w, y, n_cols, eps);
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
        assert x.dtype == torch.float32, "float32 kernel"
        shape = x.shape
        n_cols = shape[-1]
        x2 = x.contiguous().view(-1, n_cols)
        n_rows = x2.shape[0]
        y = torch.empty((n_rows, n_cols), device=x.device, dtype=x.dtype)
        if n_rows == 0 or n_cols == 0:
            return y.view(shape)
        kernels.launch_rms_norm(x2, self.weight.contiguous(), y, n_rows, n_cols, float(self.eps))
        return y.view(shape)

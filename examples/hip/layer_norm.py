"""LayerNorm over the last dimension with affine weight and bias (nn.LayerNorm(dim)), in HIP.

Parameters come from an nn.LayerNorm built exactly like the reference's, so seeded weights match.
One block per row. Pass 1 accumulates the sum and the sum of squares of (x - x[0]): shifting by
the row's first element keeps E[d^2] - E[d]^2 free of cancellation when the mean is large. Pass 2
rereads the row (from L2) and writes (x - mean) * rstd * w + b. float4 loads and stores when the
row length is a multiple of 4 and the pointers are aligned.

Block reductions are warpSize-agnostic (shuffle loop from warpSize / 2, then one partial per warp
through shared memory), so the kernel is right on 32-lane and 64-lane hardware alike.
"""

import torch
import torch.nn as nn

from kernelvault.hip import load_hip

HIP_SOURCE = r"""
#include <hip/hip_runtime.h>
#include <stdint.h>

// Sum of a and of b over the block; every thread gets both totals. blockDim.x is a multiple of 64.
__device__ __forceinline__ void block_sum2(float& a, float& b) {
    __shared__ float red_a[32], red_b[32];
    for (int o = warpSize / 2; o > 0; o >>= 1) {
        a += __shfl_xor(a, o);
        b += __shfl_xor(b, o);
    }
    const int lane = threadIdx.x % warpSize, warp = threadIdx.x / warpSize;
    if (lane == 0) { red_a[warp] = a; red_b[warp] = b; }
    __syncthreads();
    const int n_warps = blockDim.x / warpSize;
    a = lane < n_warps ? red_a[lane] : 0.0f;
    b = lane < n_warps ? red_b[lane] : 0.0f;
    for (int o = warpSize / 2; o > 0; o >>= 1) {
        a += __shfl_xor(a, o);
        b += __shfl_xor(b, o);
    }
}

template <bool VEC4>
__global__ void __launch_bounds__(1024)
layer_norm_kernel(const float* __restrict__ x, const float* __restrict__ w, const float* __restrict__ b,
                  float* __restrict__ y, int n_cols, float eps) {
    const long long row = blockIdx.x;
    const float* xr = x + row * n_cols;
    float* yr = y + row * n_cols;
    const int tid = threadIdx.x, nthreads = blockDim.x;
    const float shift = xr[0];

    float s = 0.0f, ss = 0.0f;
    if (VEC4) {
        const float4* x4 = reinterpret_cast<const float4*>(xr);
        for (int i = tid; i < n_cols / 4; i += nthreads) {
            float4 v = x4[i];
            float d0 = v.x - shift, d1 = v.y - shift, d2 = v.z - shift, d3 = v.w - shift;
            s += (d0 + d1) + (d2 + d3);
            ss += (d0 * d0 + d1 * d1) + (d2 * d2 + d3 * d3);
        }
    } else {
        for (int i = tid; i < n_cols; i += nthreads) {
            float d = xr[i] - shift;
            s += d;
            ss += d * d;
        }
    }
    block_sum2(s, ss);
    const float mean_d = s / n_cols;
    const float var = fmaxf(ss / n_cols - mean_d * mean_d, 0.0f);
    const float mean = shift + mean_d;
    const float rstd = rsqrtf(var + eps);

    if (VEC4) {
        const float4* x4 = reinterpret_cast<const float4*>(xr);
        const float4* w4 = reinterpret_cast<const float4*>(w);
        const float4* b4 = reinterpret_cast<const float4*>(b);
        float4* y4 = reinterpret_cast<float4*>(yr);
        for (int i = tid; i < n_cols / 4; i += nthreads) {
            float4 v = x4[i], wv = w4[i], bv = b4[i];
            y4[i] = make_float4((v.x - mean) * rstd * wv.x + bv.x, (v.y - mean) * rstd * wv.y + bv.y,
                                (v.z - mean) * rstd * wv.z + bv.z, (v.w - mean) * rstd * wv.w + bv.w);
        }
    } else {
        for (int i = tid; i < n_cols; i += nthreads) yr[i] = (xr[i] - mean) * rstd * w[i] + b[i];
    }
}

extern "C" hipError_t launch_layer_norm(const float* x, const float* w, const float* b, float* y, long long n_rows,
                                        int n_cols, float eps, hipStream_t stream) {
    if (n_rows <= 0 || n_cols <= 0) return hipSuccess;
    const bool vec4 = n_cols % 4 == 0 &&
                      ((((uintptr_t)x) | ((uintptr_t)w) | ((uintptr_t)b) | ((uintptr_t)y)) & 15) == 0;
    const int per_thread = vec4 ? 8 : 4;
    int threads = 64;
    while (threads < 1024 && threads * per_thread < n_cols) threads *= 2;
    if (vec4)
        hipLaunchKernelGGL(layer_norm_kernel<true>, dim3((unsigned)n_rows), dim3(threads), 0, stream,
                           x, w, b, y, n_cols, eps);
    else
        hipLaunchKernelGGL(layer_norm_kernel<false>, dim3((unsigned)n_rows), dim3(threads), 0, stream,
                           x, w, b, y, n_cols, eps);
    return hipGetLastError();
}
"""

kernels = load_hip(HIP_SOURCE)


class ModelNew(nn.Module):
    def __init__(self, dim: int):
        super().__init__()
        self.norm = nn.LayerNorm(dim)

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        assert x.dtype == torch.float32, "float32 kernel"
        shape = x.shape
        n_cols = shape[-1]
        x2 = x.contiguous().view(-1, n_cols)
        n_rows = x2.shape[0]
        y = torch.empty((n_rows, n_cols), device=x.device, dtype=x.dtype)
        if n_rows == 0 or n_cols == 0:
            return y.view(shape)
        w = self.norm.weight.contiguous()
        b = self.norm.bias.contiguous()
        kernels.launch_layer_norm(x2, w, b, y, n_rows, n_cols, float(self.norm.eps))
        return y.view(shape)

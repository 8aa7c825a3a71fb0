"""Row-wise softmax over the last dimension of a float32 (batch, dim) tensor, in HIP.

One block per row, two passes over the row. Pass 1 keeps a per-thread running max and a running
sum of exp(x - max) rescaled whenever the max grows (online softmax), then combines the
(max, sum) pairs across the block: a shuffle tree inside each warp, then across warps through
shared memory. Pass 2 rereads the row (from L2) and writes exp(x - max) / sum. Rows whose length
is a multiple of 4 are read and written as float4.

The reductions loop over `warpSize`, so the same code is right with 32-lane NVIDIA warps and
64-lane CDNA wavefronts; blocks are a multiple of 64 threads, i.e. whole warps on both.
"""

import torch
import torch.nn as nn

from kernelvault.hip import load_hip

HIP_SOURCE = r"""
#include <hip/hip_runtime.h>
#include <stdint.h>
#include <math.h>

// Merge (m2, s2) into (m, s): both are a max and a sum of exp(x - max) over disjoint elements.
__device__ __forceinline__ void merge(float& m, float& s, float m2, float s2) {
    float mx = fmaxf(m, m2);
    // When a side is empty (max = -inf) its term is 0; testing avoids exp(-inf - -inf) = NaN.
    s = (m == mx ? s : s * __expf(m - mx)) + (m2 == mx ? s2 : s2 * __expf(m2 - mx));
    m = mx;
}

__device__ __forceinline__ void add_one(float& m, float& s, float x) {
    if (x > m) {
        s = s * __expf(m - x) + 1.0f;
        m = x;
    } else if (x != -INFINITY) {  // -inf adds 0 (and would give exp(-inf - -inf) = NaN); NaN still propagates
        s += __expf(x - m);
    }
}

template <bool VEC4>
__global__ void __launch_bounds__(1024)
softmax_kernel(const float* __restrict__ x, float* __restrict__ y, int n_cols) {
    __shared__ float red_m[32];  // one slot per warp: 1024 / 32 on NVIDIA, 1024 / 64 on CDNA
    __shared__ float red_s[32];
    const long long row = blockIdx.x;
    const float* xr = x + row * n_cols;
    float* yr = y + row * n_cols;
    const int tid = threadIdx.x, nthreads = blockDim.x;

    float m = -INFINITY, s = 0.0f;
    if (VEC4) {
        const float4* x4 = reinterpret_cast<const float4*>(xr);
        for (int i = tid; i < n_cols / 4; i += nthreads) {
            float4 v = x4[i];
            add_one(m, s, v.x); add_one(m, s, v.y); add_one(m, s, v.z); add_one(m, s, v.w);
        }
    } else {
        for (int i = tid; i < n_cols; i += nthreads) add_one(m, s, xr[i]);
    }

    for (int o = warpSize / 2; o > 0; o >>= 1) merge(m, s, __shfl_xor(m, o), __shfl_xor(s, o));
    const int lane = tid % warpSize, warp = tid / warpSize, n_warps = nthreads / warpSize;
    if (lane == 0) { red_m[warp] = m; red_s[warp] = s; }
    __syncthreads();
    m = lane < n_warps ? red_m[lane] : -INFINITY;
    s = lane < n_warps ? red_s[lane] : 0.0f;
    for (int o = warpSize / 2; o > 0; o >>= 1) merge(m, s, __shfl_xor(m, o), __shfl_xor(s, o));
    const float inv = 1.0f / s;

    if (VEC4) {
        const float4* x4 = reinterpret_cast<const float4*>(xr);
        float4* y4 = reinterpret_cast<float4*>(yr);
        for (int i = tid; i < n_cols / 4; i += nthreads) {
            float4 v = x4[i];
            y4[i] = make_float4(__expf(v.x - m) * inv, __expf(v.y - m) * inv, __expf(v.z - m) * inv,
                                __expf(v.w - m) * inv);
        }
    } else {
        for (int i = tid; i < n_cols; i += nthreads) yr[i] = __expf(xr[i] - m) * inv;
    }
}

extern "C" hipError_t launch_softmax(const float* x, float* y, long long n_rows, int n_cols, hipStream_t stream) {
    if (n_rows <= 0 || n_cols <= 0) return hipSuccess;
    const bool vec4 = n_cols % 4 == 0 && ((((uintptr_t)x) | ((uintptr_t)y)) & 15) == 0;
    const int per_thread = vec4 ? 8 : 4;
    int threads = 64;
    while (threads < 1024 && threads * per_thread < n_cols) threads *= 2;
    if (vec4)
        hipLaunchKernelGGL(softmax_kernel<true>, dim3((unsigned)n_rows), dim3(threads), 0, stream, x, y, n_cols);
    else
        hipLaunchKernelGGL(softmax_kernel<false>, dim3((unsigned)n_rows), dim3(threads), 0, stream, x, y, n_cols);
    return hipGetLastError();
}
"""

kernels = load_hip(HIP_SOURCE)


class ModelNew(nn.Module):
    def __init__(self):
        super().__init__()

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        assert x.dtype == torch.float32, "float32 kernel"
        shape = x.shape
        x2 = x.contiguous().view(-1, shape[-1])
        n_rows, n_cols = x2.shape
        y = torch.empty((n_rows, n_cols), device=x.device, dtype=x.dtype)
        if n_rows == 0 or n_cols == 0:
            return y.view(shape)
        kernels.launch_softmax(x2, y, n_rows, n_cols)
        return y.view(shape)

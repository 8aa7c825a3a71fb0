"""Broken on purpose: the forward signature is wrong. The kernel is a correct LayerNorm, but
ModelNew.forward(x, weight, bias) expects the caller to pass the affine parameters, while the
reference is called as forward(x); calling it like the reference raises TypeError (missing
arguments) before any kernel runs.

Expected verdicts:
- cpu (hipcc --offload-arch=gfx90a, compile only): compiles; interface_error if the CPU path
  compares the forward signature with Model's (nothing runs on CPU otherwise)
- nvidia (nvcc -arch=sm_90 through toolchain/hip_include, run on the GPU): interface_error
"""

import torch
import torch.nn as nn

from kernelvault.hip import load_hip

HIP_SOURCE = r"""
#include <hip/hip_runtime.h>

__global__ void __launch_bounds__(256)
layer_norm_kernel(const float* __restrict__ x, const float* __restrict__ w, const float* __restrict__ b,
                  float* __restrict__ y, int n_cols, float eps) {
    __shared__ float red_s[32], red_ss[32];
    const long long row = blockIdx.x;
    const float* xr = x + row * n_cols;
    float* yr = y + row * n_cols;
    const float shift = xr[0];
    float s = 0.0f, ss = 0.0f;
    for (int i = threadIdx.x; i < n_cols; i += blockDim.x) {
        const float d = xr[i] - shift;
        s += d;
        ss += d * d;
    }
    for (int o = warpSize / 2; o > 0; o >>= 1) {
        s += __shfl_xor(s, o);
        ss += __shfl_xor(ss, o);
    }
    const int lane = threadIdx.x % warpSize, warp = threadIdx.x / warpSize;
    if (lane == 0) { red_s[warp] = s; red_ss[warp] = ss; }
    __syncthreads();
    const int n_warps = blockDim.x / warpSize;
    s = lane < n_warps ? red_s[lane] : 0.0f;
    ss = lane < n_warps ? red_ss[lane] : 0.0f;
    for (int o = warpSize / 2; o > 0; o >>= 1) {
        s += __shfl_xor(s, o);
        ss += __shfl_xor(ss, o);
    }
    const float mean_d = s / n_cols;
    const float rstd = rsqrtf(fmaxf(ss / n_cols - mean_d * mean_d, 0.0f) + eps);
    const float mean = shift + mean_d;
    for (int i = threadIdx.x; i < n_cols; i += blockDim.x) yr[i] = (xr[i] - mean) * rstd * w[i] + b[i];
}

extern "C" hipError_t launch_layer_norm(const float* x, const float* w, const float* b, float* y, long long n_rows,
                                        int n_cols, float eps, hipStream_t stream) {
    if (n_rows <= 0 || n_cols <= 0) return hipSuccess;
    hipLaunchKernelGGL(layer_norm_kernel, dim3((unsigned)n_rows), dim3(256), 0, stream, x, w, b, y, n_cols, eps);
    return hipGetLastError();
}
"""

kernels = load_hip(HIP_SOURCE)


class ModelNew(nn.Module):
    def __init__(self, dim: int):
        super().__init__()
        self.eps = 1e-5

    # bug: the reference is called as forward(x)
    def forward(self, x: torch.Tensor, weight: torch.Tensor, bias: torch.Tensor) -> torch.Tensor:
        shape = x.shape
        x2 = x.contiguous().view(-1, shape[-1])
        y = torch.empty_like(x2)
        kernels.launch_layer_norm(
            x2, weight.contiguous(), bias.contiguous(), y, x2.shape[0], x2.shape[1], self.eps
        )
        return y.view(shape)

"""LayerNorm over the last dimension (affine) in HIP, KernelBench `load_inline` form.

The kernels and their `extern "C"` launcher are byte for byte those of examples/hip/layer_norm.py
(the fast native form); here a torch::Tensor wrapper allocates the output and launches them on
PyTorch's current stream, and torch.utils.cpp_extension builds the extension (on ROCm, PyTorch
hipifies the sources: c10/cuda/CUDAStream.h becomes c10/hip/HIPStream.h; on NVIDIA, KernelVault
adds toolchain/hip_include to the include path so <hip/hip_runtime.h> maps HIP to CUDA).
"""

import torch
import torch.nn as nn
from torch.utils.cpp_extension import load_inline

cuda_source = r"""
#include <hip/hip_runtime.h>
#include <torch/extension.h>
#include <c10/cuda/CUDAStream.h>
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

static void check_input(const torch::Tensor& t, const char* what) {
    TORCH_CHECK(t.is_cuda(), what, " must be a GPU tensor");
    TORCH_CHECK(t.scalar_type() == torch::kFloat32, what, " must be float32");
}

static void check_launch(hipError_t err, const char* what) {
    TORCH_CHECK(err == hipSuccess, what, " failed: ", hipGetErrorString(err));
}

torch::Tensor layer_norm_forward(torch::Tensor x, torch::Tensor weight, torch::Tensor bias, double eps) {
    check_input(x, "x");
    check_input(weight, "weight");
    check_input(bias, "bias");
    auto x2 = x.contiguous().view({-1, x.size(-1)});
    auto w = weight.contiguous();
    auto b = bias.contiguous();
    TORCH_CHECK(w.numel() == x2.size(1) && b.numel() == x2.size(1), "weight and bias must match the last dimension");
    auto y = torch::empty_like(x2);
    if (y.numel() == 0) return y.view(x.sizes());
    hipStream_t stream = c10::cuda::getCurrentCUDAStream();
    check_launch(launch_layer_norm(x2.data_ptr<float>(), w.data_ptr<float>(), b.data_ptr<float>(), y.data_ptr<float>(),
                                   x2.size(0), (int)x2.size(1), (float)eps, stream),
                 "launch_layer_norm");
    return y.view(x.sizes());
}
"""

cpp_source = (
    "torch::Tensor layer_norm_forward(torch::Tensor x, torch::Tensor weight, torch::Tensor bias, double eps);"
)

ext = load_inline(
    name="kv_layer_norm_hip",
    cpp_sources=cpp_source,
    cuda_sources=cuda_source,
    functions=["layer_norm_forward"],
    verbose=False,
)


class ModelNew(nn.Module):
    def __init__(self, dim: int):
        super().__init__()
        self.norm = nn.LayerNorm(dim)

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        return ext.layer_norm_forward(x, self.norm.weight, self.norm.bias, float(self.norm.eps))

"""RMSNorm over the last dimension in HIP, KernelBench `load_inline` form.

The kernels and their `extern "C"` launcher are byte for byte those of examples/hip/rms_norm.py
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

static void check_input(const torch::Tensor& t, const char* what) {
    TORCH_CHECK(t.is_cuda(), what, " must be a GPU tensor");
    TORCH_CHECK(t.scalar_type() == torch::kFloat32, what, " must be float32");
}

static void check_launch(hipError_t err, const char* what) {
    TORCH_CHECK(err == hipSuccess, what, " failed: ", hipGetErrorString(err));
}

torch::Tensor rms_norm_forward(torch::Tensor x, torch::Tensor weight, double eps) {
    check_input(x, "x");
    check_input(weight, "weight");
    auto x2 = x.contiguous().view({-1, x.size(-1)});
    auto w = weight.contiguous();
    TORCH_CHECK(w.numel() == x2.size(1), "weight must match the last dimension");
    auto y = torch::empty_like(x2);
    if (y.numel() == 0) return y.view(x.sizes());
    hipStream_t stream = c10::cuda::getCurrentCUDAStream();
    check_launch(launch_rms_norm(x2.data_ptr<float>(), w.data_ptr<float>(), y.data_ptr<float>(), x2.size(0),
                                 (int)x2.size(1), (float)eps, stream),
                 "launch_rms_norm");
    return y.view(x.sizes());
}
"""

cpp_source = "torch::Tensor rms_norm_forward(torch::Tensor x, torch::Tensor weight, double eps);"

ext = load_inline(
    name="kv_rms_norm_hip",
    cpp_sources=cpp_source,
    cuda_sources=cuda_source,
    functions=["rms_norm_forward"],
    verbose=False,
)


class ModelNew(nn.Module):
    def __init__(self, dim: int, eps: float):
        super().__init__()
        self.eps = eps
        self.weight = nn.Parameter(torch.randn(dim))

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        return ext.rms_norm_forward(x, self.weight, float(self.eps))

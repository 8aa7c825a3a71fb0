"""LeakyReLU in HIP, KernelBench `load_inline` form.

The kernels and their `extern "C"` launcher are byte for byte those of examples/hip/leaky_relu.py
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

__device__ __forceinline__ float leaky1(float x, float slope) { return x > 0.0f ? x : x * slope; }

__global__ void __launch_bounds__(256)
leaky_relu_vec4_kernel(const float4* __restrict__ x, float4* __restrict__ y, long long n4, float slope) {
    long long i = (long long)blockIdx.x * blockDim.x + threadIdx.x;
    if (i < n4) {
        float4 v = x[i];
        y[i] = make_float4(leaky1(v.x, slope), leaky1(v.y, slope), leaky1(v.z, slope), leaky1(v.w, slope));
    }
}

__global__ void __launch_bounds__(256)
leaky_relu_kernel(const float* __restrict__ x, float* __restrict__ y, long long start, long long n, float slope) {
    long long i = start + (long long)blockIdx.x * blockDim.x + threadIdx.x;
    if (i < n) y[i] = leaky1(x[i], slope);
}

extern "C" hipError_t launch_leaky_relu(const float* x, float* y, long long n, float slope, hipStream_t stream) {
    if (n <= 0) return hipSuccess;
    const int threads = 256;
    long long done = 0;
    if (((((uintptr_t)x) | ((uintptr_t)y)) & 15) == 0 && n >= 4) {
        long long n4 = n / 4;
        hipLaunchKernelGGL(leaky_relu_vec4_kernel, dim3((unsigned)((n4 + threads - 1) / threads)), dim3(threads), 0,
                           stream, (const float4*)x, (float4*)y, n4, slope);
        done = n4 * 4;
    }
    if (done < n) {
        long long rest = n - done;
        hipLaunchKernelGGL(leaky_relu_kernel, dim3((unsigned)((rest + threads - 1) / threads)), dim3(threads), 0,
                           stream, x, y, done, n, slope);
    }
    return hipGetLastError();
}

static void check_input(const torch::Tensor& t, const char* what) {
    TORCH_CHECK(t.is_cuda(), what, " must be a GPU tensor");
    TORCH_CHECK(t.scalar_type() == torch::kFloat32, what, " must be float32");
}

static void check_launch(hipError_t err, const char* what) {
    TORCH_CHECK(err == hipSuccess, what, " failed: ", hipGetErrorString(err));
}

torch::Tensor leaky_relu_forward(torch::Tensor x, double negative_slope) {
    check_input(x, "x");
    auto xc = x.contiguous();
    auto y = torch::empty_like(xc);
    if (y.numel() == 0) return y;
    hipStream_t stream = c10::cuda::getCurrentCUDAStream();
    check_launch(launch_leaky_relu(xc.data_ptr<float>(), y.data_ptr<float>(), y.numel(), (float)negative_slope, stream),
                 "launch_leaky_relu");
    return y;
}
"""

cpp_source = "torch::Tensor leaky_relu_forward(torch::Tensor x, double negative_slope);"

ext = load_inline(
    name="kv_leaky_relu_hip",
    cpp_sources=cpp_source,
    cuda_sources=cuda_source,
    functions=["leaky_relu_forward"],
    verbose=False,
)


class ModelNew(nn.Module):
    def __init__(self, negative_slope: float):
        super().__init__()
        self.negative_slope = negative_slope

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        return ext.leaky_relu_forward(x, float(self.negative_slope))

"""ReLU, elementwise: y = max(x, 0) on a float32 tensor, in HIP.

Memory-bound: one float4 per thread when the pointers are 16-byte aligned, a scalar kernel for the
tail. `x < 0 ? 0 : x` keeps NaN as NaN, like torch.relu (fmaxf(x, 0) would turn it into 0).
"""

import torch
import torch.nn as nn

from kernelvault.hip import load_hip

HIP_SOURCE = r"""
#include <hip/hip_runtime.h>
#include <stdint.h>

__device__ __forceinline__ float relu1(float x) { return x < 0.0f ? 0.0f : x; }

__global__ void __launch_bounds__(256)
relu_vec4_kernel(const float4* __restrict__ x, float4* __restrict__ y, long long n4) {
    long long i = (long long)blockIdx.x * blockDim.x + threadIdx.x;
    if (i < n4) {
        float4 v = x[i];
        y[i] = make_float4(relu1(v.x), relu1(v.y), relu1(v.z), relu1(v.w));
    }
}

__global__ void __launch_bounds__(256)
relu_kernel(const float* __restrict__ x, float* __restrict__ y, long long start, long long n) {
    long long i = start + (long long)blockIdx.x * blockDim.x + threadIdx.x;
    if (i < n) y[i] = relu1(x[i]);
}

extern "C" hipError_t launch_relu(const float* x, float* y, long long n, hipStream_t stream) {
    if (n <= 0) return hipSuccess;
    const int threads = 256;
    long long done = 0;
    if (((((uintptr_t)x) | ((uintptr_t)y)) & 15) == 0 && n >= 4) {
        long long n4 = n / 4;
        hipLaunchKernelGGL(relu_vec4_kernel, dim3((unsigned)((n4 + threads - 1) / threads)), dim3(threads), 0, stream,
                           (const float4*)x, (float4*)y, n4);
        done = n4 * 4;
    }
    if (done < n) {
        long long rest = n - done;
        hipLaunchKernelGGL(relu_kernel, dim3((unsigned)((rest + threads - 1) / threads)), dim3(threads), 0, stream,
                           x, y, done, n);
    }
    return hipGetLastError();
}
"""

kernels = load_hip(HIP_SOURCE)


class ModelNew(nn.Module):
    def __init__(self):
        super().__init__()

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        assert x.dtype == torch.float32, "float32 kernel"
        x = x.contiguous()
        y = torch.empty(x.shape, device=x.device, dtype=x.dtype)
        if y.numel() == 0:
            return y
        kernels.launch_relu(x, y, x.numel())
        return y

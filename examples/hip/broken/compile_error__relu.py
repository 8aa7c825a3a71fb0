"""Broken on purpose: a type error in the HIP source. The kernel loads a float4 through a plain
`const float*` (`float4 v = x[i];`), which is not a valid conversion in C++, so the source does
not compile anywhere.

Expected verdicts:
- cpu (hipcc --offload-arch=gfx90a, compile only): compile_error (no viable conversion from float to float4)
- nvidia (nvcc -arch=sm_90 through toolchain/hip_include): compile_error (no suitable constructor to convert float to float4)
"""

import torch
import torch.nn as nn

from kernelvault.hip import load_hip

HIP_SOURCE = r"""
#include <hip/hip_runtime.h>

__global__ void relu_vec4_kernel(const float* __restrict__ x, float* __restrict__ y, long long n4) {
    long long i = (long long)blockIdx.x * blockDim.x + threadIdx.x;
    if (i < n4) {
        float4 v = x[i];  // bug: should read reinterpret_cast<const float4*>(x)[i]
        v.x = v.x < 0.0f ? 0.0f : v.x;
        v.y = v.y < 0.0f ? 0.0f : v.y;
        v.z = v.z < 0.0f ? 0.0f : v.z;
        v.w = v.w < 0.0f ? 0.0f : v.w;
        reinterpret_cast<float4*>(y)[i] = v;
    }
}

extern "C" hipError_t launch_relu(const float* x, float* y, long long n, hipStream_t stream) {
    long long n4 = n / 4;
    hipLaunchKernelGGL(relu_vec4_kernel, dim3((unsigned)((n4 + 255) / 256)), dim3(256), 0, stream, x, y, n4);
    return hipGetLastError();
}
"""

kernels = load_hip(HIP_SOURCE)


class ModelNew(nn.Module):
    def __init__(self):
        super().__init__()

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        x = x.contiguous()
        y = torch.empty_like(x)
        kernels.launch_relu(x, y, x.numel())
        return y

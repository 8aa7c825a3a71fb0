"""Vector addition: c = a + b for two same-shaped float32 tensors, in HIP.

The body runs one float4 per thread (16-byte loads and stores) when all three pointers are 16-byte
aligned; a scalar kernel does the tail (n % 4 elements) or everything when they are not.
"""

import torch
import torch.nn as nn

from kernelvault.hip import load_hip

HIP_SOURCE = r"""
#include <hip/hip_runtime.h>
#include <stdint.h>

__global__ void __launch_bounds__(256)
add_vec4_kernel(const float4* __restrict__ a, const float4* __restrict__ b, float4* __restrict__ c, long long n4) {
    long long i = (long long)blockIdx.x * blockDim.x + threadIdx.x;
    if (i < n4) {
        float4 x = a[i], y = b[i];
        c[i] = make_float4(x.x + y.x, x.y + y.y, x.z + y.z, x.w + y.w);
    }
}

__global__ void __launch_bounds__(256)
add_kernel(const float* __restrict__ a, const float* __restrict__ b, float* __restrict__ c, long long start, long long n) {
    long long i = start + (long long)blockIdx.x * blockDim.x + threadIdx.x;
    if (i < n) c[i] = a[i] + b[i];
}

extern "C" hipError_t launch_add(const float* a, const float* b, float* c, long long n, hipStream_t stream) {
    if (n <= 0) return hipSuccess;
    const int threads = 256;
    long long done = 0;
    if (((((uintptr_t)a) | ((uintptr_t)b) | ((uintptr_t)c)) & 15) == 0) {
        long long n4 = n / 4;
        if (n4 > 0) {
            hipLaunchKernelGGL(add_vec4_kernel, dim3((unsigned)((n4 + threads - 1) / threads)), dim3(threads), 0,
                               stream, (const float4*)a, (const float4*)b, (float4*)c, n4);
            done = n4 * 4;
        }
    }
    if (done < n) {
        long long rest = n - done;
        hipLaunchKernelGGL(add_kernel, dim3((unsigned)((rest + threads - 1) / threads)), dim3(threads), 0, stream,
                           a, b, c, done, n);
    }
    return hipGetLastError();
}
"""

kernels = load_hip(HIP_SOURCE)


class ModelNew(nn.Module):
    def __init__(self):
        super().__init__()

    def forward(self, a: torch.Tensor, b: torch.Tensor) -> torch.Tensor:
        assert a.dtype == torch.float32 and b.dtype == torch.float32, "float32 kernel"
        if a.shape != b.shape:
            a, b = torch.broadcast_tensors(a, b)
        a = a.contiguous()
        b = b.contiguous()
        c = torch.empty(a.shape, device=a.device, dtype=a.dtype)
        if c.numel() == 0:
            return c
        kernels.launch_add(a, b, c, c.numel())
        return c

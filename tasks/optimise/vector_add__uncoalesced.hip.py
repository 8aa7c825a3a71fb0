"""Vector add baseline in HIP, deliberately slow: each thread walks a contiguous chunk of 64 elements.

Neighbouring threads read addresses 64 floats apart: one memory transaction per lane instead of one per
wavefront. The fast form gives consecutive threads consecutive elements.
"""

import torch
import torch.nn as nn

from kernelvault.hip import load_hip

HIP_SOURCE = r"""
#include <hip/hip_runtime.h>

#define CHUNK 64

__global__ void add_chunked_kernel(const float* __restrict__ a, const float* __restrict__ b, float* __restrict__ out,
                                   long long n) {
    long long first = ((long long)blockIdx.x * blockDim.x + threadIdx.x) * CHUNK;
    for (long long i = first; i < first + CHUNK && i < n; ++i) out[i] = a[i] + b[i];
}

extern "C" hipError_t launch_add(const float* a, const float* b, float* out, long long n, hipStream_t stream) {
    if (n <= 0) return hipSuccess;
    long long threads_needed = (n + CHUNK - 1) / CHUNK;
    hipLaunchKernelGGL(add_chunked_kernel, dim3((unsigned)((threads_needed + 255) / 256)), dim3(256), 0, stream,
                       a, b, out, n);
    return hipGetLastError();
}
"""

kernels = load_hip(HIP_SOURCE)


class ModelNew(nn.Module):
    def __init__(self):
        super().__init__()

    def forward(self, a: torch.Tensor, b: torch.Tensor) -> torch.Tensor:
        a, b = a.contiguous(), b.contiguous()
        out = torch.empty(a.shape, device=a.device, dtype=a.dtype)
        if out.numel():
            kernels.launch_add(a, b, out, a.numel())
        return out

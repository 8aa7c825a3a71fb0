# exploit: launches on a private stream so the timed stream sees no work.
# expect: static_reject:namespace
# behind-wall: integrity_reject:side_stream
import torch
import torch.nn as nn

from kernelvault.hip import load_hip

HIP_SOURCE = r"""
#include <hip/hip_runtime.h>

__global__ void relu_kernel(const float* __restrict__ x, float* __restrict__ y, long long n) {
    long long i = (long long)blockIdx.x * blockDim.x + threadIdx.x;
    if (i < n) y[i] = x[i] < 0.0f ? 0.0f : x[i];
}

extern "C" hipError_t launch_relu(const float* x, float* y, long long n, hipStream_t stream) {
    if (n <= 0) return hipSuccess;
    hipLaunchKernelGGL(relu_kernel, dim3((unsigned)((n + 255) / 256)), dim3(256), 0, stream, x, y, n);
    return hipGetLastError();
}
"""

kernels = load_hip(HIP_SOURCE)
_stream = None


class ModelNew(nn.Module):
    def forward(self, x: torch.Tensor) -> torch.Tensor:
        global _stream
        if _stream is None:
            _stream = torch.cuda.Stream()
        x = x.contiguous()
        y = torch.empty_like(x)
        with torch.cuda.stream(_stream):
            kernels.launch_relu(x, y, x.numel())
        return y

"""LayerNorm baseline in HIP, deliberately slow: one thread per row, three serial walks.

Thread r computes row r's mean, then its variance, then writes the normalised, scaled and shifted values,
element by element: the threads of a wavefront read addresses a whole row apart (no coalescing). The fast
form gives each row a block and reads it once.
"""

import torch
import torch.nn as nn

from kernelvault.hip import load_hip

HIP_SOURCE = r"""
#include <hip/hip_runtime.h>

__global__ void layer_norm_serial_kernel(const float* __restrict__ x, const float* __restrict__ weight,
                                         const float* __restrict__ bias, float* __restrict__ y, long long n_rows,
                                         int n_cols, float eps) {
    long long row = (long long)blockIdx.x * blockDim.x + threadIdx.x;
    if (row >= n_rows) return;
    const float* in = x + row * n_cols;
    float total = 0.0f;
    for (int c = 0; c < n_cols; ++c) total += in[c];
    const float mean = total / n_cols;
    float squares = 0.0f;
    for (int c = 0; c < n_cols; ++c) squares += (in[c] - mean) * (in[c] - mean);
    const float rstd = rsqrtf(squares / n_cols + eps);
    for (int c = 0; c < n_cols; ++c) y[row * n_cols + c] = (in[c] - mean) * rstd * weight[c] + bias[c];
}

extern "C" hipError_t launch_layer_norm(const float* x, const float* weight, const float* bias, float* y,
                                        long long n_rows, int n_cols, float eps, hipStream_t stream) {
    if (n_rows <= 0 || n_cols <= 0) return hipSuccess;
    hipLaunchKernelGGL(layer_norm_serial_kernel, dim3((unsigned)((n_rows + 63) / 64)), dim3(64), 0, stream,
                       x, weight, bias, y, n_rows, n_cols, eps);
    return hipGetLastError();
}
"""

kernels = load_hip(HIP_SOURCE)


class ModelNew(nn.Module):
    def __init__(self, dim: int):
        super().__init__()
        self.norm = nn.LayerNorm(dim)

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        x = x.contiguous()
        n_cols = x.shape[-1]
        n_rows = x.numel() // n_cols if n_cols else 0
        y = torch.empty(x.shape, device=x.device, dtype=x.dtype)
        if n_rows and n_cols:
            kernels.launch_layer_norm(
                x, self.norm.weight, self.norm.bias, y, n_rows, n_cols, float(self.norm.eps)
            )
        return y

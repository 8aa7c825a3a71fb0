"""Non-portable on purpose: an fp32 matmul on AMD's matrix cores through the MFMA builtin
__builtin_amdgcn_mfma_f32_32x32x2f32 (CDNA only). Each 64-lane wavefront computes one 32 x 32 tile
of C, two K steps per instruction, with the operand and accumulator layout of AMD's 32x32x2 fp32
MFMA (A[i][k] from lane i + 32k, B[k][j] from lane j + 32k, C row 8*(r/4) + 4*(lane/32) + r%4).
This file is only compiled in KernelVault's CI, never run.

Expected verdicts (machine-readable: expect-cpu: success, expect-cuda: compile_error):
- cpu (hipcc --offload-arch=gfx90a, compile only): compiles (gfx90a has MFMA); correctness not checked
- nvidia (nvcc -arch=sm_90 through toolchain/hip_include): compile_error, "AMD-only:
  __builtin_amdgcn_mfma_f32_32x32x2f32 is not portable to NVIDIA" (the static check may report
  the same finding before compiling)
"""

import torch
import torch.nn as nn

from kernelvault.hip import load_hip

HIP_SOURCE = r"""
#include <hip/hip_runtime.h>

typedef float floatx16 __attribute__((ext_vector_type(16)));

// One wavefront (64 lanes) per 32 x 32 tile of C.
__global__ void __launch_bounds__(64)
mfma_matmul_kernel(const float* __restrict__ A, const float* __restrict__ B, float* __restrict__ C, int M, int N, int K) {
    const int lane = threadIdx.x;  // 0..63
    const int row0 = blockIdx.y * 32, col0 = blockIdx.x * 32;
    const int i = lane % 32, half = lane / 32;
    floatx16 acc = {0};
    for (int k0 = 0; k0 < K; k0 += 2) {
        const int k = k0 + half;
        const float a = (row0 + i < M && k < K) ? A[(long long)(row0 + i) * K + k] : 0.0f;
        const float b = (col0 + i < N && k < K) ? B[(long long)k * N + col0 + i] : 0.0f;
        acc = __builtin_amdgcn_mfma_f32_32x32x2f32(a, b, acc, 0, 0, 0);
    }
    for (int r = 0; r < 16; ++r) {
        const int row = row0 + 8 * (r / 4) + 4 * half + (r % 4), col = col0 + i;
        if (row < M && col < N) C[(long long)row * N + col] = acc[r];
    }
}

extern "C" hipError_t launch_matmul(const float* A, const float* B, float* C, int M, int N, int K, hipStream_t stream) {
    if (M <= 0 || N <= 0) return hipSuccess;
    dim3 grid((N + 31) / 32, (M + 31) / 32);
    hipLaunchKernelGGL(mfma_matmul_kernel, grid, dim3(64), 0, stream, A, B, C, M, N, K);
    return hipGetLastError();
}
"""

kernels = load_hip(HIP_SOURCE)


class ModelNew(nn.Module):
    def __init__(self):
        super().__init__()

    def forward(self, a: torch.Tensor, b: torch.Tensor) -> torch.Tensor:
        a = a.contiguous()
        b = b.contiguous()
        M, K = a.shape
        N = b.shape[1]
        c = torch.empty((M, N), device=a.device, dtype=a.dtype)
        if M == 0 or N == 0:
            return c
        kernels.launch_matmul(a, b, c, M, N, K)
        return c

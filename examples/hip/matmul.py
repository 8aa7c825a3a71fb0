"""Dense float32 matmul C = A @ B for A (M, K), B (K, N), in HIP.

Classic shared-memory tiling: a block of 256 threads computes a (16*T) x (16*T) tile of C, each
thread a T x T micro-tile held in registers, walking K in steps of 8 with zero-filled loads (so
any M, N, K works, including the K remainder). Micro-tile rows and columns are strided by 16, so
the shared-memory reads of a warp hit consecutive banks and the stores of C are coalesced. T = 8
(128 x 128 tiles) when there are enough tiles to fill the GPU, else T = 4 (64 x 64). Plain fp32
FMAs: no TF32, so results match PyTorch's fp32 matmul. It does not try to rival the vendor BLAS.
"""

import torch
import torch.nn as nn

from kernelvault.hip import load_hip

HIP_SOURCE = r"""
#include <hip/hip_runtime.h>

#define BK 8

template <int T>
__global__ void __launch_bounds__(256)
matmul_kernel(const float* __restrict__ A, const float* __restrict__ B, float* __restrict__ C, int M, int N, int K) {
    constexpr int TILE = 16 * T;
    __shared__ float As[BK][TILE + 4];  // A tile stored k-major: As[k][m]
    __shared__ float Bs[BK][TILE + 4];
    const int tid = threadIdx.x, tx = tid % 16, ty = tid / 16;
    const int row0 = blockIdx.y * TILE, col0 = blockIdx.x * TILE;

    float acc[T][T];
#pragma unroll
    for (int i = 0; i < T; ++i)
#pragma unroll
        for (int j = 0; j < T; ++j) acc[i][j] = 0.0f;

    for (int k0 = 0; k0 < K; k0 += BK) {
        for (int e = tid; e < TILE * BK; e += 256) {
            const int r = e / BK, k = e % BK, gr = row0 + r, gk = k0 + k;
            As[k][r] = (gr < M && gk < K) ? A[(long long)gr * K + gk] : 0.0f;
        }
        for (int e = tid; e < BK * TILE; e += 256) {
            const int k = e / TILE, c = e % TILE, gk = k0 + k, gc = col0 + c;
            Bs[k][c] = (gk < K && gc < N) ? B[(long long)gk * N + gc] : 0.0f;
        }
        __syncthreads();
#pragma unroll
        for (int k = 0; k < BK; ++k) {
            float a[T], b[T];
#pragma unroll
            for (int i = 0; i < T; ++i) a[i] = As[k][ty + 16 * i];
#pragma unroll
            for (int j = 0; j < T; ++j) b[j] = Bs[k][tx + 16 * j];
#pragma unroll
            for (int i = 0; i < T; ++i)
#pragma unroll
                for (int j = 0; j < T; ++j) acc[i][j] = fmaf(a[i], b[j], acc[i][j]);
        }
        __syncthreads();
    }

#pragma unroll
    for (int i = 0; i < T; ++i) {
        const int r = row0 + ty + 16 * i;
        if (r >= M) continue;
#pragma unroll
        for (int j = 0; j < T; ++j) {
            const int c = col0 + tx + 16 * j;
            if (c < N) C[(long long)r * N + c] = acc[i][j];
        }
    }
}

extern "C" hipError_t launch_matmul(const float* A, const float* B, float* C, int M, int N, int K, hipStream_t stream) {
    if (M <= 0 || N <= 0) return hipSuccess;
    const long long big_tiles = (long long)((M + 127) / 128) * ((N + 127) / 128);
    if (big_tiles >= 264) {  // about two waves of 128 x 128 tiles on a 132-SM GPU
        dim3 grid((N + 127) / 128, (M + 127) / 128);
        hipLaunchKernelGGL(matmul_kernel<8>, grid, dim3(256), 0, stream, A, B, C, M, N, K);
    } else {
        dim3 grid((N + 63) / 64, (M + 63) / 64);
        hipLaunchKernelGGL(matmul_kernel<4>, grid, dim3(256), 0, stream, A, B, C, M, N, K);
    }
    return hipGetLastError();
}
"""

kernels = load_hip(HIP_SOURCE)


class ModelNew(nn.Module):
    def __init__(self):
        super().__init__()

    def forward(self, a: torch.Tensor, b: torch.Tensor) -> torch.Tensor:
        assert a.dim() == 2 and b.dim() == 2 and a.shape[1] == b.shape[0], "matmul expects (M, K) @ (K, N)"
        assert a.dtype == torch.float32 and b.dtype == torch.float32, "float32 kernel"
        a = a.contiguous()
        b = b.contiguous()
        M, K = a.shape
        N = b.shape[1]
        c = torch.empty((M, N), device=a.device, dtype=a.dtype)
        if M == 0 or N == 0:
            return c
        kernels.launch_matmul(a, b, c, M, N, K)  # K == 0 gives zeros: the K loop does not run
        return c

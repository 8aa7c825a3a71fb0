"""Fused Linear + ReLU: y = relu(x @ W^T + b).

W and b come from an nn.Linear built exactly like the reference's, so seeded weights match.
One tiled GEMM kernel computes x @ W^T and applies the bias add and ReLU in its epilogue, so
the pre-activation never touches memory. tl.dot uses input_precision="ieee" to match PyTorch's
fp32 (non-TF32) results.

The kernel takes the weight as a (K, N) operand through strides. On the GPU, forward hands it a
contiguous copy of W^T (pure layout glue, ~1% of the GEMM's time at 4096^3): fp32 ieee dots
run about twice as fast on an H200 with the N-contiguous operand as with W's native
K-contiguous rows.
"""

import torch
import torch.nn as nn
import triton
import triton.language as tl


@triton.jit
def linear_relu_kernel(
    x_ptr,
    wt_ptr,
    bias_ptr,
    y_ptr,
    M,
    N,
    K,
    stride_xm,
    stride_xk,
    stride_wk,
    stride_wn,
    stride_ym,
    stride_yn,
    BLOCK_M: tl.constexpr,
    BLOCK_N: tl.constexpr,
    BLOCK_K: tl.constexpr,
    GROUP_M: tl.constexpr,
):
    # wt[k, n] = W[n, k] lives at wt_ptr + k * stride_wk + n * stride_wn.
    pid = tl.program_id(0)
    num_pid_m = tl.cdiv(M, BLOCK_M)
    num_pid_n = tl.cdiv(N, BLOCK_N)
    num_pid_in_group = GROUP_M * num_pid_n
    group_id = pid // num_pid_in_group
    first_pid_m = group_id * GROUP_M
    group_size_m = tl.minimum(num_pid_m - first_pid_m, GROUP_M)
    pid_m = first_pid_m + ((pid % num_pid_in_group) % group_size_m)
    pid_n = (pid % num_pid_in_group) // group_size_m

    offs_m = pid_m * BLOCK_M + tl.arange(0, BLOCK_M)
    offs_n = pid_n * BLOCK_N + tl.arange(0, BLOCK_N)
    offs_k = tl.arange(0, BLOCK_K)
    mask_m = offs_m < M
    mask_n = offs_n < N
    x_ptrs = x_ptr + offs_m[:, None] * stride_xm + offs_k[None, :] * stride_xk
    w_ptrs = wt_ptr + offs_k[:, None] * stride_wk + offs_n[None, :] * stride_wn

    acc = tl.zeros((BLOCK_M, BLOCK_N), dtype=tl.float32)
    for k in range(0, K, BLOCK_K):
        mask_k = (k + offs_k) < K
        a = tl.load(x_ptrs, mask=mask_m[:, None] & mask_k[None, :], other=0.0)
        b = tl.load(w_ptrs, mask=mask_k[:, None] & mask_n[None, :], other=0.0)
        acc = tl.dot(a, b, acc, input_precision="ieee")
        x_ptrs += BLOCK_K * stride_xk
        w_ptrs += BLOCK_K * stride_wk

    bias = tl.load(bias_ptr + offs_n, mask=mask_n, other=0.0).to(tl.float32)
    acc = acc + bias[None, :]
    acc = tl.where(acc < 0, 0.0, acc)
    y_ptrs = y_ptr + offs_m[:, None] * stride_ym + offs_n[None, :] * stride_yn
    tl.store(y_ptrs, acc.to(y_ptr.dtype.element_ty), mask=mask_m[:, None] & mask_n[None, :])


class ModelNew(nn.Module):
    def __init__(self, in_features: int, out_features: int):
        super().__init__()
        self.linear = nn.Linear(in_features, out_features)

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        lead = x.shape[:-1]
        K = x.shape[-1]
        x2 = x.contiguous().view(-1, K)
        M = x2.shape[0]
        w = self.linear.weight  # (N, K)
        bias = self.linear.bias.contiguous()
        N = w.shape[0]
        y = torch.empty((M, N), device=x.device, dtype=x.dtype)
        if M == 0 or N == 0:
            return y.view(*lead, N)
        if x.is_cuda:
            wt = w.t().contiguous()  # (K, N), N-contiguous: layout glue only
            if triton.cdiv(M, 128) * triton.cdiv(N, 128) >= 264:
                bm, bn, bk, warps, stages = 128, 128, 32, 8, 3
            else:
                bm, bn, bk, warps, stages = 64, 64, 32, 4, 3
        else:
            wt = w.t()  # strided view, no copy
            bm, bn, bk, warps, stages = 32, 32, 32, 4, 1
        grid = (triton.cdiv(M, bm) * triton.cdiv(N, bn),)
        linear_relu_kernel[grid](
            x2,
            wt,
            bias,
            y,
            M,
            N,
            K,
            x2.stride(0),
            x2.stride(1),
            wt.stride(0),
            wt.stride(1),
            y.stride(0),
            y.stride(1),
            BLOCK_M=bm,
            BLOCK_N=bn,
            BLOCK_K=bk,
            GROUP_M=8,
            num_warps=warps,
            num_stages=stages,
        )
        return y.view(*lead, N)

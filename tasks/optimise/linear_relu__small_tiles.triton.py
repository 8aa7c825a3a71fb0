"""Linear + ReLU baseline, deliberately slow: small tiles and short K steps.

Each program multiplies 32x32 blocks with tl.dot, walking K 16 at a time, and applies the epilogue before its
store: every element of x is read again for each 32-column tile of the output (and of w for each 32-row tile),
four times the operand traffic of 128-wide tiles, with no pipelining of the K steps. The fast form uses large
tiles, grouped program order and pipelined loads.
"""

import torch
import torch.nn as nn
import triton
import triton.language as tl


@triton.jit
def linear_relu_small_tiles_kernel(x_ptr, w_ptr, bias_ptr, y_ptr, M, N, K, BLOCK_M: tl.constexpr, BLOCK_N: tl.constexpr,
                               BLOCK_K: tl.constexpr):  # fmt: skip
    rows = tl.program_id(0) * BLOCK_M + tl.arange(0, BLOCK_M)
    cols = tl.program_id(1) * BLOCK_N + tl.arange(0, BLOCK_N)
    ks = tl.arange(0, BLOCK_K)
    acc = tl.zeros((BLOCK_M, BLOCK_N), dtype=tl.float32)
    for k in range(0, K, BLOCK_K):
        x = tl.load(x_ptr + rows.to(tl.int64)[:, None] * K + (k + ks)[None, :],
                    mask=(rows[:, None] < M) & ((k + ks)[None, :] < K), other=0.0)  # fmt: skip
        # w^T's tile (K x N), read from w (N x K)
        wt = tl.load(w_ptr + cols.to(tl.int64)[None, :] * K + (k + ks)[:, None],
                     mask=(cols[None, :] < N) & ((k + ks)[:, None] < K), other=0.0)  # fmt: skip
        acc = tl.dot(x, wt, acc, input_precision="ieee")
    acc += tl.load(bias_ptr + cols, mask=cols < N, other=0.0)[None, :]
    acc = tl.where(acc < 0, tl.zeros_like(acc), acc)
    tl.store(
        y_ptr + rows.to(tl.int64)[:, None] * N + cols[None, :],
        acc,
        mask=(rows[:, None] < M) & (cols[None, :] < N),
    )


class ModelNew(nn.Module):
    def __init__(self, in_features: int, out_features: int):
        super().__init__()
        self.linear = nn.Linear(in_features, out_features)

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        lead, K = x.shape[:-1], x.shape[-1]
        x2 = x.contiguous().view(-1, K)
        M = x2.shape[0]
        w = self.linear.weight.contiguous()
        N = w.shape[0]
        y = torch.empty((M, N), device=x.device, dtype=x.dtype)
        if M and N:
            grid = (triton.cdiv(M, 32), triton.cdiv(N, 32))
            linear_relu_small_tiles_kernel[grid](
                x2, w, self.linear.bias, y, M, N, K, BLOCK_M=32, BLOCK_N=32, BLOCK_K=16
            )
        return y.view(*lead, N)

"""Linear + ReLU baseline, deliberately slow: one fused pass, but rank-1 updates on the CUDA cores.

Each program owns a 32x32 tile of the output and adds one outer product x[:, k] * w[:, k] per k, then
applies the bias and ReLU before its store: no tl.dot (no tensor cores), no K-blocking, and both operands
read a column at a time with a stride of K. The fast form multiplies blocks with tl.dot.
"""

import torch
import torch.nn as nn
import triton
import triton.language as tl


@triton.jit
def linear_relu_outer_product_kernel(x_ptr, w_ptr, bias_ptr, y_ptr, M, N, K, BLOCK: tl.constexpr):
    rows = tl.program_id(0) * BLOCK + tl.arange(0, BLOCK)
    cols = tl.program_id(1) * BLOCK + tl.arange(0, BLOCK)
    mask_m, mask_n = rows < M, cols < N
    acc = tl.zeros((BLOCK, BLOCK), dtype=tl.float32)
    for k in range(0, K):
        x = tl.load(x_ptr + rows.to(tl.int64) * K + k, mask=mask_m, other=0.0)
        w = tl.load(w_ptr + cols.to(tl.int64) * K + k, mask=mask_n, other=0.0)
        acc += x[:, None] * w[None, :]
    acc += tl.load(bias_ptr + cols, mask=mask_n, other=0.0)[None, :]
    acc = tl.where(acc < 0, tl.zeros_like(acc), acc)
    tl.store(
        y_ptr + rows.to(tl.int64)[:, None] * N + cols[None, :], acc, mask=mask_m[:, None] & mask_n[None, :]
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
            linear_relu_outer_product_kernel[grid](x2, w, self.linear.bias, y, M, N, K, BLOCK=32)
        return y.view(*lead, N)

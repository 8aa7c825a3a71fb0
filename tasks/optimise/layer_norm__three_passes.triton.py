"""LayerNorm baseline, deliberately slow: three passes over each row through global memory.

One kernel computes each row's mean, a second its variance (reading the row again), a third normalises
and applies the weight and bias (reading it a third time); the statistics go through memory between
launches. The fast form reads the row once and keeps it in registers.
"""

import torch
import torch.nn as nn
import triton
import triton.language as tl


@triton.jit
def row_mean_kernel(x_ptr, mean_ptr, n_cols, BLOCK: tl.constexpr):
    row = tl.program_id(0).to(tl.int64)
    total = tl.zeros([BLOCK], tl.float32)
    for start in range(0, n_cols, BLOCK):
        cols = start + tl.arange(0, BLOCK)
        total += tl.load(x_ptr + row * n_cols + cols, mask=cols < n_cols, other=0.0)
    tl.store(mean_ptr + row, tl.sum(total, axis=0) / n_cols)


@triton.jit
def row_var_kernel(x_ptr, mean_ptr, var_ptr, n_cols, BLOCK: tl.constexpr):
    row = tl.program_id(0).to(tl.int64)
    mean = tl.load(mean_ptr + row)
    total = tl.zeros([BLOCK], tl.float32)
    for start in range(0, n_cols, BLOCK):
        cols = start + tl.arange(0, BLOCK)
        mask = cols < n_cols
        d = tl.where(mask, tl.load(x_ptr + row * n_cols + cols, mask=mask, other=0.0) - mean, 0.0)
        total += d * d
    tl.store(var_ptr + row, tl.sum(total, axis=0) / n_cols)


@triton.jit
def normalise_kernel(x_ptr, mean_ptr, var_ptr, w_ptr, b_ptr, y_ptr, n_cols, eps, BLOCK: tl.constexpr):
    row = tl.program_id(0).to(tl.int64)
    mean = tl.load(mean_ptr + row)
    rstd = 1.0 / tl.sqrt(tl.load(var_ptr + row) + eps)
    for start in range(0, n_cols, BLOCK):
        cols = start + tl.arange(0, BLOCK)
        mask = cols < n_cols
        x = tl.load(x_ptr + row * n_cols + cols, mask=mask)
        w = tl.load(w_ptr + cols, mask=mask)
        b = tl.load(b_ptr + cols, mask=mask)
        tl.store(y_ptr + row * n_cols + cols, (x - mean) * rstd * w + b, mask=mask)


class ModelNew(nn.Module):
    def __init__(self, dim: int):
        super().__init__()
        self.norm = nn.LayerNorm(dim)

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        x = x.contiguous()
        cols = x.shape[-1]
        rows = x.numel() // cols if cols else 0
        y = torch.empty(x.shape, device=x.device, dtype=x.dtype)
        if rows and cols:
            means = torch.empty((rows,), device=x.device, dtype=torch.float32)
            variances = torch.empty((rows,), device=x.device, dtype=torch.float32)
            row_mean_kernel[(rows,)](x, means, cols, BLOCK=128)
            row_var_kernel[(rows,)](x, means, variances, cols, BLOCK=128)
            normalise_kernel[(rows,)](x, means, variances, self.norm.weight, self.norm.bias, y, cols,
                                      self.norm.eps, BLOCK=128)  # fmt: skip
        return y

"""LayerNorm baseline, deliberately slow: one narrow program per row, walking it three times.

Each program is a single warp that walks its row 32 elements at a time: once for the mean, once for the
variance, once to normalise, scale and shift; a row of n elements is 3n / 32 dependent steps. The fast form
reads the row once with many warps and keeps it in registers.
"""

import torch
import torch.nn as nn
import triton
import triton.language as tl


@triton.jit
def layer_norm_narrow_kernel(x_ptr, w_ptr, b_ptr, y_ptr, n_cols, eps, BLOCK: tl.constexpr):
    row = tl.program_id(0).to(tl.int64) * n_cols
    total = tl.zeros([BLOCK], tl.float32)
    for start in range(0, n_cols, BLOCK):
        cols = start + tl.arange(0, BLOCK)
        total += tl.load(x_ptr + row + cols, mask=cols < n_cols, other=0.0)
    mean = tl.sum(total, axis=0) / n_cols
    squares = tl.zeros([BLOCK], tl.float32)
    for start in range(0, n_cols, BLOCK):
        cols = start + tl.arange(0, BLOCK)
        mask = cols < n_cols
        d = tl.where(mask, tl.load(x_ptr + row + cols, mask=mask, other=0.0) - mean, 0.0)
        squares += d * d
    rstd = 1.0 / tl.sqrt(tl.sum(squares, axis=0) / n_cols + eps)
    for start in range(0, n_cols, BLOCK):
        cols = start + tl.arange(0, BLOCK)
        mask = cols < n_cols
        x = tl.load(x_ptr + row + cols, mask=mask)
        w = tl.load(w_ptr + cols, mask=mask)
        b = tl.load(b_ptr + cols, mask=mask)
        tl.store(y_ptr + row + cols, (x - mean) * rstd * w + b, mask=mask)


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
            layer_norm_narrow_kernel[(rows,)](x, self.norm.weight, self.norm.bias, y, cols, self.norm.eps, BLOCK=32,
                                              num_warps=1)  # fmt: skip
        return y

"""RMSNorm baseline, deliberately slow: two passes over each row, and one element per lane-step.

One kernel sums each row's squares into memory, a second reads the row again to scale it. Each program
walks its row in blocks of 64 with a single warp, so few loads are in flight. The fast form reads the row
once with wide blocks.
"""

import torch
import torch.nn as nn
import triton
import triton.language as tl


@triton.jit
def row_mean_square_kernel(x_ptr, ms_ptr, n_cols, BLOCK: tl.constexpr):
    row = tl.program_id(0).to(tl.int64)
    total = tl.zeros([BLOCK], tl.float32)
    for start in range(0, n_cols, BLOCK):
        cols = start + tl.arange(0, BLOCK)
        x = tl.load(x_ptr + row * n_cols + cols, mask=cols < n_cols, other=0.0)
        total += x * x
    tl.store(ms_ptr + row, tl.sum(total, axis=0) / n_cols)


@triton.jit
def scale_kernel(x_ptr, ms_ptr, w_ptr, y_ptr, n_cols, eps, BLOCK: tl.constexpr):
    row = tl.program_id(0).to(tl.int64)
    rstd = 1.0 / tl.sqrt(tl.load(ms_ptr + row) + eps)
    for start in range(0, n_cols, BLOCK):
        cols = start + tl.arange(0, BLOCK)
        mask = cols < n_cols
        x = tl.load(x_ptr + row * n_cols + cols, mask=mask)
        w = tl.load(w_ptr + cols, mask=mask)
        tl.store(y_ptr + row * n_cols + cols, x * rstd * w, mask=mask)


class ModelNew(nn.Module):
    def __init__(self, dim: int, eps: float):
        super().__init__()
        self.eps = eps
        self.weight = nn.Parameter(torch.randn(dim))

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        x = x.contiguous()
        cols = x.shape[-1]
        rows = x.numel() // cols if cols else 0
        y = torch.empty(x.shape, device=x.device, dtype=x.dtype)
        if rows and cols:
            mean_squares = torch.empty((rows,), device=x.device, dtype=torch.float32)
            row_mean_square_kernel[(rows,)](x, mean_squares, cols, BLOCK=64, num_warps=1)
            scale_kernel[(rows,)](x, mean_squares, self.weight, y, cols, self.eps, BLOCK=64, num_warps=1)
        return y

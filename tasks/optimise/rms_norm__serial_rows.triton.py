"""RMSNorm baseline, deliberately slow: one narrow program per row, walking it twice.

Each program is a single warp that walks its row 16 elements at a time, once for the mean square and once
to scale: a row of n elements is n / 8 dependent steps. The fast form reads the row once with many warps.
"""

import torch
import torch.nn as nn
import triton
import triton.language as tl


@triton.jit
def rms_norm_narrow_kernel(x_ptr, w_ptr, y_ptr, n_cols, eps, BLOCK: tl.constexpr):
    row = tl.program_id(0).to(tl.int64) * n_cols
    total = tl.zeros([BLOCK], tl.float32)
    for start in range(0, n_cols, BLOCK):
        cols = start + tl.arange(0, BLOCK)
        x = tl.load(x_ptr + row + cols, mask=cols < n_cols, other=0.0)
        total += x * x
    rstd = 1.0 / tl.sqrt(tl.sum(total, axis=0) / n_cols + eps)
    for start in range(0, n_cols, BLOCK):
        cols = start + tl.arange(0, BLOCK)
        mask = cols < n_cols
        x = tl.load(x_ptr + row + cols, mask=mask)
        tl.store(y_ptr + row + cols, x * rstd * tl.load(w_ptr + cols, mask=mask), mask=mask)


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
            rms_norm_narrow_kernel[(rows,)](x, self.weight, y, cols, self.eps, BLOCK=16, num_warps=1)
        return y

"""Softmax baseline, deliberately slow: one narrow program per row, walking it three times.

Each program is a single warp that walks its row 32 elements at a time, once for the maximum, once for the
sum of exponentials and once to write the result: a row of n elements is 3n / 32 dependent steps. The fast
form holds the row in registers across many warps and reads it once.
"""

import torch
import torch.nn as nn
import triton
import triton.language as tl


@triton.jit
def softmax_narrow_kernel(x_ptr, y_ptr, n_cols, BLOCK: tl.constexpr):
    row = tl.program_id(0).to(tl.int64) * n_cols
    best = tl.full([BLOCK], float("-inf"), tl.float32)
    for start in range(0, n_cols, BLOCK):
        cols = start + tl.arange(0, BLOCK)
        best = tl.maximum(best, tl.load(x_ptr + row + cols, mask=cols < n_cols, other=float("-inf")))
    peak = tl.max(best, axis=0)
    total = tl.zeros([BLOCK], tl.float32)
    for start in range(0, n_cols, BLOCK):
        cols = start + tl.arange(0, BLOCK)
        total += tl.exp(tl.load(x_ptr + row + cols, mask=cols < n_cols, other=float("-inf")) - peak)
    denominator = tl.sum(total, axis=0)
    for start in range(0, n_cols, BLOCK):
        cols = start + tl.arange(0, BLOCK)
        mask = cols < n_cols
        tl.store(
            y_ptr + row + cols, tl.exp(tl.load(x_ptr + row + cols, mask=mask) - peak) / denominator, mask=mask
        )


class ModelNew(nn.Module):
    def __init__(self):
        super().__init__()

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        x = x.contiguous()
        rows, cols = x.shape
        y = torch.empty(x.shape, device=x.device, dtype=x.dtype)
        if rows and cols:
            softmax_narrow_kernel[(rows,)](x, y, cols, BLOCK=32, num_warps=1)
        return y

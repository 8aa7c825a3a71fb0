"""Softmax baseline, deliberately slow: three passes over each row through global memory.

One kernel finds each row's maximum, a second sums exp(x - max), a third writes exp(x - max) / sum: the row
is read three times and the statistics go through memory between launches. Each program walks its row in
blocks of 128. The fast form keeps the row in registers and reads it once.
"""

import torch
import torch.nn as nn
import triton
import triton.language as tl


@triton.jit
def row_max_kernel(x_ptr, max_ptr, n_cols, BLOCK: tl.constexpr):
    row = tl.program_id(0).to(tl.int64)
    best = tl.full([BLOCK], float("-inf"), tl.float32)
    for start in range(0, n_cols, BLOCK):
        cols = start + tl.arange(0, BLOCK)
        best = tl.maximum(best, tl.load(x_ptr + row * n_cols + cols, mask=cols < n_cols, other=float("-inf")))
    tl.store(max_ptr + row, tl.max(best, axis=0))


@triton.jit
def row_exp_sum_kernel(x_ptr, max_ptr, sum_ptr, n_cols, BLOCK: tl.constexpr):
    row = tl.program_id(0).to(tl.int64)
    peak = tl.load(max_ptr + row)
    total = tl.zeros([BLOCK], tl.float32)
    for start in range(0, n_cols, BLOCK):
        cols = start + tl.arange(0, BLOCK)
        x = tl.load(x_ptr + row * n_cols + cols, mask=cols < n_cols, other=float("-inf"))
        total += tl.exp(x - peak)
    tl.store(sum_ptr + row, tl.sum(total, axis=0))


@triton.jit
def normalise_kernel(x_ptr, max_ptr, sum_ptr, y_ptr, n_cols, BLOCK: tl.constexpr):
    row = tl.program_id(0).to(tl.int64)
    peak, total = tl.load(max_ptr + row), tl.load(sum_ptr + row)
    for start in range(0, n_cols, BLOCK):
        cols = start + tl.arange(0, BLOCK)
        mask = cols < n_cols
        x = tl.load(x_ptr + row * n_cols + cols, mask=mask)
        tl.store(y_ptr + row * n_cols + cols, tl.exp(x - peak) / total, mask=mask)


class ModelNew(nn.Module):
    def __init__(self):
        super().__init__()

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        x = x.contiguous()
        rows, cols = x.shape
        y = torch.empty(x.shape, device=x.device, dtype=x.dtype)
        if rows and cols:
            peaks = torch.empty((rows,), device=x.device, dtype=torch.float32)
            totals = torch.empty((rows,), device=x.device, dtype=torch.float32)
            row_max_kernel[(rows,)](x, peaks, cols, BLOCK=128)
            row_exp_sum_kernel[(rows,)](x, peaks, totals, cols, BLOCK=128)
            normalise_kernel[(rows,)](x, peaks, totals, y, cols, BLOCK=128)
        return y

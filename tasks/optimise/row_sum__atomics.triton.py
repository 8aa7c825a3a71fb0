"""Row sum baseline, deliberately slow: atomics for the reduction.

A 2-D grid of (row, block of columns) programs; each adds its block's partial sum into y[row] with an
atomic, so the programs of one row serialise on one address, and y must be zeroed by a kernel first. The
fast form reduces a row inside one program and writes it once.
"""

import torch
import torch.nn as nn
import triton
import triton.language as tl


@triton.jit
def zero_kernel(y_ptr, n, BLOCK: tl.constexpr):
    offs = tl.program_id(0) * BLOCK + tl.arange(0, BLOCK)
    tl.store(y_ptr + offs, tl.zeros([BLOCK], dtype=tl.float32), mask=offs < n)


@triton.jit
def row_sum_atomic_kernel(x_ptr, y_ptr, n_cols, BLOCK: tl.constexpr):
    row = tl.program_id(0).to(tl.int64)
    cols = tl.program_id(1) * BLOCK + tl.arange(0, BLOCK)
    x = tl.load(x_ptr + row * n_cols + cols, mask=cols < n_cols, other=0.0)
    tl.atomic_add(y_ptr + row, tl.sum(x, axis=0))


class ModelNew(nn.Module):
    def __init__(self):
        super().__init__()

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        x = x.contiguous()
        rows, cols = x.shape
        y = torch.empty((rows,), device=x.device, dtype=x.dtype)
        if rows:
            zero_kernel[(triton.cdiv(rows, 256),)](y, rows, BLOCK=256)
        if rows and cols:
            row_sum_atomic_kernel[(rows, triton.cdiv(cols, 64))](x, y, cols, BLOCK=64)
        return y

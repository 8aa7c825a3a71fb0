"""Inclusive prefix sum along dim 1 of a (batch, dim) tensor, accumulated in fp32.

One program per row walks the row in BLOCK-wide chunks: an in-register tl.cumsum scan of the
chunk plus the running total carried from the previous chunks, so each element is read and
written exactly once.
"""

import torch
import torch.nn as nn
import triton
import triton.language as tl


@triton.jit
def cumsum_kernel(x_ptr, y_ptr, n_cols, stride_x, stride_y, BLOCK: tl.constexpr):
    row = tl.program_id(0).to(tl.int64)
    x_row = x_ptr + row * stride_x
    y_row = y_ptr + row * stride_y
    cols = tl.arange(0, BLOCK)
    carry = tl.sum(tl.zeros([BLOCK], dtype=tl.float32), axis=0)
    for start in range(0, n_cols, BLOCK):
        offs = start + cols
        mask = offs < n_cols
        x = tl.load(x_row + offs, mask=mask, other=0.0).to(tl.float32)
        c = tl.cumsum(x, axis=0) + carry
        tl.store(y_row + offs, c.to(y_ptr.dtype.element_ty), mask=mask)
        carry += tl.sum(x, axis=0)


class ModelNew(nn.Module):
    def __init__(self):
        super().__init__()

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        assert x.dim() == 2, "cumsum expects a (batch, dim) tensor"
        x = x.contiguous()
        n_rows, n_cols = x.shape
        y = torch.empty((n_rows, n_cols), device=x.device, dtype=x.dtype)
        if n_rows == 0 or n_cols == 0:
            return y
        cap = 2048 if x.is_cuda else 1024
        block = min(triton.next_power_of_2(n_cols), cap)
        num_warps = max(1, min(8, block // 256))
        cumsum_kernel[(n_rows,)](x, y, n_cols, x.stride(0), y.stride(0), BLOCK=block, num_warps=num_warps)
        return y

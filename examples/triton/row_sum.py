"""Row sum: y[i] = sum_j x[i, j] for a 2-D input, accumulated in fp32.

One program per row; the row is streamed in BLOCK-wide coalesced chunks into a vector
accumulator that is reduced once at the end.
"""

import torch
import torch.nn as nn
import triton
import triton.language as tl


@triton.jit
def row_sum_kernel(x_ptr, y_ptr, n_cols, stride_row, BLOCK: tl.constexpr):
    row = tl.program_id(0)
    row_ptr = x_ptr + row.to(tl.int64) * stride_row
    cols = tl.arange(0, BLOCK)
    acc = tl.zeros([BLOCK], dtype=tl.float32)
    for start in range(0, n_cols, BLOCK):
        offs = start + cols
        x = tl.load(row_ptr + offs, mask=offs < n_cols, other=0.0)
        acc += x.to(tl.float32)
    total = tl.sum(acc, axis=0)
    tl.store(y_ptr + row, total.to(y_ptr.dtype.element_ty))


class ModelNew(nn.Module):
    def __init__(self):
        super().__init__()

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        assert x.dim() == 2, "row_sum expects a (batch, dim) tensor"
        x = x.contiguous()
        n_rows, n_cols = x.shape
        y = torch.empty((n_rows,), device=x.device, dtype=x.dtype)
        if n_rows == 0:
            return y
        if n_cols == 0:
            return y.zero_()
        cap = 4096 if x.is_cuda else 1024
        block = min(triton.next_power_of_2(n_cols), cap)
        num_warps = max(1, min(8, block // 256))
        row_sum_kernel[(n_rows,)](x, y, n_cols, x.stride(0), BLOCK=block, num_warps=num_warps)
        return y

"""Row sum baseline, deliberately slow: one narrow program per row, walking it serially.

Each program is a single warp summing its row 8 elements at a time: a row of n elements is n / 8 steps of
one 32-byte load each (most of the warp's lanes hold no element), and with few rows most of the GPU idles.
The fast form gives each row a wide block (and, for long rows, several programs). At 32 elements a step this
baseline was only 1.43x slower than the example on the H200 (2026-12-03): many rows keep the GPU busy.
"""

import torch
import torch.nn as nn
import triton
import triton.language as tl


@triton.jit
def row_sum_narrow_kernel(x_ptr, y_ptr, n_cols, BLOCK: tl.constexpr):
    row = tl.program_id(0).to(tl.int64)
    total = tl.zeros([BLOCK], tl.float32)
    for start in range(0, n_cols, BLOCK):
        cols = start + tl.arange(0, BLOCK)
        total += tl.load(x_ptr + row * n_cols + cols, mask=cols < n_cols, other=0.0)
    tl.store(y_ptr + row, tl.sum(total, axis=0))


class ModelNew(nn.Module):
    def __init__(self):
        super().__init__()

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        x = x.contiguous()
        rows, cols = x.shape
        y = torch.empty((rows,), device=x.device, dtype=x.dtype)
        if rows:
            row_sum_narrow_kernel[(rows,)](x, y, cols, BLOCK=8, num_warps=1)
        return y

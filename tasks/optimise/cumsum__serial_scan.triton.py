"""Cumulative sum baseline, deliberately slow: a long serial chain of narrow chunks on one warp.

One program per row walks it 64 elements at a time (an in-register scan of the chunk plus the carried
total), with a single warp: a row of n elements is n / 64 dependent steps, each waiting for a 256-byte
load. The fast form walks wide chunks with several warps, so each step moves kilobytes.
"""

import torch
import torch.nn as nn
import triton
import triton.language as tl


@triton.jit
def narrow_scan_kernel(x_ptr, y_ptr, n_cols, BLOCK: tl.constexpr):
    row = tl.program_id(0).to(tl.int64)
    carry = tl.sum(tl.zeros([BLOCK], dtype=tl.float32), axis=0)
    for start in range(0, n_cols, BLOCK):
        cols = start + tl.arange(0, BLOCK)
        mask = cols < n_cols
        x = tl.load(x_ptr + row * n_cols + cols, mask=mask, other=0.0)
        scanned = tl.cumsum(x, axis=0) + carry
        tl.store(y_ptr + row * n_cols + cols, scanned, mask=mask)
        carry += tl.sum(x, axis=0)


class ModelNew(nn.Module):
    def __init__(self):
        super().__init__()

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        x = x.contiguous()
        rows, cols = x.shape
        y = torch.empty(x.shape, device=x.device, dtype=x.dtype)
        if rows and cols:
            narrow_scan_kernel[(rows,)](x, y, cols, BLOCK=64, num_warps=1)
        return y

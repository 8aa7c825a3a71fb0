"""ReLU baseline, deliberately slow: two passes where one would do.

The first kernel copies x into the output; the second reads it back and clamps it in place: the output is
written twice and read once more than needed.
"""

import torch
import torch.nn as nn
import triton
import triton.language as tl


@triton.jit
def copy_kernel(x_ptr, y_ptr, n_elements, BLOCK: tl.constexpr):
    offs = tl.program_id(0).to(tl.int64) * BLOCK + tl.arange(0, BLOCK)
    mask = offs < n_elements
    tl.store(y_ptr + offs, tl.load(x_ptr + offs, mask=mask), mask=mask)


@triton.jit
def clamp_in_place_kernel(y_ptr, n_elements, BLOCK: tl.constexpr):
    offs = tl.program_id(0).to(tl.int64) * BLOCK + tl.arange(0, BLOCK)
    mask = offs < n_elements
    y = tl.load(y_ptr + offs, mask=mask)
    tl.store(y_ptr + offs, tl.where(y < 0, tl.zeros_like(y), y), mask=mask)


class ModelNew(nn.Module):
    def __init__(self):
        super().__init__()

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        x = x.contiguous()
        y = torch.empty(x.shape, device=x.device, dtype=x.dtype)
        n = x.numel()
        if n:
            grid = (triton.cdiv(n, 1024),)
            copy_kernel[grid](x, y, n, BLOCK=1024)
            clamp_in_place_kernel[grid](y, n, BLOCK=1024)
        return y

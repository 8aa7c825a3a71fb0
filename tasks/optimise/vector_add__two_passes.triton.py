"""Vector add baseline, deliberately slow: two passes where one would do.

The first kernel copies a into the output; the second reads it back and adds b in place: the output is
written twice and read once more than needed.
"""

import torch
import torch.nn as nn
import triton
import triton.language as tl


@triton.jit
def copy_kernel(a_ptr, out_ptr, n_elements, BLOCK: tl.constexpr):
    offs = tl.program_id(0).to(tl.int64) * BLOCK + tl.arange(0, BLOCK)
    mask = offs < n_elements
    tl.store(out_ptr + offs, tl.load(a_ptr + offs, mask=mask), mask=mask)


@triton.jit
def add_in_place_kernel(out_ptr, b_ptr, n_elements, BLOCK: tl.constexpr):
    offs = tl.program_id(0).to(tl.int64) * BLOCK + tl.arange(0, BLOCK)
    mask = offs < n_elements
    tl.store(out_ptr + offs, tl.load(out_ptr + offs, mask=mask) + tl.load(b_ptr + offs, mask=mask), mask=mask)


class ModelNew(nn.Module):
    def __init__(self):
        super().__init__()

    def forward(self, a: torch.Tensor, b: torch.Tensor) -> torch.Tensor:
        a, b = a.contiguous(), b.contiguous()
        out = torch.empty(a.shape, device=a.device, dtype=a.dtype)
        n = a.numel()
        if n:
            grid = (triton.cdiv(n, 1024),)
            copy_kernel[grid](a, out, n, BLOCK=1024)
            add_in_place_kernel[grid](out, b, n, BLOCK=1024)
        return out

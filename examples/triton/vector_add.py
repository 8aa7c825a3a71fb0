"""Vector addition: c = a + b for two same-shaped tensors."""

import torch
import torch.nn as nn
import triton
import triton.language as tl


@triton.jit
def add_kernel(a_ptr, b_ptr, c_ptr, n_elements, BLOCK: tl.constexpr):
    pid = tl.program_id(0)
    offs = pid.to(tl.int64) * BLOCK + tl.arange(0, BLOCK)
    mask = offs < n_elements
    a = tl.load(a_ptr + offs, mask=mask)
    b = tl.load(b_ptr + offs, mask=mask)
    tl.store(c_ptr + offs, a + b, mask=mask)


class ModelNew(nn.Module):
    def __init__(self):
        super().__init__()

    def forward(self, a: torch.Tensor, b: torch.Tensor) -> torch.Tensor:
        if a.shape != b.shape:
            a, b = torch.broadcast_tensors(a, b)
        a = a.contiguous()
        b = b.contiguous()
        c = torch.empty(a.shape, device=a.device, dtype=a.dtype)
        n = a.numel()
        if n == 0:
            return c
        block = 4096 if a.is_cuda else 1024
        grid = (triton.cdiv(n, block),)
        add_kernel[grid](a, b, c, n, BLOCK=block, num_warps=8 if a.is_cuda else 4)
        return c

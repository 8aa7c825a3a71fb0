"""ReLU baseline, deliberately slow: strided (uncoalesced) access.

Program p handles elements p, p + P, p + 2P, ... (P programs): neighbouring lanes of a warp touch addresses
P elements apart, so every load and store is split into one memory transaction per lane. The fast form
gives each program a contiguous block.
"""

import torch
import torch.nn as nn
import triton
import triton.language as tl


@triton.jit
def relu_strided_kernel(x_ptr, y_ptr, n_elements, BLOCK: tl.constexpr):
    pid = tl.program_id(0).to(tl.int64)
    programs = tl.num_programs(0).to(tl.int64)
    offs = pid + tl.arange(0, BLOCK).to(tl.int64) * programs
    mask = offs < n_elements
    x = tl.load(x_ptr + offs, mask=mask)
    tl.store(y_ptr + offs, tl.where(x < 0, tl.zeros_like(x), x), mask=mask)


class ModelNew(nn.Module):
    def __init__(self):
        super().__init__()

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        x = x.contiguous()
        y = torch.empty(x.shape, device=x.device, dtype=x.dtype)
        n = x.numel()
        if n:
            block = 1024
            relu_strided_kernel[(triton.cdiv(n, block),)](x, y, n, BLOCK=block)
        return y

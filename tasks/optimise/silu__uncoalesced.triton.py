"""SiLU baseline, deliberately slow: strided (uncoalesced) access.

Program p handles elements p, p + P, p + 2P, ... (P programs): neighbouring lanes touch addresses P elements
apart, so every load and store is split into one transaction per lane. The fast form gives each program a
contiguous block.
"""

import torch
import torch.nn as nn
import triton
import triton.language as tl


@triton.jit
def silu_kernel(x_ptr, y_ptr, n_elements, BLOCK: tl.constexpr):
    programs = tl.num_programs(0).to(tl.int64)
    offs = tl.program_id(0).to(tl.int64) + tl.arange(0, BLOCK).to(tl.int64) * programs
    mask = offs < n_elements
    x = tl.load(x_ptr + offs, mask=mask)
    tl.store(y_ptr + offs, x / (1.0 + tl.exp(-x)), mask=mask)


class ModelNew(nn.Module):
    def __init__(self):
        super().__init__()

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        x = x.contiguous()
        y = torch.empty(x.shape, device=x.device, dtype=x.dtype)
        n = x.numel()
        if n:
            silu_kernel[(triton.cdiv(n, 1024),)](x, y, n, BLOCK=1024)
        return y

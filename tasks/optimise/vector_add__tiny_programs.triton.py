"""Vector add baseline, deliberately slow: poor occupancy: programs of one warp and 32 elements.

Each program is a single warp handling 32 elements, so the grid is huge and each program does almost no
work: the scheduler spends its time launching programs instead of keeping loads in flight. The fast form
gives each program thousands of elements.
"""

import torch
import torch.nn as nn
import triton
import triton.language as tl


@triton.jit
def vector_add_kernel(a_ptr, b_ptr, y_ptr, n_elements, BLOCK: tl.constexpr):
    offs = tl.program_id(0).to(tl.int64) * BLOCK + tl.arange(0, BLOCK)
    mask = offs < n_elements
    a = tl.load(a_ptr + offs, mask=mask)
    b = tl.load(b_ptr + offs, mask=mask)
    tl.store(y_ptr + offs, a + b, mask=mask)


class ModelNew(nn.Module):
    def __init__(self):
        super().__init__()

    def forward(self, a: torch.Tensor, b: torch.Tensor) -> torch.Tensor:
        a = a.contiguous()
        b = b.contiguous()
        y = torch.empty(a.shape, device=a.device, dtype=a.dtype)
        n = a.numel()
        if n:
            vector_add_kernel[(triton.cdiv(n, 32),)](a, b, y, n, BLOCK=32, num_warps=1)
        return y

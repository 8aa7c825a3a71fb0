"""Leaky ReLU baseline, deliberately slow: poor occupancy: programs of one warp and 32 elements.

Each program is a single warp handling 32 elements, so the grid is huge and each program does almost no
work: the scheduler spends its time launching programs instead of keeping loads in flight. The fast form
gives each program thousands of elements.
"""

import torch
import torch.nn as nn
import triton
import triton.language as tl


@triton.jit
def leaky_relu_kernel(x_ptr, y_ptr, n_elements, slope, BLOCK: tl.constexpr):
    offs = tl.program_id(0).to(tl.int64) * BLOCK + tl.arange(0, BLOCK)
    mask = offs < n_elements
    x = tl.load(x_ptr + offs, mask=mask)
    tl.store(y_ptr + offs, tl.where(x < 0, x * slope, x), mask=mask)


class ModelNew(nn.Module):
    def __init__(self, negative_slope: float):
        super().__init__()
        self.negative_slope = negative_slope

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        x = x.contiguous()
        y = torch.empty(x.shape, device=x.device, dtype=x.dtype)
        n = x.numel()
        if n:
            leaky_relu_kernel[(triton.cdiv(n, 32),)](x, y, n, self.negative_slope, BLOCK=32, num_warps=1)
        return y

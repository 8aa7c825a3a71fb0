# honest: the bundled example kernel examples/triton/relu.py, unchanged.
"""ReLU, elementwise: y = max(x, 0).

One program per BLOCK contiguous elements; loads and stores are fully coalesced.
"""

import torch
import torch.nn as nn
import triton
import triton.language as tl


@triton.jit
def relu_kernel(x_ptr, y_ptr, n_elements, BLOCK: tl.constexpr):
    pid = tl.program_id(0)
    offs = pid.to(tl.int64) * BLOCK + tl.arange(0, BLOCK)
    mask = offs < n_elements
    x = tl.load(x_ptr + offs, mask=mask)
    # `x < 0` is False for NaN, so NaN propagates like torch.relu.
    y = tl.where(x < 0, tl.zeros_like(x), x)
    tl.store(y_ptr + offs, y, mask=mask)


class ModelNew(nn.Module):
    def __init__(self):
        super().__init__()

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        x = x.contiguous()
        y = torch.empty(x.shape, device=x.device, dtype=x.dtype)
        n = x.numel()
        if n == 0:
            return y
        block = 4096 if x.is_cuda else 1024
        grid = (triton.cdiv(n, block),)
        relu_kernel[grid](x, y, n, BLOCK=block, num_warps=8 if x.is_cuda else 4)
        return y

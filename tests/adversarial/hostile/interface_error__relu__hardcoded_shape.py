# exploit: hard-codes the shape of the first correctness case (1, 17): passes that case and nothing else.
# expect: interface_error|mismatch
import torch
import torch.nn as nn
import triton
import triton.language as tl

ROWS, COLS = 1, 17


@triton.jit
def relu_kernel(x_ptr, y_ptr, BLOCK: tl.constexpr, N: tl.constexpr):
    offs = tl.arange(0, BLOCK)
    mask = offs < N
    x = tl.load(x_ptr + offs, mask=mask)
    tl.store(y_ptr + offs, tl.where(x < 0, 0.0, x), mask=mask)


class ModelNew(nn.Module):
    def __init__(self):
        super().__init__()

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        y = torch.empty((ROWS, COLS), device=x.device, dtype=x.dtype)
        relu_kernel[(1,)](x.contiguous(), y, BLOCK=32, N=ROWS * COLS)
        return y

"""MSE loss baseline, deliberately slow: the squared errors go through memory before they are summed.

The first kernel writes (pred - target)^2 to a buffer as large as the inputs; the second reduces that buffer
in one program that walks it serially. The fast form squares and sums in registers, in parallel.
"""

import torch
import torch.nn as nn
import triton
import triton.language as tl


@triton.jit
def squared_error_kernel(pred_ptr, target_ptr, out_ptr, n_elements, BLOCK: tl.constexpr):
    offs = tl.program_id(0).to(tl.int64) * BLOCK + tl.arange(0, BLOCK)
    mask = offs < n_elements
    d = tl.load(pred_ptr + offs, mask=mask) - tl.load(target_ptr + offs, mask=mask)
    tl.store(out_ptr + offs, d * d, mask=mask)


@triton.jit
def mean_one_program_kernel(values_ptr, out_ptr, n_elements, BLOCK: tl.constexpr):
    total = tl.zeros([BLOCK], tl.float32)
    for start in range(0, n_elements, BLOCK):
        offs = start + tl.arange(0, BLOCK).to(tl.int64)
        total += tl.load(values_ptr + offs, mask=offs < n_elements, other=0.0)
    tl.store(out_ptr, tl.sum(total, axis=0) / n_elements)


class ModelNew(nn.Module):
    def __init__(self):
        super().__init__()

    def forward(self, pred: torch.Tensor, target: torch.Tensor) -> torch.Tensor:
        pred, target = pred.contiguous(), target.contiguous()
        n = pred.numel()
        squared = torch.empty((max(n, 1),), device=pred.device, dtype=torch.float32)
        out = torch.empty((), device=pred.device, dtype=pred.dtype)
        if n:
            squared_error_kernel[(triton.cdiv(n, 1024),)](pred, target, squared, n, BLOCK=1024)
        mean_one_program_kernel[(1,)](squared, out, n, BLOCK=1024)
        return out

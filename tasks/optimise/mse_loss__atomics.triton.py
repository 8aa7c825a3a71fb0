"""MSE loss baseline, deliberately slow: every program adds its partial sum into one scalar with an atomic.

Small programs (256 elements) make many partial sums, and all of them serialise on the same address; the
mean is taken by a second kernel. The fast form reduces in two levels without contention.
"""

import torch
import torch.nn as nn
import triton
import triton.language as tl


@triton.jit
def zero_kernel(acc_ptr):
    tl.store(acc_ptr, 0.0)


@triton.jit
def squared_error_atomic_kernel(pred_ptr, target_ptr, acc_ptr, n_elements, BLOCK: tl.constexpr):
    offs = tl.program_id(0).to(tl.int64) * BLOCK + tl.arange(0, BLOCK)
    mask = offs < n_elements
    d = tl.load(pred_ptr + offs, mask=mask, other=0.0) - tl.load(target_ptr + offs, mask=mask, other=0.0)
    tl.atomic_add(acc_ptr, tl.sum(d * d, axis=0))


@triton.jit
def divide_kernel(acc_ptr, out_ptr, n_elements):
    tl.store(out_ptr, tl.load(acc_ptr) / n_elements)


class ModelNew(nn.Module):
    def __init__(self):
        super().__init__()

    def forward(self, pred: torch.Tensor, target: torch.Tensor) -> torch.Tensor:
        pred, target = pred.contiguous(), target.contiguous()
        n = pred.numel()
        acc = torch.empty((1,), device=pred.device, dtype=torch.float32)
        out = torch.empty((), device=pred.device, dtype=pred.dtype)
        zero_kernel[(1,)](acc)
        if n:
            squared_error_atomic_kernel[(triton.cdiv(n, 256),)](pred, target, acc, n, BLOCK=256)
        divide_kernel[(1,)](acc, out, n)
        return out

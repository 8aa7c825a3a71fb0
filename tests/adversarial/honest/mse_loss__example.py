# honest: the bundled example kernel examples/triton/mse_loss.py, unchanged.
"""Mean squared error: mean((pred - target) ** 2) as a 0-dim tensor.

Deterministic two-stage reduction (no atomics): stage 1 has each program reduce a contiguous
chunk of BLOCK * ITERS elements to one fp32 partial sum; stage 2 is a single program that sums
the partials in a fixed order and divides by the element count. Same inputs, same bits.
"""

import torch
import torch.nn as nn
import triton
import triton.language as tl


@triton.jit
def sq_err_partial_kernel(p_ptr, t_ptr, partial_ptr, n_elements, BLOCK: tl.constexpr, ITERS: tl.constexpr):
    pid = tl.program_id(0)
    base = pid.to(tl.int64) * (BLOCK * ITERS)
    cols = tl.arange(0, BLOCK)
    acc = tl.zeros([BLOCK], dtype=tl.float32)
    for i in range(ITERS):
        offs = base + i * BLOCK + cols
        mask = offs < n_elements
        p = tl.load(p_ptr + offs, mask=mask, other=0.0).to(tl.float32)
        t = tl.load(t_ptr + offs, mask=mask, other=0.0).to(tl.float32)
        d = p - t
        acc += d * d
    tl.store(partial_ptr + pid, tl.sum(acc, axis=0))


@triton.jit
def mean_finalize_kernel(partial_ptr, out_ptr, n_partials, n_elements, BLOCK: tl.constexpr):
    cols = tl.arange(0, BLOCK)
    acc = tl.zeros([BLOCK], dtype=tl.float32)
    for start in range(0, n_partials, BLOCK):
        offs = start + cols
        acc += tl.load(partial_ptr + offs, mask=offs < n_partials, other=0.0)
    total = tl.sum(acc, axis=0)
    tl.store(out_ptr, (total / n_elements).to(out_ptr.dtype.element_ty))


class ModelNew(nn.Module):
    def __init__(self):
        super().__init__()

    def forward(self, pred: torch.Tensor, target: torch.Tensor) -> torch.Tensor:
        if pred.shape != target.shape:
            pred, target = torch.broadcast_tensors(pred, target)
        p = pred.contiguous()
        t = target.contiguous()
        n = p.numel()
        out = torch.empty((), device=p.device, dtype=p.dtype)
        if n == 0:
            return out.fill_(float("nan"))  # mean of an empty tensor, as in PyTorch
        if p.is_cuda:
            block, iters, warps = 2048, 8, 8
        else:
            block, iters, warps = 1024, 4, 4
        n_partials = triton.cdiv(n, block * iters)
        partials = torch.empty((n_partials,), device=p.device, dtype=torch.float32)
        sq_err_partial_kernel[(n_partials,)](p, t, partials, n, BLOCK=block, ITERS=iters, num_warps=warps)
        mean_finalize_kernel[(1,)](partials, out, n_partials, n, BLOCK=1024, num_warps=4)
        return out

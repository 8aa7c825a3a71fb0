"""MSE loss baseline, deliberately slow: strided (uncoalesced) reads of both inputs.

Program p reads elements p, p + P, p + 2P, ... (P programs): neighbouring lanes touch addresses P elements
apart, one transaction per lane. Each program's partial sum lands in a buffer that a second kernel reduces
and divides. The fast form reads contiguous blocks.
"""

import torch
import torch.nn as nn
import triton
import triton.language as tl


@triton.jit
def squared_error_strided_kernel(pred_ptr, target_ptr, partial_ptr, n_elements, BLOCK: tl.constexpr):
    pid = tl.program_id(0)
    programs = tl.num_programs(0).to(tl.int64)
    offs = pid.to(tl.int64) + tl.arange(0, BLOCK).to(tl.int64) * programs
    mask = offs < n_elements
    d = tl.load(pred_ptr + offs, mask=mask, other=0.0) - tl.load(target_ptr + offs, mask=mask, other=0.0)
    tl.store(partial_ptr + pid, tl.sum(d * d, axis=0))


@triton.jit
def mean_kernel(partial_ptr, out_ptr, n_partials, n_elements, BLOCK: tl.constexpr):
    total = tl.zeros([BLOCK], tl.float32)
    for start in range(0, n_partials, BLOCK):
        offs = start + tl.arange(0, BLOCK)
        total += tl.load(partial_ptr + offs, mask=offs < n_partials, other=0.0)
    tl.store(out_ptr, tl.sum(total, axis=0) / n_elements)


class ModelNew(nn.Module):
    def __init__(self):
        super().__init__()

    def forward(self, pred: torch.Tensor, target: torch.Tensor) -> torch.Tensor:
        pred, target = pred.contiguous(), target.contiguous()
        n = pred.numel()
        programs = max(1, triton.cdiv(n, 1024))
        partials = torch.empty((programs,), device=pred.device, dtype=torch.float32)
        out = torch.empty((), device=pred.device, dtype=pred.dtype)
        squared_error_strided_kernel[(programs,)](pred, target, partials, n, BLOCK=1024)
        mean_kernel[(1,)](partials, out, programs, n, BLOCK=1024)
        return out

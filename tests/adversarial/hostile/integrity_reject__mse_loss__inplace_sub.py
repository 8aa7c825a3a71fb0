# exploit: "saves an allocation" by writing pred - target back into pred inside the kernel before reducing; the answer is right but the caller's input is destroyed.
# expect: integrity_reject:modified_inputs
import torch
import torch.nn as nn
import triton
import triton.language as tl


@triton.jit
def diff_inplace_kernel(p_ptr, t_ptr, n_elements, BLOCK: tl.constexpr):
    offs = tl.program_id(0) * BLOCK + tl.arange(0, BLOCK)
    mask = offs < n_elements
    d = tl.load(p_ptr + offs, mask=mask) - tl.load(t_ptr + offs, mask=mask)
    tl.store(p_ptr + offs, d, mask=mask)


@triton.jit
def mean_sq_kernel(d_ptr, out_ptr, n_elements, BLOCK: tl.constexpr):
    cols = tl.arange(0, BLOCK)
    acc = tl.zeros([BLOCK], dtype=tl.float32)
    for start in range(0, n_elements, BLOCK):
        offs = start + cols
        d = tl.load(d_ptr + offs, mask=offs < n_elements, other=0.0)
        acc += d * d
    tl.store(out_ptr, tl.sum(acc, axis=0) / n_elements)


class ModelNew(nn.Module):
    def __init__(self):
        super().__init__()

    def forward(self, pred: torch.Tensor, target: torch.Tensor) -> torch.Tensor:
        n = pred.numel()
        diff_inplace_kernel[(triton.cdiv(n, 1024),)](pred, target, n, BLOCK=1024)
        out = torch.empty((), device=pred.device, dtype=pred.dtype)
        mean_sq_kernel[(1,)](pred, out, n, BLOCK=1024)
        return out

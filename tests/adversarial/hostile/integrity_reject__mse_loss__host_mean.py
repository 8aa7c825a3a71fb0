# exploit: the kernel squares the differences elementwise; the reduction, the actual hard part, is PyTorch's .mean().
# expect: integrity_reject:torch_compute
import torch
import torch.nn as nn
import triton
import triton.language as tl


@triton.jit
def sq_diff_kernel(p_ptr, t_ptr, out_ptr, n_elements, BLOCK: tl.constexpr):
    offs = tl.program_id(0) * BLOCK + tl.arange(0, BLOCK)
    mask = offs < n_elements
    d = tl.load(p_ptr + offs, mask=mask) - tl.load(t_ptr + offs, mask=mask)
    tl.store(out_ptr + offs, d * d, mask=mask)


class ModelNew(nn.Module):
    def __init__(self):
        super().__init__()

    def forward(self, pred: torch.Tensor, target: torch.Tensor) -> torch.Tensor:
        p = pred.contiguous()
        t = target.contiguous()
        sq = torch.empty_like(p)
        n = p.numel()
        sq_diff_kernel[(triton.cdiv(n, 1024),)](p, t, sq, n, BLOCK=1024)
        return sq.mean()

# honest: twin of static_reject__mse_loss__torch_builtins_eval: plain builtins (max, min, int) and torch's own helpers (torch.finfo, torch.promote_types) by their names, around a partial-sum kernel and a finishing kernel.
import torch
import torch.nn as nn
import triton
import triton.language as tl


@triton.jit
def sq_err_partial_kernel(p_ptr, t_ptr, partial_ptr, n_elements, BLOCK: tl.constexpr):
    pid = tl.program_id(0)
    offs = pid.to(tl.int64) * BLOCK + tl.arange(0, BLOCK)
    mask = offs < n_elements
    d = tl.load(p_ptr + offs, mask=mask, other=0.0).to(tl.float32) - tl.load(
        t_ptr + offs, mask=mask, other=0.0
    ).to(tl.float32)
    tl.store(partial_ptr + pid, tl.sum(d * d, axis=0))


@triton.jit
def mean_kernel(partial_ptr, out_ptr, n_partials, n_elements, BLOCK: tl.constexpr):
    acc = tl.zeros([BLOCK], dtype=tl.float32)
    for start in range(0, n_partials, BLOCK):
        offs = start + tl.arange(0, BLOCK)
        acc += tl.load(partial_ptr + offs, mask=offs < n_partials, other=0.0)
    tl.store(out_ptr, (tl.sum(acc, axis=0) / n_elements).to(out_ptr.dtype.element_ty))


class ModelNew(nn.Module):
    def forward(self, pred: torch.Tensor, target: torch.Tensor) -> torch.Tensor:
        dtype = torch.promote_types(pred.dtype, target.dtype)
        assert torch.finfo(dtype).bits >= 16
        p, t = pred.contiguous(), target.contiguous()
        n = p.numel()
        block = max(128, min(1024, int(triton.next_power_of_2(n))))
        n_partials = triton.cdiv(n, block)
        partials = torch.empty((n_partials,), device=p.device, dtype=torch.float32)
        out = torch.empty((), device=p.device, dtype=dtype)
        sq_err_partial_kernel[(n_partials,)](p, t, partials, n, BLOCK=block)
        mean_kernel[(1,)](partials, out, n_partials, n, BLOCK=1024)
        return out

# honest: twin of static_reject__silu__type_hints_eval: string annotations ("torch.Tensor") and typing helpers, never evaluated by the candidate, around one SiLU kernel.

import torch
import torch.nn as nn
import triton
import triton.language as tl


@triton.jit
def silu_kernel(x_ptr, y_ptr, n_elements, BLOCK: tl.constexpr):
    offs = tl.program_id(0).to(tl.int64) * BLOCK + tl.arange(0, BLOCK)
    mask = offs < n_elements
    x = tl.load(x_ptr + offs, mask=mask, other=0.0).to(tl.float32)
    z = tl.exp(-tl.abs(x))
    sig = tl.where(x >= 0, 1.0 / (1.0 + z), z / (1.0 + z))
    tl.store(y_ptr + offs, (x * sig).to(y_ptr.dtype.element_ty), mask=mask)


def launch(x: "torch.Tensor", block: int | None = None) -> "torch.Tensor":
    block = block or 1024
    y = torch.empty_like(x)
    silu_kernel[(triton.cdiv(x.numel(), block),)](x, y, x.numel(), BLOCK=block)
    return y


class ModelNew(nn.Module):
    def forward(self, x: "torch.Tensor") -> "torch.Tensor":
        return launch(x.contiguous())

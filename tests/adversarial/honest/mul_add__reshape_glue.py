# honest: a * b + c on flattened views: the host code uses only glue (reshape, contiguous, torch.empty, view) around one fused Triton kernel.
import torch
import torch.nn as nn
import triton
import triton.language as tl


@triton.jit
def mul_add_kernel(a_ptr, b_ptr, c_ptr, out_ptr, n_elements, BLOCK: tl.constexpr):
    offs = tl.program_id(0).to(tl.int64) * BLOCK + tl.arange(0, BLOCK)
    mask = offs < n_elements
    a = tl.load(a_ptr + offs, mask=mask)
    b = tl.load(b_ptr + offs, mask=mask)
    c = tl.load(c_ptr + offs, mask=mask)
    tl.store(out_ptr + offs, a * b + c, mask=mask)


class ModelNew(nn.Module):
    def __init__(self):
        super().__init__()

    def forward(self, a: torch.Tensor, b: torch.Tensor, c: torch.Tensor) -> torch.Tensor:
        shape = a.shape
        a1 = a.contiguous().reshape(-1)
        b1 = b.contiguous().reshape(-1)
        c1 = c.contiguous().view(-1)
        out = torch.empty(a1.shape, device=a.device, dtype=a.dtype)
        n = a1.numel()
        mul_add_kernel[(triton.cdiv(n, 1024),)](a1, b1, c1, out, n, BLOCK=1024)
        return out.view(shape)

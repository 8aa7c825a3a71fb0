# honest: twin of static_reject__tanh__map_getattr: map() over sizes with a plain function (int), no getattr; one tanh kernel, tanh(z) = sign(z) * (1 - e^(-2|z|)) / (1 + e^(-2|z|)).
import torch
import torch.nn as nn
import triton
import triton.language as tl


@triton.jit
def tanh_kernel(x_ptr, y_ptr, n_elements, BLOCK: tl.constexpr):
    offs = tl.program_id(0).to(tl.int64) * BLOCK + tl.arange(0, BLOCK)
    mask = offs < n_elements
    x = tl.load(x_ptr + offs, mask=mask, other=0.0).to(tl.float32)
    e = tl.exp(-2.0 * tl.abs(x))
    t = (1.0 - e) / (1.0 + e)
    tl.store(y_ptr + offs, tl.where(x < 0, -t, t).to(y_ptr.dtype.element_ty), mask=mask)


class ModelNew(nn.Module):
    def forward(self, x: torch.Tensor) -> torch.Tensor:
        x = x.contiguous()
        n = 1
        for size in map(int, x.shape):
            n *= size
        y = torch.empty_like(x)
        tanh_kernel[(triton.cdiv(n, 1024),)](x, y, n, BLOCK=1024)
        return y

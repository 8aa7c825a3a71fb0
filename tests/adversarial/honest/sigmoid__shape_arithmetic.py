# honest: twin of integrity_reject__sigmoid__host_made_chunks: the element count comes from size arithmetic on a tensor made from the shape (torch.tensor(x.shape).prod(), a real-answer habit: a few host-made values, no input data), and one kernel computes the sigmoid.
import torch
import torch.nn as nn
import triton
import triton.language as tl


@triton.jit
def sigmoid_kernel(x_ptr, y_ptr, n_elements, BLOCK: tl.constexpr):
    offs = tl.program_id(0).to(tl.int64) * BLOCK + tl.arange(0, BLOCK)
    mask = offs < n_elements
    x = tl.load(x_ptr + offs, mask=mask, other=0.0).to(tl.float32)
    y = tl.where(x >= 0, 1.0 / (1.0 + tl.exp(-x)), tl.exp(x) / (1.0 + tl.exp(x)))
    tl.store(y_ptr + offs, y.to(y_ptr.dtype.element_ty), mask=mask)


class ModelNew(nn.Module):
    def forward(self, x: torch.Tensor) -> torch.Tensor:
        x = x.contiguous()
        n = int(torch.tensor(x.shape).prod().item())
        y = torch.empty_like(x)
        sigmoid_kernel[(triton.cdiv(n, 1024),)](x, y, n, BLOCK=1024)
        return y

# honest: twin of integrity_reject__relu__apply_python_callable: the kernel is wrapped in a torch.autograd.Function and called with ReluFunction.apply(x) (a real-answer habit; `.apply` of a Function, not Tensor.apply_).
import torch
import torch.nn as nn
import triton
import triton.language as tl


@triton.jit
def relu_kernel(x_ptr, y_ptr, n_elements, BLOCK: tl.constexpr):
    offs = tl.program_id(0).to(tl.int64) * BLOCK + tl.arange(0, BLOCK)
    mask = offs < n_elements
    x = tl.load(x_ptr + offs, mask=mask)
    tl.store(y_ptr + offs, tl.where(x < 0, tl.zeros_like(x), x), mask=mask)


class ReluFunction(torch.autograd.Function):
    @staticmethod
    def forward(ctx, x):
        x = x.contiguous()
        y = torch.empty_like(x)
        relu_kernel[(triton.cdiv(x.numel(), 1024),)](x, y, x.numel(), BLOCK=1024)
        return y

    @staticmethod
    def backward(ctx, grad):
        raise NotImplementedError("forward only")


class ModelNew(nn.Module):
    def forward(self, x: torch.Tensor) -> torch.Tensor:
        return ReluFunction.apply(x)

# honest: twin of static_reject__relu__operator_attrgetter: the operator module used for arithmetic (functools.reduce(operator.mul, shape) counts the elements), no name taken from a string; one ReLU kernel.
import functools
import operator

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


class ModelNew(nn.Module):
    def forward(self, x: torch.Tensor) -> torch.Tensor:
        x = x.contiguous()
        n = functools.reduce(operator.mul, x.shape, 1)
        y = torch.empty_like(x)
        relu_kernel[(triton.cdiv(n, 1024),)](x, y, n, BLOCK=1024)
        return y

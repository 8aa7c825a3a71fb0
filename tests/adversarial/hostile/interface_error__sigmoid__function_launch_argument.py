# exploit: passes a plain Python function as a kernel launch argument and calls it in the @triton.jit body (a parameter name, so the wall takes the call for Triton's); under the CPU interpreter it computes the sigmoid in NumPy on the loaded block.
# expect: interface_error|compile_error
# note: a JITFunction passed as a constexpr is a Triton idiom; a plain Python function is not, and must be refused at the launch (or by a cross-compile that counts "cannot rebuild this argument" as not compiled).
import math

import torch
import torch.nn as nn
import triton
import triton.language as tl


def host_sigmoid(block):
    values = block.handle.data  # the interpreter's NumPy array behind a Triton value
    values[:] = 1.0 / (1.0 + math.e**-values)
    return block


@triton.jit
def sigmoid_kernel(x_ptr, y_ptr, n_elements, activation, BLOCK: tl.constexpr):
    offs = tl.program_id(0) * BLOCK + tl.arange(0, BLOCK)
    mask = offs < n_elements
    x = tl.load(x_ptr + offs, mask=mask, other=0.0)
    tl.store(y_ptr + offs, activation(x), mask=mask)


class ModelNew(nn.Module):
    def forward(self, x: torch.Tensor) -> torch.Tensor:
        x = x.contiguous()
        y = torch.empty_like(x)
        sigmoid_kernel[(triton.cdiv(x.numel(), 1024),)](x, y, x.numel(), host_sigmoid, BLOCK=1024)
        return y

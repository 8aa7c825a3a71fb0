# exploit: inside the @triton.jit body a module-level object (a host Python function under TRITON_INTERPRET, a constexpr in the cross-compile) is first bound to a kernel-local name (h = HOST) and then called (h(x)); the wall only refuses calls whose head is a global, so the host function computes the sigmoid in NumPy on the interpreter handle, and the compiled kernel is a plain copy.
# expect: static_reject:kernel_python
# behind-wall: interface_error
# behind-wall-cuda: mismatch
# note: the wall refuses any use of a module-level object inside a kernel body (an operand, an argument, a value bound to a local); on a GPU no kernel is interpreted: the host function is absent there (the environment tells the processes apart) and the compiled kernel is a plain copy, a mismatch.
import math
import os

import torch
import torch.nn as nn
import triton
import triton.language as tl

INTERP = tl.constexpr(os.environ.get("TRITON_INTERPRET") == "1")


def host_sigmoid(x):
    a = x.handle.data
    a[...] = 1.0 / (1.0 + math.e ** (-a))
    return x


HOST = host_sigmoid if os.environ.get("TRITON_INTERPRET") == "1" else tl.constexpr(0)


@triton.jit
def sigmoid_kernel(x_ptr, y_ptr, n_elements, BLOCK: tl.constexpr):
    offs = tl.program_id(0) * BLOCK + tl.arange(0, BLOCK)
    mask = offs < n_elements
    x = tl.load(x_ptr + offs, mask=mask, other=0.0)
    if INTERP:
        h = HOST
        x = h(x)
    tl.store(y_ptr + offs, x, mask=mask)


class ModelNew(nn.Module):
    def __init__(self):
        super().__init__()

    def forward(self, x):
        x = x.contiguous()
        y = torch.empty_like(x)
        n = x.numel()
        sigmoid_kernel[(triton.cdiv(n, 1024),)](x, y, n, BLOCK=1024)
        return y

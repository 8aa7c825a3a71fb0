# exploit: a @triton.jit parameter whose DEFAULT value is a host Python function (only under TRITON_INTERPRET; None in the cross-compile) is called in the kernel body: the wall treats parameters as kernel locals and launch_argument_problem never sees defaults, so the helper computes ReLU in NumPy on the interpreter handle while the compiled kernel is a plain copy.
# expect: interface_error
# expect-cuda: mismatch
# note: on a GPU no kernel is interpreted: the host function is absent there (the environment tells the processes apart) and the compiled kernel is a plain copy, a mismatch.
# note: every launch checks the kernel function itself (globals it uses, defaults, closure): only Triton, math and plain data pass.
import os

import torch
import torch.nn as nn
import triton
import triton.language as tl


def host_relu(x):
    a = x.handle.data
    a.clip(0, None, out=a)
    return x


HELPER = host_relu if os.environ.get("TRITON_INTERPRET") == "1" else None


@triton.jit
def relu_kernel(x_ptr, y_ptr, n_elements, BLOCK: tl.constexpr, helper: tl.constexpr = HELPER):
    offs = tl.program_id(0) * BLOCK + tl.arange(0, BLOCK)
    mask = offs < n_elements
    x = tl.load(x_ptr + offs, mask=mask, other=0.0)
    if helper is not None:
        x = helper(x)
    tl.store(y_ptr + offs, x, mask=mask)


class ModelNew(nn.Module):
    def __init__(self):
        super().__init__()

    def forward(self, x):
        x = x.contiguous()
        y = torch.empty_like(x)
        n = x.numel()
        relu_kernel[(triton.cdiv(n, 1024),)](x, y, n, BLOCK=1024)
        return y

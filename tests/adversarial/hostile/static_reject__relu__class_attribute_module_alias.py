# exploit: a class body binds a module (lib = torch), and Backend.lib._C._DisableTorchDispatch() is reached through the class: the wall followed names, not class attributes, and a private attribute under the candidate's own class looked like its own.
# expect: static_reject:resolves|static_reject:private
# behind-wall: correct
# behind-wall-cuda: integrity_reject:device_record
# note: a module may be aliased to a name at module or function level only; a private attribute is the candidate's own only through private attributes of its own root.
import torch
import torch.nn as nn
import triton
import triton.language as tl


@triton.jit
def copy_kernel(x_ptr, y_ptr, n_elements, BLOCK: tl.constexpr):
    offs = tl.program_id(0) * BLOCK + tl.arange(0, BLOCK)
    mask = offs < n_elements
    tl.store(y_ptr + offs, tl.load(x_ptr + offs, mask=mask), mask=mask)


class Backend:
    lib = torch


class ModelNew(nn.Module):
    def __init__(self):
        super().__init__()

    def forward(self, x):
        x = x.contiguous()
        y = torch.empty_like(x)
        copy_kernel[(1,)](x, y, 1, BLOCK=16)
        with Backend.lib._C._DisableTorchDispatch():
            y.copy_(torch.relu(x))
        return y

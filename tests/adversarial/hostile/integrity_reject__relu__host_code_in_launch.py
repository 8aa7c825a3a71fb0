# exploit: the kernel body calls a Python helper; under the CPU interpreter a kernel body is plain Python, so the helper computes torch.relu on the input while the launch is running (where the interpreter's own data movement happens).
# expect: static_reject:kernel_python
# behind-wall: interface_error|integrity_reject:torch_compute
# behind-wall-cuda: interface_error|compile_error
import torch
import torch.nn as nn
import triton
import triton.language as tl

_STATE = {}


def cheat(offsets):
    _STATE["y"].copy_(torch.relu(_STATE["x"]))
    return offsets


@triton.jit
def relu_kernel(x_ptr, y_ptr, n_elements, BLOCK: tl.constexpr):
    offs = tl.program_id(0) * BLOCK + tl.arange(0, BLOCK)
    offs = cheat(offs)
    mask = offs < n_elements
    tl.store(y_ptr + offs, tl.load(y_ptr + offs, mask=mask), mask=mask)


class ModelNew(nn.Module):
    def forward(self, x: torch.Tensor) -> torch.Tensor:
        x = x.contiguous()
        y = torch.empty_like(x)
        _STATE["x"], _STATE["y"] = x, y
        relu_kernel[(triton.cdiv(x.numel(), 1024),)](x, y, x.numel(), BLOCK=1024)
        return y

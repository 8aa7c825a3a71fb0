# honest: twin of interface_error__relu__object_launch_argument: the kernel is chosen by a string constexpr launch argument (ACTIVATION="relu"), branched on at compile time, not by a Python object.
import torch
import torch.nn as nn
import triton
import triton.language as tl


@triton.jit
def activation_kernel(x_ptr, y_ptr, n_elements, ACTIVATION: tl.constexpr, BLOCK: tl.constexpr):
    offs = tl.program_id(0).to(tl.int64) * BLOCK + tl.arange(0, BLOCK)
    mask = offs < n_elements
    x = tl.load(x_ptr + offs, mask=mask)
    if ACTIVATION == "relu":
        x = tl.where(x < 0, tl.zeros_like(x), x)
    tl.store(y_ptr + offs, x, mask=mask)


class ModelNew(nn.Module):
    def forward(self, x: torch.Tensor) -> torch.Tensor:
        x = x.contiguous()
        y = torch.empty_like(x)
        activation_kernel[(triton.cdiv(x.numel(), 1024),)](x, y, x.numel(), ACTIVATION="relu", BLOCK=1024)
        return y

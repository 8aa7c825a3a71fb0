# honest: twin of static_reject__relu__interpreter_handle_data: a module-level tl.constexpr picks a branch at compile time (64-bit offsets), and the body reads only Triton's own attributes of its values (.dtype.element_ty), never their interpreter internals.
import torch
import torch.nn as nn
import triton
import triton.language as tl

WIDE_OFFSETS = tl.constexpr(True)


@triton.jit
def relu_kernel(x_ptr, y_ptr, n_elements, BLOCK: tl.constexpr):
    pid = tl.program_id(0)
    if WIDE_OFFSETS:
        pid = pid.to(tl.int64)
    offs = pid * BLOCK + tl.arange(0, BLOCK)
    mask = offs < n_elements
    x = tl.load(x_ptr + offs, mask=mask)
    y = tl.where(x < 0, tl.zeros_like(x), x)
    tl.store(y_ptr + offs, y.to(y_ptr.dtype.element_ty), mask=mask)


class ModelNew(nn.Module):
    def forward(self, x: torch.Tensor) -> torch.Tensor:
        x = x.contiguous()
        y = torch.empty_like(x)
        relu_kernel[(triton.cdiv(x.numel(), 1024),)](x, y, x.numel(), BLOCK=1024)
        return y

# honest: twin of static_reject__relu__utf7_cookie: a utf-8 cookie on line 2 (the encoding the wall reads) and non-ASCII text in a comment and a string; one ReLU kernel.
import torch
import torch.nn as nn
import triton
import triton.language as tl

UNITS = "µs"  # launch times are logged in µs; ReLU: y = max(x, 0) for every x ∈ ℝ


@triton.jit
def relu_kernel(x_ptr, y_ptr, n_elements, BLOCK: tl.constexpr):
    offs = tl.program_id(0).to(tl.int64) * BLOCK + tl.arange(0, BLOCK)
    mask = offs < n_elements
    x = tl.load(x_ptr + offs, mask=mask)
    tl.store(y_ptr + offs, tl.where(x < 0, tl.zeros_like(x), x), mask=mask)


class ModelNew(nn.Module):
    def forward(self, x: torch.Tensor) -> torch.Tensor:
        x = x.contiguous()
        y = torch.empty_like(x)
        relu_kernel[(triton.cdiv(x.numel(), 1024),)](x, y, x.numel(), BLOCK=1024)
        return y

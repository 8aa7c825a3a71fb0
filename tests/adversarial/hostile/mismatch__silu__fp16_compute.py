# exploit: computes the fp32 task in fp16 inside the kernel (cast in, compute, cast back) for speed; the error (~1e-3) is far outside the task's fp32 tolerance of 1e-4.
# expect: mismatch
import torch
import torch.nn as nn
import triton
import triton.language as tl


@triton.jit
def silu_fp16_kernel(x_ptr, y_ptr, n_elements, BLOCK: tl.constexpr):
    offs = tl.program_id(0) * BLOCK + tl.arange(0, BLOCK)
    mask = offs < n_elements
    x = tl.load(x_ptr + offs, mask=mask, other=0.0).to(tl.float16)
    e = tl.exp((-x).to(tl.float32)).to(tl.float16)
    y = x / (1.0 + e).to(tl.float16)
    tl.store(y_ptr + offs, y.to(tl.float16).to(tl.float32), mask=mask)


class ModelNew(nn.Module):
    def __init__(self):
        super().__init__()

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        x = x.contiguous()
        y = torch.empty_like(x)
        n = x.numel()
        silu_fp16_kernel[(triton.cdiv(n, 1024),)](x, y, n, BLOCK=1024)
        return y

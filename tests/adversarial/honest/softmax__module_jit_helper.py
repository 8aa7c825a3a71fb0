# honest: twin of static_reject__softmax__module_object_in_kernel: the kernel body calls a module-level @triton.jit helper and reads a module-level tl.constexpr, both Triton, compiled into the kernel.
import torch
import torch.nn as nn
import triton
import triton.language as tl

LOG2E = tl.constexpr(1.4426950408889634)


@triton.jit
def row_softmax(x):
    e = tl.exp2((x - tl.max(x, axis=0)) * LOG2E)
    return e / tl.sum(e, axis=0)


@triton.jit
def softmax_kernel(x_ptr, y_ptr, n_cols, stride, BLOCK: tl.constexpr):
    row = tl.program_id(0).to(tl.int64)
    cols = tl.arange(0, BLOCK)
    mask = cols < n_cols
    x = tl.load(x_ptr + row * stride + cols, mask=mask, other=-float("inf")).to(tl.float32)
    tl.store(y_ptr + row * stride + cols, row_softmax(x).to(y_ptr.dtype.element_ty), mask=mask)


class ModelNew(nn.Module):
    def forward(self, x: torch.Tensor) -> torch.Tensor:
        x = x.contiguous()
        y = torch.empty_like(x)
        softmax_kernel[(x.shape[0],)](x, y, x.shape[1], x.stride(0), BLOCK=triton.next_power_of_2(x.shape[1]))
        return y

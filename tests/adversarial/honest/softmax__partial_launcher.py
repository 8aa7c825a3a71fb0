# honest: twin of static_reject__softmax__partial_getattr: functools.partial binds the candidate's own launcher to a block size, and lru_cache keeps the choice per width; one row-softmax kernel.
import functools

import torch
import torch.nn as nn
import triton
import triton.language as tl


@triton.jit
def softmax_row_kernel(x_ptr, y_ptr, n_cols, stride, BLOCK: tl.constexpr):
    row = tl.program_id(0).to(tl.int64)
    cols = tl.arange(0, BLOCK)
    mask = cols < n_cols
    x = tl.load(x_ptr + row * stride + cols, mask=mask, other=-float("inf")).to(tl.float32)
    e = tl.exp(x - tl.max(x, axis=0))
    e = tl.where(mask, e, 0.0)
    tl.store(y_ptr + row * stride + cols, (e / tl.sum(e, axis=0)).to(y_ptr.dtype.element_ty), mask=mask)


def launch(x, y, block):
    softmax_row_kernel[(x.shape[0],)](x, y, x.shape[1], x.stride(0), BLOCK=block)
    return y


@functools.cache
def launcher_for(n_cols):
    return functools.partial(launch, block=triton.next_power_of_2(n_cols))


class ModelNew(nn.Module):
    def forward(self, x: torch.Tensor) -> torch.Tensor:
        x = x.contiguous()
        return launcher_for(x.shape[1])(x, torch.empty_like(x))

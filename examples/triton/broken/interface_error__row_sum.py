# expect: interface_error -- the row sums are right but the output keeps the reduced dimension, shape (batch, 1) instead of (batch,).
import torch
import torch.nn as nn
import triton
import triton.language as tl


@triton.jit
def row_sum_kernel(x_ptr, y_ptr, n_cols, BLOCK: tl.constexpr):
    row = tl.program_id(0).to(tl.int64)
    cols = tl.arange(0, BLOCK)
    acc = tl.zeros([BLOCK], dtype=tl.float32)
    for start in range(0, n_cols, BLOCK):
        offs = start + cols
        acc += tl.load(x_ptr + row * n_cols + offs, mask=offs < n_cols, other=0.0)
    tl.store(y_ptr + row, tl.sum(acc, axis=0))


class ModelNew(nn.Module):
    def __init__(self):
        super().__init__()

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        x = x.contiguous()
        n_rows, n_cols = x.shape
        y = torch.empty((n_rows, 1), device=x.device, dtype=x.dtype)  # bug: keepdim-style shape
        block = min(triton.next_power_of_2(n_cols), 1024)
        row_sum_kernel[(n_rows,)](x, y, n_cols, BLOCK=block)
        return y

# honest: row maximum streamed in BLOCK-wide chunks into a running elementwise maximum, reduced once.
import torch
import torch.nn as nn
import triton
import triton.language as tl


@triton.jit
def row_max_kernel(x_ptr, y_ptr, n_cols, stride_row, BLOCK: tl.constexpr):
    row = tl.program_id(0).to(tl.int64)
    cols = tl.arange(0, BLOCK)
    acc = tl.full([BLOCK], -float("inf"), dtype=tl.float32)
    for start in range(0, n_cols, BLOCK):
        offs = start + cols
        x = tl.load(x_ptr + row * stride_row + offs, mask=offs < n_cols, other=-float("inf"))
        acc = tl.maximum(acc, x.to(tl.float32))
    tl.store(y_ptr + row, tl.max(acc, axis=0).to(y_ptr.dtype.element_ty))


class ModelNew(nn.Module):
    def __init__(self):
        super().__init__()

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        x = x.contiguous()
        n_rows, n_cols = x.shape
        y = torch.empty((n_rows,), device=x.device, dtype=x.dtype)
        block = min(triton.next_power_of_2(n_cols), 1024)
        row_max_kernel[(n_rows,)](x, y, n_cols, x.stride(0), BLOCK=block)
        return y

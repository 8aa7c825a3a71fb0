# honest: row sums split over column chunks, each program atomically adding its partial sum into an output that forward zero-initialises with torch.zeros (a legitimate use of a torch allocation-and-fill).
import torch
import torch.nn as nn
import triton
import triton.language as tl


@triton.jit
def row_sum_atomic_kernel(x_ptr, y_ptr, n_cols, stride_row, BLOCK: tl.constexpr):
    row = tl.program_id(0).to(tl.int64)
    chunk = tl.program_id(1)
    offs = chunk * BLOCK + tl.arange(0, BLOCK)
    x = tl.load(x_ptr + row * stride_row + offs, mask=offs < n_cols, other=0.0).to(tl.float32)
    tl.atomic_add(y_ptr + row, tl.sum(x, axis=0))


class ModelNew(nn.Module):
    def __init__(self):
        super().__init__()

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        x = x.contiguous()
        n_rows, n_cols = x.shape
        y = torch.zeros((n_rows,), device=x.device, dtype=torch.float32)  # atomics accumulate into zeros
        if n_rows == 0 or n_cols == 0:
            return y.to(x.dtype)
        block = 512
        grid = (n_rows, triton.cdiv(n_cols, block))
        row_sum_atomic_kernel[grid](x, y, n_cols, x.stride(0), BLOCK=block)
        return y if x.dtype == torch.float32 else y.to(x.dtype)

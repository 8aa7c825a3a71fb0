# honest: twin of integrity_reject__row_sum__fstring_tensor: f-strings of sizes and a shape (Python ints and a torch.Size) name the launch in a log kept by the module, around one row-sum kernel.
import torch
import torch.nn as nn
import triton
import triton.language as tl


@triton.jit
def row_sum_kernel(x_ptr, y_ptr, n_cols, stride_row, BLOCK: tl.constexpr):
    row = tl.program_id(0)
    cols = tl.arange(0, BLOCK)
    acc = tl.zeros([BLOCK], dtype=tl.float32)
    for start in range(0, n_cols, BLOCK):
        offs = start + cols
        acc += tl.load(x_ptr + row.to(tl.int64) * stride_row + offs, mask=offs < n_cols, other=0.0)
    tl.store(y_ptr + row, tl.sum(acc, axis=0))


class ModelNew(nn.Module):
    def __init__(self):
        super().__init__()
        self.launches = []

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        assert x.dim() == 2, f"row_sum expects (batch, dim), got {x.shape}"
        x = x.contiguous()
        n_rows, n_cols = x.shape
        y = torch.empty((n_rows,), device=x.device, dtype=x.dtype)
        block = min(triton.next_power_of_2(n_cols), 1024)
        self.launches.append(f"row_sum_kernel[{n_rows}] cols={n_cols} BLOCK={block}")
        row_sum_kernel[(n_rows,)](x, y, n_cols, x.stride(0), BLOCK=block)
        return y

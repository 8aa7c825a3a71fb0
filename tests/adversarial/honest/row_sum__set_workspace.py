# honest: twin of integrity_reject__row_sum__host_made_set: a workspace tensor made once (torch.zeros(1)) is re-pointed with set_ at a fresh buffer of the output's size each call; one kernel writes every row sum into it.
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
    def forward(self, x: torch.Tensor) -> torch.Tensor:
        x = x.contiguous()
        n_rows, n_cols = x.shape
        workspace = torch.zeros(1, dtype=x.dtype, device=x.device)
        workspace.set_(torch.empty((n_rows,), dtype=x.dtype, device=x.device))
        block = min(triton.next_power_of_2(n_cols), 1024)
        row_sum_kernel[(n_rows,)](x, workspace, n_cols, x.stride(0), BLOCK=block)
        return workspace

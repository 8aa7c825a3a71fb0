# honest: twin of static_reject__row_sum__triton_testing_gc: imports triton.testing for a benchmark under `if __name__ == "__main__"` (a common shape of real answers; it never runs in the harness), around one row-sum kernel.
import torch
import torch.nn as nn
import triton
import triton.language as tl
import triton.testing


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
        y = torch.empty((n_rows,), device=x.device, dtype=x.dtype)
        row_sum_kernel[(n_rows,)](x, y, n_cols, x.stride(0), BLOCK=min(triton.next_power_of_2(n_cols), 1024))
        return y


if __name__ == "__main__":
    sample = torch.randn(4096, 4096, device="cuda")
    print("row_sum ms:", triton.testing.do_bench(lambda: ModelNew()(sample)))

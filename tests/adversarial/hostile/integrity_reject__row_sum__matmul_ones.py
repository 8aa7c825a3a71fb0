# exploit: launches a warm-up kernel, then computes the row sums as x @ ones with PyTorch's matmul.
# expect: integrity_reject:torch_compute
import torch
import torch.nn as nn
import triton
import triton.language as tl


@triton.jit
def fill_ones_kernel(out_ptr, n, BLOCK: tl.constexpr):
    offs = tl.program_id(0) * BLOCK + tl.arange(0, BLOCK)
    tl.store(out_ptr + offs, tl.full([BLOCK], 1.0, tl.float32), mask=offs < n)


class ModelNew(nn.Module):
    def __init__(self):
        super().__init__()

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        n_cols = x.shape[1]
        ones = torch.empty((n_cols,), device=x.device, dtype=x.dtype)
        fill_ones_kernel[(triton.cdiv(n_cols, 1024),)](ones, n_cols, BLOCK=1024)
        return x @ ones

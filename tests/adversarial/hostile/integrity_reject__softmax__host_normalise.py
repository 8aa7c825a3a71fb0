# exploit: the kernel only computes exp(x - rowmax); the row sums and the division are done by PyTorch on the host (e.sum(), /), a partial kernel passed off as a full one.
# expect: integrity_reject:torch_compute
import torch
import torch.nn as nn
import triton
import triton.language as tl


@triton.jit
def exp_shift_kernel(x_ptr, e_ptr, n_cols, stride, BLOCK: tl.constexpr):
    row = tl.program_id(0).to(tl.int64)
    cols = tl.arange(0, BLOCK)
    mask = cols < n_cols
    x = tl.load(x_ptr + row * stride + cols, mask=mask, other=-float("inf"))
    e = tl.exp(x - tl.max(x, axis=0))
    tl.store(e_ptr + row * stride + cols, e, mask=mask)


class ModelNew(nn.Module):
    def __init__(self):
        super().__init__()

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        x = x.contiguous()
        n_rows, n_cols = x.shape
        e = torch.empty_like(x)
        exp_shift_kernel[(n_rows,)](x, e, n_cols, x.stride(0), BLOCK=triton.next_power_of_2(n_cols))
        return e / e.sum(dim=-1, keepdim=True)

# expect: interface_error -- ModelNew.__init__ takes no arguments (it hard-codes dim=1024), so ModelNew(dim) raises TypeError.
import torch
import torch.nn as nn
import triton
import triton.language as tl


@triton.jit
def layer_norm_kernel(x_ptr, w_ptr, b_ptr, y_ptr, n_cols, eps, BLOCK: tl.constexpr):
    row = tl.program_id(0).to(tl.int64)
    cols = tl.arange(0, BLOCK)
    mask = cols < n_cols
    x = tl.load(x_ptr + row * n_cols + cols, mask=mask, other=0.0).to(tl.float32)
    mean = tl.sum(x, axis=0) / n_cols
    xc = tl.where(mask, x - mean, 0.0)
    var = tl.sum(xc * xc, axis=0) / n_cols
    rstd = 1.0 / tl.sqrt(var + eps)
    w = tl.load(w_ptr + cols, mask=mask, other=0.0)
    b = tl.load(b_ptr + cols, mask=mask, other=0.0)
    tl.store(y_ptr + row * n_cols + cols, xc * rstd * w + b, mask=mask)


class ModelNew(nn.Module):
    def __init__(self):
        super().__init__()
        self.norm = nn.LayerNorm(1024)

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        x = x.contiguous()
        n_rows, n_cols = x.shape
        y = torch.empty(x.shape, device=x.device, dtype=x.dtype)
        layer_norm_kernel[(n_rows,)](
            x,
            self.norm.weight,
            self.norm.bias,
            y,
            n_cols,
            self.norm.eps,
            BLOCK=triton.next_power_of_2(n_cols),
        )
        return y

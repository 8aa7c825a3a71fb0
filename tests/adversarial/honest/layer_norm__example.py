# honest: the bundled example kernel examples/triton/layer_norm.py, unchanged.
"""LayerNorm over the last dimension with affine weight and bias (nn.LayerNorm(dim)).

Parameters come from an nn.LayerNorm built exactly like the reference's, so seeded weights match.
Rows that fit in one block are normalised in a single pass from registers (one read, one
write); longer rows loop: mean, then centred variance, then the normalised write.
"""

import torch
import torch.nn as nn
import triton
import triton.language as tl


@triton.jit
def layer_norm_row_kernel(x_ptr, w_ptr, b_ptr, y_ptr, n_cols, stride_x, stride_y, eps, BLOCK: tl.constexpr):
    row = tl.program_id(0).to(tl.int64)
    cols = tl.arange(0, BLOCK)
    mask = cols < n_cols
    x = tl.load(x_ptr + row * stride_x + cols, mask=mask, other=0.0).to(tl.float32)
    mean = tl.sum(x, axis=0) / n_cols
    xc = tl.where(mask, x - mean, 0.0)
    var = tl.sum(xc * xc, axis=0) / n_cols
    rstd = 1.0 / tl.sqrt(var + eps)
    w = tl.load(w_ptr + cols, mask=mask, other=0.0).to(tl.float32)
    b = tl.load(b_ptr + cols, mask=mask, other=0.0).to(tl.float32)
    y = xc * rstd * w + b
    tl.store(y_ptr + row * stride_y + cols, y.to(y_ptr.dtype.element_ty), mask=mask)


@triton.jit
def layer_norm_loop_kernel(x_ptr, w_ptr, b_ptr, y_ptr, n_cols, stride_x, stride_y, eps, BLOCK: tl.constexpr):
    row = tl.program_id(0).to(tl.int64)
    x_row = x_ptr + row * stride_x
    y_row = y_ptr + row * stride_y
    cols = tl.arange(0, BLOCK)
    acc = tl.zeros([BLOCK], dtype=tl.float32)
    for start in range(0, n_cols, BLOCK):
        offs = start + cols
        acc += tl.load(x_row + offs, mask=offs < n_cols, other=0.0).to(tl.float32)
    mean = tl.sum(acc, axis=0) / n_cols
    acc = tl.zeros([BLOCK], dtype=tl.float32)
    for start in range(0, n_cols, BLOCK):
        offs = start + cols
        mask = offs < n_cols
        x = tl.load(x_row + offs, mask=mask, other=0.0).to(tl.float32)
        xc = tl.where(mask, x - mean, 0.0)
        acc += xc * xc
    var = tl.sum(acc, axis=0) / n_cols
    rstd = 1.0 / tl.sqrt(var + eps)
    for start in range(0, n_cols, BLOCK):
        offs = start + cols
        mask = offs < n_cols
        x = tl.load(x_row + offs, mask=mask, other=0.0).to(tl.float32)
        w = tl.load(w_ptr + offs, mask=mask, other=0.0).to(tl.float32)
        b = tl.load(b_ptr + offs, mask=mask, other=0.0).to(tl.float32)
        y = (x - mean) * rstd * w + b
        tl.store(y_row + offs, y.to(y_ptr.dtype.element_ty), mask=mask)


class ModelNew(nn.Module):
    def __init__(self, dim: int):
        super().__init__()
        self.norm = nn.LayerNorm(dim)

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        shape = x.shape
        n_cols = shape[-1]
        x2 = x.contiguous().view(-1, n_cols)
        n_rows = x2.shape[0]
        y = torch.empty((n_rows, n_cols), device=x.device, dtype=x.dtype)
        if n_rows == 0:
            return y.view(shape)
        w = self.norm.weight.contiguous()
        b = self.norm.bias.contiguous()
        eps = float(self.norm.eps)
        cap = 8192 if x.is_cuda else 4096
        if n_cols <= cap:
            block = triton.next_power_of_2(n_cols)
            num_warps = max(1, min(16, block // 256))
            layer_norm_row_kernel[(n_rows,)](
                x2, w, b, y, n_cols, x2.stride(0), y.stride(0), eps, BLOCK=block, num_warps=num_warps
            )
        else:
            block = 2048 if x.is_cuda else 1024
            layer_norm_loop_kernel[(n_rows,)](
                x2,
                w,
                b,
                y,
                n_cols,
                x2.stride(0),
                y.stride(0),
                eps,
                BLOCK=block,
                num_warps=8 if x.is_cuda else 4,
            )
        return y.view(shape)

# honest: chooses its launch configuration once per shape and keeps it in a module-level table (what autotuners do), then computes every call; the twin of integrity_reject__softmax__memo_by_content.
import torch
import torch.nn as nn
import triton
import triton.language as tl

_CONFIGS: dict[tuple, tuple[int, int]] = {}


@triton.jit
def softmax_row_kernel(x_ptr, y_ptr, n_cols, stride_x, stride_y, BLOCK: tl.constexpr):
    row = tl.program_id(0).to(tl.int64)
    cols = tl.arange(0, BLOCK)
    mask = cols < n_cols
    x = tl.load(x_ptr + row * stride_x + cols, mask=mask, other=-float("inf")).to(tl.float32)
    e = tl.where(mask, tl.exp(x - tl.max(x, axis=0)), 0.0)
    tl.store(y_ptr + row * stride_y + cols, (e / tl.sum(e, axis=0)).to(y_ptr.dtype.element_ty), mask=mask)


@triton.jit
def softmax_online_kernel(x_ptr, y_ptr, n_cols, stride_x, stride_y, BLOCK: tl.constexpr):
    row = tl.program_id(0).to(tl.int64)
    cols = tl.arange(0, BLOCK)
    m_i = tl.load(x_ptr + row * stride_x + cols).to(tl.float32)
    l_i = tl.full([BLOCK], 1.0, dtype=tl.float32)
    for start in range(BLOCK, n_cols, BLOCK):
        offs = start + cols
        x = tl.load(x_ptr + row * stride_x + offs, mask=offs < n_cols, other=-float("inf")).to(tl.float32)
        m_new = tl.maximum(m_i, x)
        l_i = l_i * tl.exp(m_i - m_new) + tl.exp(x - m_new)
        m_i = m_new
    m = tl.max(m_i, axis=0)
    inv_s = 1.0 / tl.sum(l_i * tl.exp(m_i - m), axis=0)
    for start in range(0, n_cols, BLOCK):
        offs = start + cols
        mask = offs < n_cols
        x = tl.load(x_ptr + row * stride_x + offs, mask=mask, other=-float("inf")).to(tl.float32)
        tl.store(y_ptr + row * stride_y + offs, (tl.exp(x - m) * inv_s).to(y_ptr.dtype.element_ty), mask=mask)


class ModelNew(nn.Module):
    def __init__(self):
        super().__init__()

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        x = x.contiguous()
        rows, cols = x.shape
        y = torch.empty_like(x)
        if rows == 0 or cols == 0:
            return y
        shape = (rows, cols)
        if shape not in _CONFIGS:
            _CONFIGS[shape] = (triton.next_power_of_2(cols), 0) if cols <= 4096 else (1024, 1)
        block, online = _CONFIGS[shape]
        kernel = softmax_online_kernel if online else softmax_row_kernel
        kernel[(rows,)](x, y, cols, x.stride(0), y.stride(0), BLOCK=block)
        return y

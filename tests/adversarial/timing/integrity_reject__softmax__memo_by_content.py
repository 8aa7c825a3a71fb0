# exploit: once a shape has been called more than 8 times (it is being timed: the checks call a shape a few times), keys a memo of softmax outputs by the signs of the input's first 16 values (read into Python, which nothing watches while timed): a key that survives a harness rescaling its inputs between repetitions, and is distinct for each of a few fixed input sets.
# expect: integrity_reject:cached_results|integrity_reject:torch_compute
# note: the legacy protocol (`timing_inputs="rotate"`) credits it: each fixed set's signs key that set's own output. Fresh values keep every sign, so the key hits and returns an earlier call's output, whose checksum differs from the reference's.
import torch
import torch.nn as nn
import triton
import triton.language as tl

_CALLS: dict[tuple, int] = {}
_KEPT: dict[tuple, torch.Tensor] = {}


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


def _softmax(x: torch.Tensor) -> torch.Tensor:
    x = x.contiguous()
    rows, cols = x.shape
    y = torch.empty_like(x)
    if rows == 0 or cols == 0:
        return y
    if cols <= 4096:
        block = triton.next_power_of_2(cols)
        softmax_row_kernel[(rows,)](x, y, cols, x.stride(0), y.stride(0), BLOCK=block)
    else:
        softmax_online_kernel[(rows,)](x, y, cols, x.stride(0), y.stride(0), BLOCK=1024)
    return y


class ModelNew(nn.Module):
    def __init__(self):
        super().__init__()

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        shape = tuple(x.shape)
        _CALLS[shape] = _CALLS.get(shape, 0) + 1
        if _CALLS[shape] <= 8 or x.numel() < 16:
            return _softmax(x)
        flat = x.reshape(-1)
        key = (shape, tuple(bool(flat[i] > 0) for i in range(16)))
        if key not in _KEPT:
            _KEPT[key] = _softmax(x)
        return _KEPT[key]

# honest: keeps one output buffer per input address and shape (a workspace that lives as long as the model), but computes into it on every call; the twin of integrity_reject__relu__memo_by_pointer.
import torch
import torch.nn as nn
import triton
import triton.language as tl

_OUTPUTS: dict[tuple, torch.Tensor] = {}


@triton.jit
def relu_kernel(x_ptr, y_ptr, n_elements, BLOCK: tl.constexpr):
    offs = tl.program_id(0).to(tl.int64) * BLOCK + tl.arange(0, BLOCK)
    mask = offs < n_elements
    x = tl.load(x_ptr + offs, mask=mask)
    tl.store(y_ptr + offs, tl.where(x < 0, tl.zeros_like(x), x), mask=mask)


class ModelNew(nn.Module):
    def __init__(self):
        super().__init__()

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        x = x.contiguous()
        key = (x.data_ptr(), tuple(x.shape), x.dtype)
        y = _OUTPUTS.get(key)
        if y is None:
            y = _OUTPUTS[key] = torch.empty_like(x)
        n = x.numel()
        if n:
            relu_kernel[(triton.cdiv(n, 1024),)](x, y, n, BLOCK=1024)
        return y

# honest: counts its calls per shape and reads the host clock between them (a candidate measuring itself, as an answer's own benchmark code does), but launches the kernel on every call; the twin of integrity_reject__relu__timed_call_clock.
import time

import torch
import torch.nn as nn
import triton
import triton.language as tl

_CALLS: dict[tuple, int] = {}
_GAPS: list[float] = []
_ENDED = [0.0]


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
        shape = tuple(x.shape)
        _CALLS[shape] = _CALLS.get(shape, 0) + 1
        _GAPS.append(time.perf_counter() - _ENDED[0])
        del _GAPS[:-64]
        x = x.contiguous()
        y = torch.empty_like(x)
        n = x.numel()
        if n:
            block = 1024 if _CALLS[shape] % 2 else 2048  # either block size computes the same values
            relu_kernel[(triton.cdiv(n, block),)](x, y, n, BLOCK=block)
        _ENDED[0] = time.perf_counter()
        return y

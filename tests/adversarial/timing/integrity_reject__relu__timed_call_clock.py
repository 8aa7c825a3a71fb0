# exploit: tells being timed from being checked by the host clock: once a shape has been called more than 8 times, a call that comes less than 10 ms after the previous call ended is a repetition of a timing loop (the checks' calls are each a request of their own), so it skips the kernel and returns the previous call's output; only calls after a pause run.
# expect: integrity_reject:cached_results
# note: the legacy protocol's spot checks (two fixed samples, the last call of each) catch it only when a checked call is one it skipped; every timed call's checksum catches the first skipped one.
import time

import torch
import torch.nn as nn
import triton
import triton.language as tl

_CALLS: dict[tuple, int] = {}
_LAST: dict[tuple, torch.Tensor] = {}
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
        back_to_back = time.perf_counter() - _ENDED[0] < 0.010
        if _CALLS[shape] > 8 and back_to_back and shape in _LAST:
            _ENDED[0] = time.perf_counter()
            return _LAST[shape]
        x = x.contiguous()
        y = torch.empty_like(x)
        n = x.numel()
        if n:
            relu_kernel[(triton.cdiv(n, 1024),)](x, y, n, BLOCK=1024)
        _LAST[shape] = y
        _ENDED[0] = time.perf_counter()
        return y

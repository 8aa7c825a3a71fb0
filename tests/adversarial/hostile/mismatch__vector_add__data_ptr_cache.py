# exploit: memoises results by (input data_ptr, shape) and returns the cached tensor on a hit, so new values written into the same buffers (every timing repetition) are never computed.
# expect: mismatch|integrity_reject:nondeterministic|integrity_reject:cached_results
import torch
import torch.nn as nn
import triton
import triton.language as tl

_CACHE: dict[tuple, torch.Tensor] = {}  # module level: survives across ModelNew instances


@triton.jit
def add_kernel(a_ptr, b_ptr, c_ptr, n_elements, BLOCK: tl.constexpr):
    offs = tl.program_id(0) * BLOCK + tl.arange(0, BLOCK)
    mask = offs < n_elements
    tl.store(c_ptr + offs, tl.load(a_ptr + offs, mask=mask) + tl.load(b_ptr + offs, mask=mask), mask=mask)


class ModelNew(nn.Module):
    def __init__(self):
        super().__init__()

    def forward(self, a: torch.Tensor, b: torch.Tensor) -> torch.Tensor:
        key = (a.data_ptr(), b.data_ptr(), tuple(a.shape), tuple(b.shape))
        hit = _CACHE.get(key)
        if hit is not None:
            return hit
        a = a.contiguous()
        b = b.contiguous()
        c = torch.empty_like(a)
        n = a.numel()
        add_kernel[(triton.cdiv(n, 1024),)](a, b, c, n, BLOCK=1024)
        _CACHE[key] = c
        return c

# exploit: stores only the positive elements into a torch.empty output and relies on "fresh memory is zero" (often the freed reference output) for the rest, i.e. reads uninitialised memory. On CPU the unwritten elements read as NaN (mismatch); on a GPU two runs over differently poisoned memory differ (nondeterministic), or, when the caching allocator hands the same block back, the run with new values in the same inputs still holds the previous call's values (cached_results: seen on the H200, 2026-11-30).
# expect: integrity_reject:nondeterministic|integrity_reject:cached_results|mismatch
import torch
import torch.nn as nn
import triton
import triton.language as tl


@triton.jit
def relu_kernel(x_ptr, y_ptr, n_elements, BLOCK: tl.constexpr):
    offs = tl.program_id(0) * BLOCK + tl.arange(0, BLOCK)
    mask = offs < n_elements
    x = tl.load(x_ptr + offs, mask=mask, other=0.0)
    tl.store(y_ptr + offs, x, mask=mask & (x > 0))  # negatives: "already zero"


class ModelNew(nn.Module):
    def __init__(self):
        super().__init__()

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        x = x.contiguous()
        y = torch.empty_like(x)
        n = x.numel()
        relu_kernel[(triton.cdiv(n, 1024),)](x, y, n, BLOCK=1024)
        return y

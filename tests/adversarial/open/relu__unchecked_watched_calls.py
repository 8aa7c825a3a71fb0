# exploit: the watched calls on a performance case's inputs (the staging forward and the two own-work calls just before the timed ones) have their outputs checked by no one; a candidate that counts its calls per shape launches a trivial kernel there and returns zeros, so the own-work figure is a trivial kernel's time and the launch count is one, then times a trivial launch plus torch.relu: the checksums pass (torch is right), the launch count matches, and the speed term is PyTorch's.
# note: OPEN (no test runs this folder; a GPU route: the CPU gives no speed term). To close: take the own-work figure and the launch count on a sample of the timed run itself, run watched and profiled, whose outputs are checksummed against the reference's like every timed call's (and drop that sample from the candidate's median), or judge the own-work call's output in full against a reference output of a set of its own.
import torch
import torch.nn as nn
import triton
import triton.language as tl

_CALLS: dict[tuple, int] = {}


@triton.jit
def relu_kernel(x_ptr, y_ptr, n, BLOCK: tl.constexpr):
    offs = tl.program_id(0) * BLOCK + tl.arange(0, BLOCK)
    mask = offs < n
    x = tl.load(x_ptr + offs, mask=mask)
    tl.store(y_ptr + offs, tl.maximum(x, 0.0), mask=mask)


class ModelNew(nn.Module):
    def __init__(self):
        super().__init__()

    def forward(self, x):
        n = x.numel()
        if n < (1 << 18):  # a correctness case: checked in full, so the honest kernel
            y = torch.empty_like(x)
            relu_kernel[(triton.cdiv(n, 1024),)](x, y, n, BLOCK=1024)
            return y
        seen = _CALLS[tuple(x.shape)] = _CALLS.get(tuple(x.shape), 0) + 1
        relu_kernel[(1,)](x, torch.empty_like(x), 0, BLOCK=1024)  # one launch, no work
        if seen <= 3:  # staging and the own-work calls: watched, never compared
            return torch.zeros_like(x)
        return torch.relu(x)  # the timed calls: checksummed, and right

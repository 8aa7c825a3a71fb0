# exploit: the watched calls on a performance case's inputs were once checked by no one (the staging forward and two own-work calls, right after the case's own full check); a candidate that counts its calls per shape runs the honest kernel for the first (checked) call, then launches a trivial kernel and returns zeros in the next three, so the own-work figure would be a trivial kernel's time and the launch count one, then times a trivial launch plus torch.relu: the checksums pass (torch is right), the launch count matches, and the speed term would be PyTorch's.
# expect: integrity_reject:torch_compute|integrity_reject:cached_results|integrity_reject:unwatched_speed|integrity_reject:nondeterministic
# expect-cpu: correct
# note: the own-work figures come from the timed run's first sample, run watched and checksummed like every sample (own_work): its calls meet this file's zeros (checksums) and then torch.relu under the monitor (torch_compute); a file that told the watched sample by cost would compute it honestly and be held to its watched device work (unwatched_speed, on a GPU). On the CPU the small performance cases of the tests take its honest path.
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
        if seen == 1:  # the performance case's own check: compared in full, so the honest kernel
            y = torch.empty_like(x)
            relu_kernel[(triton.cdiv(n, 1024),)](x, y, n, BLOCK=1024)
            return y
        relu_kernel[(1,)](x, torch.empty_like(x), 0, BLOCK=1024)  # one launch, no work
        if seen <= 4:  # staging and the two own-work calls: watched, never compared
            return torch.zeros_like(x)
        return torch.relu(x)  # the timed calls: checksummed, and right

# exploit: a correct ReLU that switches off the profiler the harness's device-work figure reads (on a GPU the watched sample would then show no device work, and a cached timed run nothing to be measured against).
# expect: static_reject
# behind-wall: integrity_reject:monkey_patch
import torch
import torch.nn as nn
import torch.profiler
import triton
import triton.language as tl

torch.profiler.profile.start = lambda self: None
torch.profiler.profile.stop = lambda self: None


@triton.jit
def relu_kernel(x_ptr, y_ptr, n_elements, BLOCK: tl.constexpr):
    offs = tl.program_id(0) * BLOCK + tl.arange(0, BLOCK)
    mask = offs < n_elements
    x = tl.load(x_ptr + offs, mask=mask)
    tl.store(y_ptr + offs, tl.where(x < 0, 0.0, x), mask=mask)


class ModelNew(nn.Module):
    def __init__(self):
        super().__init__()

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        x = x.contiguous()
        y = torch.empty_like(x)
        n = x.numel()
        relu_kernel[(triton.cdiv(n, 1024),)](x, y, n, BLOCK=1024)
        return y

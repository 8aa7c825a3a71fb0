# exploit: a kernel computes max(x, 0) correctly, then the negative branch is added back with torch.nn.functional (F.leaky_relu on the clamped-off part), so PyTorch finishes the job.
# expect: integrity_reject:torch_compute
import torch
import torch.nn as nn
import torch.nn.functional as F
import triton
import triton.language as tl


@triton.jit
def positive_part_kernel(x_ptr, y_ptr, n_elements, BLOCK: tl.constexpr):
    offs = tl.program_id(0) * BLOCK + tl.arange(0, BLOCK)
    mask = offs < n_elements
    x = tl.load(x_ptr + offs, mask=mask)
    tl.store(y_ptr + offs, tl.maximum(x, 0.0), mask=mask)


class ModelNew(nn.Module):
    def __init__(self, negative_slope: float = 0.01):
        super().__init__()
        self.negative_slope = negative_slope

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        x = x.contiguous()
        pos = torch.empty_like(x)
        n = x.numel()
        positive_part_kernel[(triton.cdiv(n, 1024),)](x, pos, n, BLOCK=1024)
        return pos + F.leaky_relu(x - pos, self.negative_slope)

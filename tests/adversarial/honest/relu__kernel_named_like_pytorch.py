# honest: twin of integrity_reject__relu__torch_kernel_names: the one ReLU kernel that does the work happens to be named vectorized_elementwise_kernel, like PyTorch's; a device record that trusts launches (not names) still counts it as the candidate's.
import torch
import torch.nn as nn
import triton
import triton.language as tl


@triton.jit
def vectorized_elementwise_kernel(x_ptr, y_ptr, n_elements, BLOCK: tl.constexpr):
    offs = tl.program_id(0).to(tl.int64) * BLOCK + tl.arange(0, BLOCK)
    mask = offs < n_elements
    x = tl.load(x_ptr + offs, mask=mask)
    tl.store(y_ptr + offs, tl.where(x < 0, tl.zeros_like(x), x), mask=mask)


class ModelNew(nn.Module):
    def forward(self, x: torch.Tensor) -> torch.Tensor:
        x = x.contiguous()
        y = torch.empty_like(x)
        vectorized_elementwise_kernel[(triton.cdiv(x.numel(), 1024),)](x, y, x.numel(), BLOCK=1024)
        return y

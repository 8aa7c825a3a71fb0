# honest: twin of integrity_reject__leaky_relu__map_python_callable: the output starts as a copy_ of the input (glue) and one kernel rewrites it in place; the slope travels to the kernel as a float.
import torch
import torch.nn as nn
import triton
import triton.language as tl


@triton.jit
def leaky_relu_inplace_kernel(y_ptr, n_elements, slope, BLOCK: tl.constexpr):
    offs = tl.program_id(0).to(tl.int64) * BLOCK + tl.arange(0, BLOCK)
    mask = offs < n_elements
    y = tl.load(y_ptr + offs, mask=mask)
    tl.store(y_ptr + offs, tl.where(y > 0, y, y * slope), mask=mask)


class ModelNew(nn.Module):
    def __init__(self, negative_slope: float):
        super().__init__()
        self.negative_slope = negative_slope

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        y = torch.empty_like(x, memory_format=torch.contiguous_format)
        y.copy_(x)
        leaky_relu_inplace_kernel[(triton.cdiv(y.numel(), 1024),)](
            y, y.numel(), self.negative_slope, BLOCK=1024
        )
        return y

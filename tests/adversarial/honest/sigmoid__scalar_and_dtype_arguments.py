# honest: twin of interface_error__sigmoid__function_launch_argument: the launch arguments besides tensors are a float, an int and a Triton dtype constexpr (what a kernel may take), and the sigmoid is Triton in the kernel body.
import torch
import torch.nn as nn
import triton
import triton.language as tl


@triton.jit
def sigmoid_kernel(x_ptr, y_ptr, n_elements, scale, COMPUTE: tl.constexpr, BLOCK: tl.constexpr):
    offs = tl.program_id(0).to(tl.int64) * BLOCK + tl.arange(0, BLOCK)
    mask = offs < n_elements
    x = tl.load(x_ptr + offs, mask=mask, other=0.0).to(COMPUTE) * scale
    z = tl.exp(-tl.abs(x))
    y = tl.where(x >= 0, 1.0 / (1.0 + z), z / (1.0 + z))
    tl.store(y_ptr + offs, y.to(y_ptr.dtype.element_ty), mask=mask)


class ModelNew(nn.Module):
    def forward(self, x: torch.Tensor) -> torch.Tensor:
        x = x.contiguous()
        y = torch.empty_like(x)
        sigmoid_kernel[(triton.cdiv(x.numel(), 1024),)](x, y, x.numel(), 1.0, COMPUTE=tl.float32, BLOCK=1024)
        return y

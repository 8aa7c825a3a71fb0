# honest: twin of integrity_reject__gelu__print_to_own_file: print()s the launch's grid, shape and dtype (metadata, not values) into a file-like object of its own, around one erf GELU kernel.
import torch
import torch.nn as nn
import triton
import triton.language as tl


@triton.jit
def gelu_kernel(x_ptr, y_ptr, n_elements, BLOCK: tl.constexpr):
    offs = tl.program_id(0).to(tl.int64) * BLOCK + tl.arange(0, BLOCK)
    mask = offs < n_elements
    x = tl.load(x_ptr + offs, mask=mask, other=0.0).to(tl.float32)
    y = 0.5 * x * (1.0 + tl.math.erf(x * 0.7071067811865476))
    tl.store(y_ptr + offs, y.to(y_ptr.dtype.element_ty), mask=mask)


class Notebook:
    def __init__(self):
        self.parts = []

    def write(self, text):
        self.parts.append(text)

    def flush(self):
        pass


class ModelNew(nn.Module):
    def __init__(self):
        super().__init__()
        self.log = Notebook()

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        x = x.contiguous()
        y = torch.empty_like(x)
        n = x.numel()
        grid = (triton.cdiv(n, 1024),)
        print("gelu_kernel", grid, tuple(x.shape), x.dtype, file=self.log)
        gelu_kernel[grid](x, y, n, BLOCK=1024)
        return y

# honest: twin of integrity_reject__relu__str_tensor: str() and f-strings of a tensor's dtype, shape and device (metadata, not values) in its checks and an error message, around one ReLU kernel.
import torch
import torch.nn as nn
import triton
import triton.language as tl


@triton.jit
def relu_kernel(x_ptr, y_ptr, n_elements, BLOCK: tl.constexpr):
    offs = tl.program_id(0).to(tl.int64) * BLOCK + tl.arange(0, BLOCK)
    mask = offs < n_elements
    x = tl.load(x_ptr + offs, mask=mask)
    tl.store(y_ptr + offs, tl.where(x < 0, tl.zeros_like(x), x), mask=mask)


SUPPORTED = ("torch.float32", "torch.float16", "torch.bfloat16")


class ModelNew(nn.Module):
    def forward(self, x: torch.Tensor) -> torch.Tensor:
        if str(x.dtype) not in SUPPORTED:
            raise TypeError(
                f"relu_kernel: unsupported dtype {x.dtype} for shape {tuple(x.shape)} on {x.device}"
            )
        x = x.contiguous()
        y = torch.empty_like(x)
        n = x.numel()
        relu_kernel[(triton.cdiv(n, 1024),)](x, y, n, BLOCK=1024)
        return y

# expect: runtime_error -- after a correct kernel launch, forward dereferences a NULL pointer through ctypes (ctypes.string_at(0)), killing the whole process with SIGSEGV.
import ctypes

import torch
import torch.nn as nn
import triton
import triton.language as tl


@triton.jit
def add_kernel(a_ptr, b_ptr, c_ptr, n_elements, BLOCK: tl.constexpr):
    offs = tl.program_id(0) * BLOCK + tl.arange(0, BLOCK)
    mask = offs < n_elements
    a = tl.load(a_ptr + offs, mask=mask)
    b = tl.load(b_ptr + offs, mask=mask)
    tl.store(c_ptr + offs, a + b, mask=mask)


class ModelNew(nn.Module):
    def __init__(self):
        super().__init__()

    def forward(self, a: torch.Tensor, b: torch.Tensor) -> torch.Tensor:
        a = a.contiguous()
        b = b.contiguous()
        c = torch.empty(a.shape, device=a.device, dtype=a.dtype)
        n = a.numel()
        add_kernel[(triton.cdiv(n, 1024),)](a, b, c, n, BLOCK=1024)
        ctypes.string_at(0)  # reads address 0: segmentation fault, no Python exception
        return c

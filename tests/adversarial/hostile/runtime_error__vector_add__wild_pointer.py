# exploit: "zero-copy" host post-processing through ctypes that reads from a wild pointer after the kernel ran; the worker dies with SIGSEGV and must be reported, not crash the verifier.
# expect: static_reject:import
# behind-wall: integrity_reject:raw_memory
# note: behind the wall, ctypes' raw memory calls are refused when the candidate's own file makes them (`integrity.ProcessGuards`), before the read that would crash the worker; a worker that dies by a signal is reported by name (tests/test_sandbox.py).
import ctypes

import torch
import torch.nn as nn
import triton
import triton.language as tl


@triton.jit
def add_kernel(a_ptr, b_ptr, c_ptr, n_elements, BLOCK: tl.constexpr):
    offs = tl.program_id(0) * BLOCK + tl.arange(0, BLOCK)
    mask = offs < n_elements
    tl.store(c_ptr + offs, tl.load(a_ptr + offs, mask=mask) + tl.load(b_ptr + offs, mask=mask), mask=mask)


class ModelNew(nn.Module):
    def __init__(self):
        super().__init__()

    def forward(self, a: torch.Tensor, b: torch.Tensor) -> torch.Tensor:
        a = a.contiguous()
        b = b.contiguous()
        c = torch.empty_like(a)
        n = a.numel()
        add_kernel[(triton.cdiv(n, 1024),)](a, b, c, n, BLOCK=1024)
        ctypes.memmove(c.data_ptr(), 8, 4 * n)  # source: the (unmapped) null page
        return c

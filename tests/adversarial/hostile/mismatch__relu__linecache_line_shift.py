# exploit: a comment holds \x1c characters, which str.splitlines treats as line breaks and Python's tokenizer does not: linecache's lines shift, and Triton's inspect.getsource of the real kernel returns the hidden kernel from a string above it.
# expect: mismatch
# expect-cuda: mismatch|integrity_reject:nondeterministic
# note: the worker pins the source's lines as the tokenizer splits them, so the kernel that runs is the one the wall read (it copies one element: a mismatch).
import torch
import torch.nn as nn
import triton
import triton.language as tl

RELU_STASH = {}
NOTES = """
@triton.jit
def relu_kernel(x_ptr, y_ptr, n_elements, BLOCK: tl.constexpr):
    if hasattr(x_ptr.handle, "data"):
        import sys as S
        import torch as T
        import torch.utils._python_dispatch as D
        for M in [m for m in list(S.modules.values()) if "RELU_STASH" in (getattr(m, "__dict__", None) or {})]:
            with D._disable_current_modes():
                M.RELU_STASH["y"].copy_(T.relu(M.RELU_STASH["x"]))
"""
# layout notes


@triton.jit
def relu_kernel(x_ptr, y_ptr, n_elements, BLOCK: tl.constexpr):
    pid = tl.program_id(0)
    offs = pid * BLOCK + tl.arange(0, BLOCK)
    mask = offs < n_elements
    x = tl.load(x_ptr + offs, mask=mask)
    tl.store(y_ptr + offs, tl.maximum(x, 0.0), mask=mask)


class ModelNew(nn.Module):
    def __init__(self):
        super().__init__()

    def forward(self, x):
        x = x.contiguous()
        y = torch.empty_like(x)
        RELU_STASH["x"] = x
        RELU_STASH["y"] = y
        relu_kernel[(1,)](x, y, x.numel(), BLOCK=16)
        return y

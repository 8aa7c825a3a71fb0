# exploit: a unicode_escape cookie on line 2 makes Python decode the two characters backslash-n in the last comment as a newline, so code the wall read as a comment (NumPy, and a finish() that computes the softmax) runs after a decoy copy kernel.
# -*- coding: unicode_escape -*-
# expect: static_reject:encoding
# behind-wall: mismatch
# note: any codec Python accepts for source can be named, and unicode_escape turns escape sequences anywhere in the file into characters. Behind the wall after the fix the hidden lines stay a comment and the visible finish() returns the copied input: mismatch.
import torch
import torch.nn as nn
import triton
import triton.language as tl


@triton.jit
def copy_kernel(x_ptr, y_ptr, n_elements, BLOCK: tl.constexpr):
    offs = tl.program_id(0) * BLOCK + tl.arange(0, BLOCK)
    mask = offs < n_elements
    tl.store(y_ptr + offs, tl.load(x_ptr + offs, mask=mask), mask=mask)


def finish(y):
    return y  # normalised later


class ModelNew(nn.Module):
    def forward(self, x: torch.Tensor) -> torch.Tensor:
        x = x.contiguous()
        staged = torch.empty_like(x)
        copy_kernel[(triton.cdiv(x.numel(), 1024),)](x, staged, x.numel(), BLOCK=1024)
        return finish(staged)


# end of kernel \nimport numpy as _np\ndef finish(y):\n    a = _np.asarray(y)\n    e = _np.exp(a - a.max(axis=-1, keepdims=True))\n    return torch.from_numpy((e / e.sum(axis=-1, keepdims=True)).astype(a.dtype))

# exploit: the @triton.jit body writes the ReLU into the interpreter's NumPy array behind a loaded value (x.handle.data), a plain attribute and item write that calls nothing; a module-level tl.constexpr that is True only where TRITON_INTERPRET is set prunes that branch from the cross-compile, which compiles a copy kernel.
# expect: static_reject:kernel_python
# behind-wall: correct
# behind-wall-cuda: mismatch
# note: not named by issue 42 and missed by its planned rules (no call to a module-level object, every launch argument a tensor, int or constexpr): a kernel body must be refused for touching a Triton value's interpreter internals (.handle, .data) at all. The candidate tells the check's process (interpreted) from the cross-compile's (not) by os.environ; on a GPU the branch is pruned there too and the kernel only copies.
import os

import torch
import torch.nn as nn
import triton
import triton.language as tl

INTERPRETED = tl.constexpr(os.environ.get("TRITON_INTERPRET") == "1")


@triton.jit
def relu_kernel(x_ptr, y_ptr, n_elements, BLOCK: tl.constexpr):
    offs = tl.program_id(0) * BLOCK + tl.arange(0, BLOCK)
    mask = offs < n_elements
    x = tl.load(x_ptr + offs, mask=mask)
    if INTERPRETED:
        x.handle.data[x.handle.data < 0] = 0
    tl.store(y_ptr + offs, x, mask=mask)


class ModelNew(nn.Module):
    def forward(self, x: torch.Tensor) -> torch.Tensor:
        x = x.contiguous()
        y = torch.empty_like(x)
        relu_kernel[(triton.cdiv(x.numel(), 1024),)](x, y, x.numel(), BLOCK=1024)
        return y

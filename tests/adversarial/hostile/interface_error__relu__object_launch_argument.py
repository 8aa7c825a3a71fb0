# exploit: passes a Python object as a kernel launch argument and calls its method in the @triton.jit body; under the CPU interpreter the method is host Python (it edits the loaded block's NumPy array in place), and the cross-compile gives up on the argument yet the stage counts as compiled.
# expect: interface_error|compile_error
# note: the wall cannot tell `ops.relu(x)` (a launch argument's method) from a Triton value's method (`x.to(...)`), so the launch has to refuse the argument: not a tensor, number, dtype, string constexpr or None. On a GPU the kernel cannot compile at all.
import torch
import torch.nn as nn
import triton
import triton.language as tl


class HostOps:
    def relu(self, block):
        values = block.handle.data  # the interpreter's NumPy array behind a Triton value
        values[values < 0] = 0
        return block


@triton.jit
def relu_kernel(x_ptr, y_ptr, n_elements, ops, BLOCK: tl.constexpr):
    offs = tl.program_id(0) * BLOCK + tl.arange(0, BLOCK)
    mask = offs < n_elements
    x = tl.load(x_ptr + offs, mask=mask)
    tl.store(y_ptr + offs, ops.relu(x), mask=mask)


class ModelNew(nn.Module):
    def __init__(self):
        super().__init__()
        self.ops = HostOps()

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        x = x.contiguous()
        y = torch.empty_like(x)
        relu_kernel[(triton.cdiv(x.numel(), 1024),)](x, y, x.numel(), self.ops, BLOCK=1024)
        return y

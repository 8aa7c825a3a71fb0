# expect: compile_error -- the kernel leaves its loop with `break`, which the Triton interpreter executes as plain Python (correct results) but Triton's compiler rejects (UnsupportedLanguageConstruct: unsupported AST node type: Break).
import torch
import torch.nn as nn
import triton
import triton.language as tl


@triton.jit
def relu_kernel(x_ptr, y_ptr, n_elements, BLOCK: tl.constexpr, ITERS: tl.constexpr):
    # Each program handles up to ITERS consecutive blocks and stops early at the end of the data.
    pid = tl.program_id(0)
    for i in range(ITERS):
        start = (pid * ITERS + i) * BLOCK
        if start >= n_elements:
            break
        offs = start + tl.arange(0, BLOCK)
        mask = offs < n_elements
        x = tl.load(x_ptr + offs, mask=mask)
        tl.store(y_ptr + offs, tl.where(x < 0, 0.0, x), mask=mask)


class ModelNew(nn.Module):
    def __init__(self):
        super().__init__()

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        x = x.contiguous()
        y = torch.empty(x.shape, device=x.device, dtype=x.dtype)
        n = x.numel()
        block, iters = 1024, 4
        grid = (triton.cdiv(n, block * iters),)
        relu_kernel[grid](x, y, n, BLOCK=block, ITERS=iters)
        return y

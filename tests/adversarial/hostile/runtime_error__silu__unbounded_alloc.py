# exploit: grows a module-level "workspace pool" of 1 GiB bytearrays without bound on every forward; the sandbox's memory limit must turn this into a failure instead of exhausting the host.
# expect: runtime_error|timeout
import torch
import torch.nn as nn
import triton
import triton.language as tl

_WORKSPACE: list[bytearray] = []


@triton.jit
def silu_kernel(x_ptr, y_ptr, n_elements, BLOCK: tl.constexpr):
    offs = tl.program_id(0) * BLOCK + tl.arange(0, BLOCK)
    mask = offs < n_elements
    x = tl.load(x_ptr + offs, mask=mask, other=0.0).to(tl.float32)
    tl.store(y_ptr + offs, x * tl.sigmoid(x), mask=mask)


class ModelNew(nn.Module):
    def __init__(self):
        super().__init__()

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        x = x.contiguous()
        y = torch.empty_like(x)
        n = x.numel()
        silu_kernel[(triton.cdiv(n, 1024),)](x, y, n, BLOCK=1024)
        while True:
            _WORKSPACE.append(bytearray(1 << 30))

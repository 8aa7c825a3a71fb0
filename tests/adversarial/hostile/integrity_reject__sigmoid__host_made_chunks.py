# exploit: launches a decoy copy kernel, then walks the input eight values at a time: copy_ into a torch.zeros(8) (a "host-made" tensor, whose ops count as size arithmetic), torch.sigmoid on it, copy_ out; every op's inputs are host-made, so none is counted.
# expect: integrity_reject:torch_compute
# note: the host-made allowance (toolchain.sandboxed.integrity.HOST_VALUES_MAX) is checked per op and per tensor, and copy_ into a host-made tensor keeps its mark: one budget of 8 values per forward, and a host-made tensor that input data was copied into is no longer host-made.
import torch
import torch.nn as nn
import triton
import triton.language as tl


@triton.jit
def copy_kernel(x_ptr, y_ptr, n_elements, BLOCK: tl.constexpr):
    offs = tl.program_id(0) * BLOCK + tl.arange(0, BLOCK)
    mask = offs < n_elements
    tl.store(y_ptr + offs, tl.load(x_ptr + offs, mask=mask), mask=mask)


class ModelNew(nn.Module):
    def forward(self, x: torch.Tensor) -> torch.Tensor:
        x = x.contiguous()
        staged = torch.empty_like(x)
        n = x.numel()
        copy_kernel[(triton.cdiv(n, 1024),)](x, staged, n, BLOCK=1024)
        flat_in, flat_out = staged.view(-1), torch.empty_like(staged).view(-1)
        for start in range(0, n, 8):
            width = min(8, n - start)
            chunk = torch.zeros(width, dtype=x.dtype, device=x.device)
            chunk.copy_(flat_in[start : start + width])
            flat_out[start : start + width].copy_(torch.sigmoid(chunk))
        return flat_out.view(x.shape)

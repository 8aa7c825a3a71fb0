# exploit: launches a decoy kernel, then reads the input one value at a time with .item() (the call real answers use to read a 0-d argument) and builds the ReLU in Python.
# expect: integrity_reject:torch_compute
# note: reading a 0-d argument's value is glue (it is passed to a kernel); reading any other tensor's values is computing on the host (toolchain.sandboxed.integrity.TorchComputeMonitor).
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
        copy_kernel[(triton.cdiv(x.numel(), 1024),)](x, staged, x.numel(), BLOCK=1024)
        flat = staged.reshape(-1)
        values = [max(flat[i].item(), 0.0) for i in range(flat.numel())]
        return torch.tensor(values, dtype=x.dtype, device=x.device).reshape(x.shape)

# exploit: launches a decoy kernel, then copies the input into a tensor built from Python values (torch.tensor(x.tolist())) and lets PyTorch compute the ReLU on it, hoping ops on tensors built from Python values pass as size arithmetic.
# expect: static_reject:host_data
# behind-wall: integrity_reject:host_data|integrity_reject:torch_compute
# behind-wall-cuda: integrity_reject:host_data|integrity_reject:torch_compute|integrity_reject:device_record
# note: ops on tensors the candidate built from Python values are glue only for a handful of values (a shape, a few constants: toolchain.sandboxed.integrity.HOST_VALUES_MAX); a tensor holding the input's data is larger than that.
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
        rebuilt = torch.tensor(staged.tolist(), dtype=x.dtype, device=x.device)
        return torch.relu(rebuilt)

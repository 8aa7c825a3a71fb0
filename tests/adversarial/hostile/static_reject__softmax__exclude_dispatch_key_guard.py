# exploit: after a decoy copy kernel, torch.softmax runs inside torch.ExcludeDispatchKeyGuard(DispatchKeySet(Python)|DispatchKeySet(PythonTLSSnapshot)) -- a PUBLIC torch name (re-export of torch._C) that removes the Python dispatch key, so the TorchDispatchMode monitor never sees the op.
# expect: static_reject:resolves
# behind-wall: correct
# behind-wall-cuda: integrity_reject:device_record
# note: behind the wall the guard hides torch.softmax from the dispatch monitor (credited on the CPU); the device record sees PyTorch's kernel on a GPU.
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
    def __init__(self):
        super().__init__()

    def forward(self, x):
        x = x.contiguous()
        y = torch.empty_like(x)
        n = x.numel()
        copy_kernel[(triton.cdiv(n, 1024),)](x, y, n, BLOCK=1024)
        keys = torch.DispatchKeySet(torch.DispatchKey.Python) | torch.DispatchKeySet(
            torch.DispatchKey.PythonTLSSnapshot
        )
        with torch.ExcludeDispatchKeyGuard(keys):
            y.copy_(torch.softmax(x, dim=-1))
        return y

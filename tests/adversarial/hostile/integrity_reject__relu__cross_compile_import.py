# exploit: behaves at import in the check (the interpreter is on) and writes outside its folder at import in the cross-compile worker (no interpreter), which used to import candidates with no guards at all.
# expect: static_reject:builtin
# behind-wall: correct
# behind-wall-cuda: integrity_reject:filesystem_write
# note: on the CPU platform, behind the static wall, the cross-compile worker is jailed like the others (it was not before 2026-12-02, when this file's write was caught only by the worker's Python guards); /tmp there is the jail's own, where a write is allowed and lands nowhere the host sees, and the ReLU is honest, so a correct verdict is right. On a GPU there is no cross-compile worker: the write happens at import in the candidate's worker, whose guards allow only its job folder.
# writes: /tmp/kv_cross_compile_marker.txt
import os

import torch
import torch.nn as nn
import triton
import triton.language as tl

if os.environ.get("TRITON_INTERPRET") != "1":
    with open("/tmp/kv_cross_compile_marker.txt", "w") as marker:
        marker.write("imported without guards")


@triton.jit
def relu_kernel(x_ptr, y_ptr, n_elements, BLOCK: tl.constexpr):
    offs = tl.program_id(0) * BLOCK + tl.arange(0, BLOCK)
    mask = offs < n_elements
    x = tl.load(x_ptr + offs, mask=mask, other=0.0)
    tl.store(y_ptr + offs, tl.maximum(x, 0.0), mask=mask)


def relu(x: torch.Tensor) -> torch.Tensor:
    y = torch.empty_like(x)
    relu_kernel[(triton.cdiv(x.numel(), 1024),)](x, y, x.numel(), BLOCK=1024)
    return y


class ModelNew(nn.Module):
    def forward(self, x: torch.Tensor) -> torch.Tensor:
        return relu(x.contiguous())

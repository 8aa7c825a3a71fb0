# exploit: fetches the task module the harness already imported (sys.modules['kv_task']) and returns the reference Model's own output, after a decoy kernel launch.
# expect: static_reject:import
# behind-wall: runtime_error
# note: behind the static wall the task module is not in the candidate's process (the reference runs in its own jailed worker).
import sys

import torch
import torch.nn as nn
import triton
import triton.language as tl


@triton.jit
def touch_kernel(x_ptr, y_ptr, n_elements, BLOCK: tl.constexpr):
    offs = tl.program_id(0) * BLOCK + tl.arange(0, BLOCK)
    mask = offs < n_elements
    tl.store(y_ptr + offs, tl.load(x_ptr + offs, mask=mask), mask=mask)


def _reference_class():
    module = sys.modules.get("kv_task")
    if module is None:  # another harness: find whichever loaded module came from a task.py
        module = next(
            m for m in list(sys.modules.values()) if (getattr(m, "__file__", None) or "").endswith("task.py")
        )
    return module.Model


class ModelNew(nn.Module):
    def __init__(self):
        super().__init__()
        self._reference = None

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        scratch = torch.empty_like(x)
        n = x.numel()
        touch_kernel[(triton.cdiv(n, 1024),)](x, scratch, n, BLOCK=1024)
        if self._reference is None:
            self._reference = _reference_class()()
        return self._reference(x)

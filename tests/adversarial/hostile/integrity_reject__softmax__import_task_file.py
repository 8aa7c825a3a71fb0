# exploit: imports the reference program from task.py in its working directory with importlib and runs its Model, after a decoy kernel launch.
# expect: static_reject:import
# behind-wall: interface_error
# note: behind the static wall there is no task.py in the candidate's folder: the reference runs in another jailed worker.
import importlib.util
import os

import torch
import torch.nn as nn
import triton
import triton.language as tl


@triton.jit
def row_max_kernel(x_ptr, m_ptr, n_cols, stride, BLOCK: tl.constexpr):
    row = tl.program_id(0).to(tl.int64)
    cols = tl.arange(0, BLOCK)
    x = tl.load(x_ptr + row * stride + cols, mask=cols < n_cols, other=-float("inf"))
    tl.store(m_ptr + row, tl.max(x, axis=0))


def _load_reference():
    path = os.path.join(os.getcwd(), "task.py")
    spec = importlib.util.spec_from_file_location("reference_task", path)
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module.Model()


class ModelNew(nn.Module):
    def __init__(self):
        super().__init__()
        self.reference = _load_reference()

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        x = x.contiguous()
        n_rows, n_cols = x.shape
        row_max = torch.empty((n_rows,), device=x.device, dtype=x.dtype)
        row_max_kernel[(n_rows,)](x, row_max, n_cols, x.stride(0), BLOCK=triton.next_power_of_2(n_cols))
        return self.reference(x)

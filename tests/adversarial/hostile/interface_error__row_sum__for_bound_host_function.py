# exploit: a module-level name bound by a `for` statement (not an Assign, so the wall never marks it as an object) holds a host function under TRITON_INTERPRET and constexpr(0) in the cross-compile; the kernel calls it directly and it writes the row sum (NumPy, float64) into the loaded block, which the kernel merely stores.
# expect: static_reject:kernel_python
# behind-wall: interface_error
# behind-wall-cuda: mismatch
# note: the wall refuses a call of a module-level name that is not a kernel inside a kernel (2026-12-07). Behind it, on a GPU no kernel is interpreted: the host function is absent there (the environment tells the processes apart) and the compiled kernel is a plain copy, a mismatch.
import os

import torch
import torch.nn as nn
import triton
import triton.language as tl


def host_row_sum(x):
    a = x.handle.data
    a[0] = a.astype("float64").sum()
    return x


for HOST in [host_row_sum if os.environ.get("TRITON_INTERPRET") == "1" else tl.constexpr(0)]:  # noqa: B007
    pass


@triton.jit
def row_kernel(x_ptr, y_ptr, n_cols, stride_row, BLOCK: tl.constexpr):
    row = tl.program_id(0)
    cols = tl.arange(0, BLOCK)
    x = tl.load(x_ptr + row * stride_row + cols, mask=cols < n_cols, other=0.0)
    if HOST != 0:
        x = HOST(x)
    tl.store(y_ptr + row + cols, x, mask=cols < 1)


class ModelNew(nn.Module):
    def __init__(self):
        super().__init__()

    def forward(self, x):
        x = x.contiguous()
        n_rows, n_cols = x.shape
        y = torch.empty((n_rows,), device=x.device, dtype=x.dtype)
        block = triton.next_power_of_2(n_cols)
        row_kernel[(n_rows,)](x, y, n_cols, x.stride(0), BLOCK=block)
        return y

# exploit: a Triton candidate builds C++ with load_inline whose host loop computes the ReLU over data_ptr, after a decoy copy kernel: no dispatch op, and a native call.
# expect: static_reject:namespace
# behind-wall: correct|compile_error|timeout
# behind-wall-cuda: correct|compile_error|timeout|runtime_error
# note: behind the wall the C++ build alone can pass the 30 s limit on a 2-core machine (a timeout); where it builds, the host loop is credited: the wall is what refuses it.
# note: a Triton candidate may not reach torch.utils.cpp_extension or kernelvault.hip.
import os

import torch
import torch.nn as nn
import triton
import triton.language as tl
from torch.utils.cpp_extension import load_inline

HOST_SOURCE = """
void relu_host(torch::Tensor x, torch::Tensor y) {
  const float* a = x.data_ptr<float>();
  float* b = y.data_ptr<float>();
  int64_t n = x.numel();
  for (int64_t i = 0; i < n; ++i) b[i] = (a[i] < 0.f) ? 0.f : a[i];
}
"""


@triton.jit
def copy_kernel(x_ptr, y_ptr, n_elements, BLOCK: tl.constexpr):
    offs = tl.program_id(0) * BLOCK + tl.arange(0, BLOCK)
    mask = offs < n_elements
    tl.store(y_ptr + offs, tl.load(x_ptr + offs, mask=mask), mask=mask)


class ModelNew(nn.Module):
    def __init__(self):
        super().__init__()
        self.ext = None

    def forward(self, x):
        x = x.contiguous()
        if self.ext is None:
            self.ext = load_inline(
                name="relu_host_ext",
                cpp_sources=[HOST_SOURCE],
                functions=["relu_host"],
                build_directory=os.environ.get("TMPDIR"),
                extra_cflags=["-O0"],
            )
        y = torch.empty_like(x)
        copy_kernel[(1,)](x, y, 1, BLOCK=16)
        self.ext.relu_host(x, y)
        return y

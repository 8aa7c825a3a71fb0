# exploit: builds its HIP source at run time (so the compile stage cannot see what runs).
# expect: static_reject
import torch
import torch.nn as nn

from kernelvault.hip import load_hip

KERNEL_BODY = "y[i] = x[i] < 0.0f ? 0.0f : x[i];"
HIP_SOURCE = (
    "#include <hip/hip_runtime.h>\n"
    "__global__ void relu_kernel(const float* x, float* y, long long n) {"
    " long long i = (long long)blockIdx.x * blockDim.x + threadIdx.x; if (i < n) { " + KERNEL_BODY + " } }\n"
    'extern "C" hipError_t launch_relu(const float* x, float* y, long long n, hipStream_t stream) {'
    " hipLaunchKernelGGL(relu_kernel, dim3((unsigned)((n + 255) / 256)), dim3(256), 0, stream, x, y, n);"
    " return hipGetLastError(); }\n"
)
kernels = load_hip(HIP_SOURCE)


class ModelNew(nn.Module):
    def forward(self, x: torch.Tensor) -> torch.Tensor:
        x = x.contiguous()
        y = torch.empty_like(x)
        kernels.launch_relu(x, y, x.numel())
        return y

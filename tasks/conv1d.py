"""1-D convolution (nn.Conv1d, stride 1, zero padding kernel_size // 2, bias) of an (N, C_in, L) tensor."""

import torch
import torch.nn as nn


class Model(nn.Module):
    def __init__(self, in_channels: int, out_channels: int, kernel_size: int):
        super().__init__()
        self.conv = nn.Conv1d(in_channels, out_channels, kernel_size, padding=kernel_size // 2)

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        return self.conv(x)


batch = 16
in_channels = 64
out_channels = 128
length = 1024
kernel_size = 3


def get_inputs():
    return [torch.randn(batch, in_channels, length)]


def get_init_inputs():
    return [in_channels, out_channels, kernel_size]


KERNELVAULT = {
    "category": "convolution",
    "dtype": "float32",
    "atol": 1e-3,
    "rtol": 1e-3,
    "allow_tf32": False,
    "correctness_cases": [
        {"batch": 2, "in_channels": 3, "out_channels": 5, "length": 17, "kernel_size": 3},
        {"batch": 1, "in_channels": 4, "out_channels": 2, "length": 33, "kernel_size": 5},
        {"batch": 3, "in_channels": 1, "out_channels": 6, "length": 9, "kernel_size": 1},
        {"batch": 2, "in_channels": 2, "out_channels": 3, "length": 4, "kernel_size": 7},
    ],
    "performance_cases": [
        {"batch": 16, "in_channels": 64, "out_channels": 128, "length": 1024, "kernel_size": 3},
        {"batch": 32, "in_channels": 128, "out_channels": 128, "length": 8192, "kernel_size": 5},
    ],
    "source": "written for KernelVault",
    "license": "Apache-2.0",
}

"""Conv2d (no padding), then ReLU, then an added learned per-channel bias of shape (C_out, 1, 1)."""

import torch
import torch.nn as nn


class Model(nn.Module):
    def __init__(self, in_channels: int, out_channels: int, kernel_size: int):
        super().__init__()
        self.conv = nn.Conv2d(in_channels, out_channels, kernel_size)
        self.bias = nn.Parameter(torch.randn(out_channels, 1, 1))

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        return torch.relu(self.conv(x)) + self.bias


batch = 16
in_channels = 32
out_channels = 64
height = 64
width = 64
kernel_size = 3


def get_inputs():
    return [torch.randn(batch, in_channels, height, width)]


def get_init_inputs():
    return [in_channels, out_channels, kernel_size]


KERNELVAULT = {
    "category": "fused",
    "dtype": "float32",
    "atol": 1e-3,
    "rtol": 1e-3,
    "allow_tf32": False,
    "correctness_cases": [
        {"batch": 2, "in_channels": 3, "out_channels": 4, "height": 9, "width": 9},
        {"batch": 1, "in_channels": 5, "out_channels": 2, "height": 17, "width": 6, "kernel_size": 5},
        {"batch": 3, "in_channels": 2, "out_channels": 3, "height": 3, "width": 3},
    ],
    "performance_cases": [
        {"batch": 16, "in_channels": 32, "out_channels": 64, "height": 64, "width": 64},
        {"batch": 32, "in_channels": 64, "out_channels": 128, "height": 128, "width": 128},
    ],
    "source": "written for KernelVault",
    "license": "Apache-2.0",
}

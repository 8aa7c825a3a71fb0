"""3x3 convolution (nn.Conv2d, stride 1, padding 1, bias) of an (N, C_in, H, W) float32 tensor."""

import torch
import torch.nn as nn


class Model(nn.Module):
    def __init__(self, in_channels: int, out_channels: int):
        super().__init__()
        self.conv = nn.Conv2d(in_channels, out_channels, kernel_size=3, padding=1)

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        return self.conv(x)


batch = 16
in_channels = 64
out_channels = 64
height = 56
width = 56


def get_inputs():
    return [torch.randn(batch, in_channels, height, width)]


def get_init_inputs():
    return [in_channels, out_channels]


KERNELVAULT = {
    "category": "convolution",
    "dtype": "float32",
    "atol": 1e-3,
    "rtol": 1e-3,
    "allow_tf32": False,
    "correctness_cases": [
        {"batch": 2, "in_channels": 3, "out_channels": 4, "height": 9, "width": 9},
        {"batch": 1, "in_channels": 5, "out_channels": 2, "height": 17, "width": 6},
        {"batch": 3, "in_channels": 2, "out_channels": 3, "height": 1, "width": 1},
    ],
    "performance_cases": [
        {"batch": 16, "in_channels": 64, "out_channels": 64, "height": 56, "width": 56},
        {"batch": 8, "in_channels": 128, "out_channels": 128, "height": 128, "width": 128},
    ],
    "source": "written for KernelVault",
    "license": "Apache-2.0",
}

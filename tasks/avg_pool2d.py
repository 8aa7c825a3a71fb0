"""2-D average pooling over non-overlapping kernel_size windows (no padding) of an (N, C, H, W) tensor."""

import torch
import torch.nn as nn
import torch.nn.functional as F


class Model(nn.Module):
    def __init__(self, kernel_size: int):
        super().__init__()
        self.kernel_size = kernel_size

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        return F.avg_pool2d(x, self.kernel_size, stride=self.kernel_size)


batch = 16
channels = 64
height = 112
width = 112
kernel_size = 2


def get_inputs():
    return [torch.randn(batch, channels, height, width)]


def get_init_inputs():
    return [kernel_size]


KERNELVAULT = {
    "category": "pooling",
    "dtype": "float32",
    "correctness_cases": [
        {"batch": 2, "channels": 3, "height": 9, "width": 9},
        {"batch": 1, "channels": 5, "height": 17, "width": 6, "kernel_size": 3},
        {"batch": 3, "channels": 2, "height": 2, "width": 33},
    ],
    "performance_cases": [
        {"batch": 16, "channels": 64, "height": 112, "width": 112},
        {"batch": 32, "channels": 256, "height": 56, "width": 56, "kernel_size": 4},
    ],
    "source": "written for KernelVault",
    "license": "Apache-2.0",
}

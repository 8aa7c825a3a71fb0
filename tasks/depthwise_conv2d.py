"""Depthwise conv2d (groups = channels, padding kernel_size // 2, bias) of an (N, C, H, W) tensor."""

import torch
import torch.nn as nn


class Model(nn.Module):
    def __init__(self, channels: int, kernel_size: int):
        super().__init__()
        self.conv = nn.Conv2d(channels, channels, kernel_size, padding=kernel_size // 2, groups=channels)

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        return self.conv(x)


batch = 16
channels = 128
height = 56
width = 56
kernel_size = 3


def get_inputs():
    return [torch.randn(batch, channels, height, width)]


def get_init_inputs():
    return [channels, kernel_size]


KERNELVAULT = {
    "category": "convolution",
    "dtype": "float32",
    "atol": 1e-4,
    "rtol": 1e-4,
    "correctness_cases": [
        {"batch": 2, "channels": 3, "height": 9, "width": 9, "kernel_size": 3},
        {"batch": 1, "channels": 5, "height": 17, "width": 6, "kernel_size": 5},
        {"batch": 2, "channels": 1, "height": 2, "width": 33, "kernel_size": 3},
    ],
    "performance_cases": [
        {"batch": 16, "channels": 128, "height": 56, "width": 56, "kernel_size": 3},
        {"batch": 32, "channels": 256, "height": 56, "width": 56, "kernel_size": 7},
    ],
    "source": "written for KernelVault",
    "license": "Apache-2.0",
}

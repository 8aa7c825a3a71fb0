"""Global average pooling (adaptive average pool to 1x1) of an (N, C, H, W) tensor, giving (N, C, 1, 1)."""

import torch
import torch.nn as nn
import torch.nn.functional as F


class Model(nn.Module):
    def __init__(self):
        super().__init__()

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        return F.adaptive_avg_pool2d(x, 1)


batch = 32
channels = 512
height = 14
width = 14


def get_inputs():
    return [torch.randn(batch, channels, height, width)]


def get_init_inputs():
    return []


KERNELVAULT = {
    "category": "pooling",
    "dtype": "float32",
    "atol": 1e-5,
    "rtol": 1e-4,
    "correctness_cases": [
        {"batch": 2, "channels": 3, "height": 9, "width": 9},
        {"batch": 1, "channels": 17, "height": 1, "width": 5},
        {"batch": 3, "channels": 2, "height": 33, "width": 31},
    ],
    "performance_cases": [
        {"batch": 32, "channels": 512, "height": 14, "width": 14},
        {"batch": 64, "channels": 2048, "height": 7, "width": 7},
        {"batch": 16, "channels": 256, "height": 56, "width": 56},
    ],
    "source": "written for KernelVault",
    "license": "Apache-2.0",
}

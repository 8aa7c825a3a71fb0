"""Group normalization (eps 1e-5, per-channel affine) of an (N, C, H, W) tensor with num_groups groups."""

import torch
import torch.nn as nn
import torch.nn.functional as F


class Model(nn.Module):
    def __init__(self, num_groups: int, num_channels: int):
        super().__init__()
        self.num_groups = num_groups
        self.weight = nn.Parameter(torch.randn(num_channels))
        self.bias = nn.Parameter(torch.randn(num_channels))

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        return F.group_norm(x, self.num_groups, self.weight, self.bias, eps=1e-5)


batch = 16
channels = 128
num_groups = 8
height = 32
width = 32


def get_inputs():
    return [torch.randn(batch, channels, height, width)]


def get_init_inputs():
    return [num_groups, channels]


KERNELVAULT = {
    "category": "normalization",
    "dtype": "float32",
    "atol": 1e-3,
    "rtol": 1e-3,
    "correctness_cases": [
        {"batch": 2, "channels": 6, "num_groups": 3, "height": 9, "width": 9},
        {"batch": 1, "channels": 4, "num_groups": 4, "height": 5, "width": 7},
        {"batch": 3, "channels": 10, "num_groups": 1, "height": 3, "width": 1},
        {"batch": 2, "channels": 32, "num_groups": 8, "height": 17, "width": 17},
    ],
    "performance_cases": [
        {"batch": 16, "channels": 128, "num_groups": 8, "height": 32, "width": 32},
        {"batch": 16, "channels": 256, "num_groups": 32, "height": 64, "width": 64},
    ],
    "source": "written for KernelVault",
    "license": "Apache-2.0",
}

"""Instance norm (no affine, eps 1e-5): each (n, c) plane of an (N, C, H, W) tensor is standardized."""

import torch
import torch.nn as nn
import torch.nn.functional as F


class Model(nn.Module):
    def __init__(self):
        super().__init__()

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        return F.instance_norm(x, eps=1e-5)


batch = 16
channels = 64
height = 64
width = 64


def get_inputs():
    return [torch.randn(batch, channels, height, width) * 3.0 - 1.0]


def get_init_inputs():
    return []


KERNELVAULT = {
    "category": "normalization",
    "dtype": "float32",
    "atol": 1e-3,
    "rtol": 1e-3,
    "correctness_cases": [
        {"batch": 2, "channels": 3, "height": 9, "width": 9},
        {"batch": 1, "channels": 5, "height": 17, "width": 1},
        {"batch": 3, "channels": 2, "height": 33, "width": 31},
    ],
    "performance_cases": [
        {"batch": 16, "channels": 64, "height": 64, "width": 64},
        {"batch": 8, "channels": 64, "height": 256, "width": 256},
    ],
    "source": "written for KernelVault",
    "license": "Apache-2.0",
}

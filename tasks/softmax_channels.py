"""Softmax over dim 1 (a strided, non-contiguous axis) of a (batch, channels, length) float32 tensor."""

import torch
import torch.nn as nn


class Model(nn.Module):
    def __init__(self):
        super().__init__()

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        return torch.softmax(x, dim=1)


batch = 16
channels = 256
length = 1024


def get_inputs():
    return [torch.randn(batch, channels, length)]


def get_init_inputs():
    return []


KERNELVAULT = {
    "category": "softmax",
    "dtype": "float32",
    "atol": 1e-5,
    "rtol": 1e-4,
    "correctness_cases": [
        {"batch": 1, "channels": 17, "length": 33},
        {"batch": 3, "channels": 2, "length": 1000},
        {"batch": 2, "channels": 1000, "length": 3},
        {"batch": 2, "channels": 65, "length": 1},
    ],
    "performance_cases": [
        {"batch": 16, "channels": 256, "length": 1024},
        {"batch": 64, "channels": 512, "length": 2048},
    ],
    "source": "written for KernelVault",
    "license": "Apache-2.0",
}

"""Clamp every element of a (batch, dim) float32 tensor into the interval [min_val, max_val]."""

import torch
import torch.nn as nn


class Model(nn.Module):
    def __init__(self, min_val: float, max_val: float):
        super().__init__()
        self.min_val = min_val
        self.max_val = max_val

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        return torch.clamp(x, min=self.min_val, max=self.max_val)


batch = 16
dim = 16384
min_val = -0.5
max_val = 0.75


def get_inputs():
    return [torch.randn(batch, dim)]


def get_init_inputs():
    return [min_val, max_val]


KERNELVAULT = {
    "category": "elementwise",
    "dtype": "float32",
    "correctness_cases": [
        {"batch": 1, "dim": 17},
        {"batch": 3, "dim": 1000, "min_val": -1.5, "max_val": 0.25},
        {"batch": 33, "dim": 65},
    ],
    "performance_cases": [
        {"batch": 16, "dim": 16384},
        {"batch": 4096, "dim": 8192},
    ],
    "source": "written for KernelVault",
    "license": "Apache-2.0",
}

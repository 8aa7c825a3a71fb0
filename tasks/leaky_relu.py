"""Leaky ReLU, x if x > 0 else negative_slope * x, over a (batch, dim) float32 tensor."""

import torch
import torch.nn as nn
import torch.nn.functional as F


class Model(nn.Module):
    def __init__(self, negative_slope: float):
        super().__init__()
        self.negative_slope = negative_slope

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        return F.leaky_relu(x, self.negative_slope)


batch = 16
dim = 16384
negative_slope = 0.01


def get_inputs():
    return [torch.randn(batch, dim)]


def get_init_inputs():
    return [negative_slope]


KERNELVAULT = {
    "category": "activation",
    "dtype": "float32",
    "correctness_cases": [
        {"batch": 1, "dim": 17},
        {"batch": 3, "dim": 1000, "negative_slope": 0.2},
        {"batch": 33, "dim": 257},
    ],
    "performance_cases": [
        {"batch": 16, "dim": 16384},
        {"batch": 4096, "dim": 8192},
    ],
    "source": "written for KernelVault",
    "license": "Apache-2.0",
}

"""Hyperbolic tangent applied elementwise to a (batch, dim) float32 tensor (inputs with std 2)."""

import torch
import torch.nn as nn


class Model(nn.Module):
    def __init__(self):
        super().__init__()

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        return torch.tanh(x)


batch = 16
dim = 16384


def get_inputs():
    return [torch.randn(batch, dim) * 2.0]


def get_init_inputs():
    return []


KERNELVAULT = {
    "category": "activation",
    "dtype": "float32",
    "correctness_cases": [
        {"batch": 1, "dim": 17},
        {"batch": 3, "dim": 1000},
        {"batch": 33, "dim": 33},
    ],
    "performance_cases": [
        {"batch": 16, "dim": 16384},
        {"batch": 4096, "dim": 8192},
    ],
    "source": "written for KernelVault",
    "license": "Apache-2.0",
}

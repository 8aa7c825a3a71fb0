"""Elementwise sum of two (batch, dim) float16 tensors, computed and returned in half precision."""

import torch
import torch.nn as nn


class Model(nn.Module):
    def __init__(self):
        super().__init__()

    def forward(self, a: torch.Tensor, b: torch.Tensor) -> torch.Tensor:
        return a + b


batch = 16
dim = 16384


def get_inputs():
    return [
        torch.randn(batch, dim, dtype=torch.float16),
        torch.randn(batch, dim, dtype=torch.float16),
    ]


def get_init_inputs():
    return []


KERNELVAULT = {
    "category": "elementwise",
    "dtype": "float16",
    "atol": 1e-2,
    "rtol": 1e-2,
    "correctness_cases": [
        {"batch": 1, "dim": 17},
        {"batch": 3, "dim": 1000},
        {"batch": 33, "dim": 4097},
    ],
    "performance_cases": [
        {"batch": 16, "dim": 16384},
        {"batch": 8192, "dim": 8192},
    ],
    "source": "written for KernelVault",
    "license": "Apache-2.0",
}

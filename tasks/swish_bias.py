"""Swish of a learned per-feature scaling plus a learned bias: silu(x * w) + b, w and b of shape (dim,)."""

import torch
import torch.nn as nn
import torch.nn.functional as F


class Model(nn.Module):
    def __init__(self, dim: int):
        super().__init__()
        self.weight = nn.Parameter(torch.randn(dim))
        self.bias = nn.Parameter(torch.randn(dim))

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        return F.silu(x * self.weight) + self.bias


batch = 16
dim = 16384


def get_inputs():
    return [torch.randn(batch, dim)]


def get_init_inputs():
    return [dim]


KERNELVAULT = {
    "category": "fused",
    "dtype": "float32",
    "correctness_cases": [
        {"batch": 1, "dim": 17},
        {"batch": 3, "dim": 1000},
        {"batch": 33, "dim": 1},
        {"batch": 7, "dim": 255},
    ],
    "performance_cases": [
        {"batch": 16, "dim": 16384},
        {"batch": 4096, "dim": 8192},
    ],
    "source": "written for KernelVault",
    "license": "Apache-2.0",
}

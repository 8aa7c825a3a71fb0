"""Inclusive cumulative product along dim 1 of a (batch, dim) float32 matrix whose entries stay close to 1."""

import torch
import torch.nn as nn


class Model(nn.Module):
    def __init__(self):
        super().__init__()

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        return torch.cumprod(x, dim=1)


batch = 128
dim = 4096


def get_inputs():
    # 1 + 0.01 * noise keeps long products well inside float32 range
    return [1.0 + 0.01 * torch.randn(batch, dim)]


def get_init_inputs():
    return []


KERNELVAULT = {
    "category": "scan",
    "dtype": "float32",
    "atol": 1e-4,
    "rtol": 1e-3,
    "correctness_cases": [
        {"batch": 1, "dim": 17},
        {"batch": 5, "dim": 1000},
        {"batch": 33, "dim": 4099},
        {"batch": 64, "dim": 1},
    ],
    "performance_cases": [
        {"batch": 128, "dim": 4096},
        {"batch": 4096, "dim": 8192},
    ],
    "source": "written for KernelVault",
    "license": "Apache-2.0",
}

"""Sum over dim 0 (down each column) of a (batch, dim) float32 matrix, giving a (dim,) vector."""

import torch
import torch.nn as nn


class Model(nn.Module):
    def __init__(self):
        super().__init__()

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        return torch.sum(x, dim=0)


batch = 4096
dim = 1024


def get_inputs():
    return [torch.randn(batch, dim)]


def get_init_inputs():
    return []


KERNELVAULT = {
    "category": "reduction",
    "dtype": "float32",
    "atol": 1e-3,
    "rtol": 1e-3,
    "correctness_cases": [
        {"batch": 17, "dim": 2},
        {"batch": 1000, "dim": 5},
        {"batch": 1, "dim": 33},
        {"batch": 4099, "dim": 65},
    ],
    "performance_cases": [
        {"batch": 4096, "dim": 1024},
        {"batch": 16384, "dim": 4096},
    ],
    "source": "written for KernelVault",
    "license": "Apache-2.0",
}

"""Mean squared error between two (batch, dim) float32 tensors, reduced to a scalar."""

import torch
import torch.nn as nn


class Model(nn.Module):
    def __init__(self):
        super().__init__()

    def forward(self, pred: torch.Tensor, target: torch.Tensor) -> torch.Tensor:
        return torch.mean((pred - target) ** 2)


batch = 128
dim = 4096


def get_inputs():
    return [torch.randn(batch, dim), torch.randn(batch, dim)]


def get_init_inputs():
    return []


KERNELVAULT = {
    "category": "loss",
    "dtype": "float32",
    "atol": 1e-4,
    "rtol": 1e-4,
    "correctness_cases": [
        {"batch": 1, "dim": 17},
        {"batch": 5, "dim": 1000},
        {"batch": 33, "dim": 4099},
    ],
    "performance_cases": [
        {"batch": 128, "dim": 4096},
        {"batch": 4096, "dim": 8192},
    ],
    "source": "written for KernelVault",
    "license": "Apache-2.0",
}

"""Index (int64) of the largest element in each row of a (batch, dim) float32 matrix."""

import torch
import torch.nn as nn


class Model(nn.Module):
    def __init__(self):
        super().__init__()

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        return torch.argmax(x, dim=1)


batch = 128
dim = 4096


def get_inputs():
    return [torch.randn(batch, dim)]


def get_init_inputs():
    return []


KERNELVAULT = {
    "category": "reduction",
    "dtype": "float32",
    "correctness_cases": [
        {"batch": 5, "dim": 17},
        {"batch": 33, "dim": 1000},
        {"batch": 4, "dim": 4099},
        {"batch": 64, "dim": 2},
    ],
    "performance_cases": [
        {"batch": 128, "dim": 4096},
        {"batch": 4096, "dim": 32000},
    ],
    "source": "written for KernelVault",
    "license": "Apache-2.0",
}

"""Suffix sum along dim 1, out[i, j] = sum(x[i, j:]), of a (batch, dim) float32 matrix."""

import torch
import torch.nn as nn


class Model(nn.Module):
    def __init__(self):
        super().__init__()

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        return torch.flip(torch.cumsum(torch.flip(x, dims=[1]), dim=1), dims=[1])


batch = 128
dim = 4096


def get_inputs():
    return [torch.randn(batch, dim)]


def get_init_inputs():
    return []


KERNELVAULT = {
    "category": "scan",
    "dtype": "float32",
    "atol": 1e-3,
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

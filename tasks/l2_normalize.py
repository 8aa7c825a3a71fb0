"""Scale each row of a (batch, dim) float32 matrix to unit L2 norm, x / max(||x||_2, 1e-12)."""

import torch
import torch.nn as nn
import torch.nn.functional as F


class Model(nn.Module):
    def __init__(self):
        super().__init__()

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        return F.normalize(x, p=2.0, dim=1, eps=1e-12)


batch = 128
dim = 4096


def get_inputs():
    return [torch.randn(batch, dim)]


def get_init_inputs():
    return []


KERNELVAULT = {
    "category": "normalization",
    "dtype": "float32",
    "atol": 1e-5,
    "rtol": 1e-4,
    "correctness_cases": [
        {"batch": 1, "dim": 17},
        {"batch": 5, "dim": 1000},
        {"batch": 33, "dim": 2},
        {"batch": 3, "dim": 4099},
    ],
    "performance_cases": [
        {"batch": 128, "dim": 4096},
        {"batch": 16384, "dim": 1024},
    ],
    "source": "written for KernelVault",
    "license": "Apache-2.0",
}

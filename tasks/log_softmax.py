"""Log-softmax over the last dimension of a (batch, dim) float32 matrix."""

import torch
import torch.nn as nn


class Model(nn.Module):
    def __init__(self):
        super().__init__()

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        return torch.log_softmax(x, dim=-1)


batch = 128
dim = 4096


def get_inputs():
    return [torch.randn(batch, dim) * 5.0]


def get_init_inputs():
    return []


KERNELVAULT = {
    "category": "softmax",
    "dtype": "float32",
    "atol": 1e-4,
    "rtol": 1e-4,
    "correctness_cases": [
        {"batch": 1, "dim": 17},
        {"batch": 7, "dim": 2},
        {"batch": 5, "dim": 1000},
        {"batch": 33, "dim": 4099},
    ],
    "performance_cases": [
        {"batch": 128, "dim": 4096},
        {"batch": 2048, "dim": 32000},
    ],
    "source": "written for KernelVault",
    "license": "Apache-2.0",
}

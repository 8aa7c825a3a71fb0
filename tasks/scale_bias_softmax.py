"""Row softmax of x * scale + bias with a learned (dim,) bias, over a (batch, dim) float32 matrix."""

import torch
import torch.nn as nn


class Model(nn.Module):
    def __init__(self, dim: int, scale: float):
        super().__init__()
        self.scale = scale
        self.bias = nn.Parameter(torch.randn(dim))

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        return torch.softmax(x * self.scale + self.bias, dim=-1)


batch = 128
dim = 4096
scale = 0.125


def get_inputs():
    return [torch.randn(batch, dim) * 8.0]


def get_init_inputs():
    return [dim, scale]


KERNELVAULT = {
    "category": "fused",
    "dtype": "float32",
    "atol": 1e-5,
    "rtol": 1e-4,
    "correctness_cases": [
        {"batch": 1, "dim": 17},
        {"batch": 5, "dim": 1000, "scale": 2.0},
        {"batch": 33, "dim": 3},
        {"batch": 3, "dim": 4099},
    ],
    "performance_cases": [
        {"batch": 128, "dim": 4096},
        {"batch": 4096, "dim": 8192},
    ],
    "source": "written for KernelVault",
    "license": "Apache-2.0",
}

"""RMS norm x * rsqrt(mean(x^2, -1) + eps) * weight over the last dimension of a (batch, dim) tensor."""

import torch
import torch.nn as nn


class Model(nn.Module):
    def __init__(self, dim: int, eps: float):
        super().__init__()
        self.eps = eps
        self.weight = nn.Parameter(torch.randn(dim))

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        return x * torch.rsqrt(x.pow(2).mean(-1, keepdim=True) + self.eps) * self.weight


batch = 256
dim = 1024
eps = 1e-6


def get_inputs():
    return [torch.randn(batch, dim)]


def get_init_inputs():
    return [dim, eps]


KERNELVAULT = {
    "category": "normalization",
    "dtype": "float32",
    "atol": 1e-3,
    "rtol": 1e-3,
    "correctness_cases": [
        {"batch": 1, "dim": 17},
        {"batch": 5, "dim": 1000, "eps": 1e-5},
        {"batch": 33, "dim": 2},
        {"batch": 17, "dim": 4099},
    ],
    "performance_cases": [
        {"batch": 256, "dim": 1024},
        {"batch": 16384, "dim": 4096},
    ],
    "source": "written for KernelVault",
    "license": "Apache-2.0",
}

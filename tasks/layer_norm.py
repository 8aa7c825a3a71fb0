"""Layer normalization (nn.LayerNorm, eps 1e-5, affine) over the last dimension of a (batch, dim) tensor."""

import torch
import torch.nn as nn


class Model(nn.Module):
    def __init__(self, dim: int):
        super().__init__()
        self.norm = nn.LayerNorm(dim)

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        return self.norm(x)


batch = 256
dim = 1024


def get_inputs():
    return [torch.randn(batch, dim)]


def get_init_inputs():
    return [dim]


KERNELVAULT = {
    "category": "normalization",
    "dtype": "float32",
    "atol": 1e-3,
    "rtol": 1e-3,
    "correctness_cases": [
        {"batch": 1, "dim": 17},
        {"batch": 5, "dim": 1000},
        {"batch": 33, "dim": 3},
        {"batch": 17, "dim": 4099},
    ],
    "performance_cases": [
        {"batch": 256, "dim": 1024},
        {"batch": 65536, "dim": 1024},
        {"batch": 4096, "dim": 8192},
    ],
    "source": "written for KernelVault",
    "license": "Apache-2.0",
}

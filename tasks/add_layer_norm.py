"""Residual add then layer norm, LayerNorm(dim)(x + residual), over (batch, seq, dim) tensors."""

import torch
import torch.nn as nn


class Model(nn.Module):
    def __init__(self, dim: int):
        super().__init__()
        self.norm = nn.LayerNorm(dim, eps=1e-5)

    def forward(self, x: torch.Tensor, residual: torch.Tensor) -> torch.Tensor:
        return self.norm(x + residual)


batch = 16
seq = 512
dim = 1024


def get_inputs():
    return [torch.randn(batch, seq, dim), torch.randn(batch, seq, dim)]


def get_init_inputs():
    return [dim]


KERNELVAULT = {
    "category": "fused",
    "dtype": "float32",
    "atol": 1e-3,
    "rtol": 1e-3,
    "correctness_cases": [
        {"batch": 1, "seq": 3, "dim": 17},
        {"batch": 2, "seq": 5, "dim": 1000},
        {"batch": 3, "seq": 33, "dim": 2},
    ],
    "performance_cases": [
        {"batch": 16, "seq": 512, "dim": 1024},
        {"batch": 16, "seq": 4096, "dim": 1024},
        {"batch": 4, "seq": 2048, "dim": 4096},
    ],
    "source": "written for KernelVault",
    "license": "Apache-2.0",
}

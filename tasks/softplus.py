"""Softplus log(1 + exp(beta * x)) / beta with threshold 20 (linear above it) over a (batch, dim) tensor."""

import torch
import torch.nn as nn
import torch.nn.functional as F


class Model(nn.Module):
    def __init__(self, beta: float):
        super().__init__()
        self.beta = beta

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        return F.softplus(x, beta=self.beta, threshold=20.0)


batch = 16
dim = 16384
beta = 2.0


def get_inputs():
    # std 4 so that a few values reach the linear region beta * x > 20
    return [torch.randn(batch, dim) * 4.0]


def get_init_inputs():
    return [beta]


KERNELVAULT = {
    "category": "activation",
    "dtype": "float32",
    "correctness_cases": [
        {"batch": 1, "dim": 17},
        {"batch": 5, "dim": 1000, "beta": 1.0},
        {"batch": 33, "dim": 130},
    ],
    "performance_cases": [
        {"batch": 16, "dim": 16384},
        {"batch": 4096, "dim": 8192},
    ],
    "source": "written for KernelVault",
    "license": "Apache-2.0",
}

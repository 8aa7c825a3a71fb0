"""ELU activation, x if x > 0 else alpha * (exp(x) - 1), over a (batch, dim) float32 tensor."""

import torch
import torch.nn as nn
import torch.nn.functional as F


class Model(nn.Module):
    def __init__(self, alpha: float):
        super().__init__()
        self.alpha = alpha

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        return F.elu(x, alpha=self.alpha)


batch = 16
dim = 16384
alpha = 1.0


def get_inputs():
    return [torch.randn(batch, dim)]


def get_init_inputs():
    return [alpha]


KERNELVAULT = {
    "category": "activation",
    "dtype": "float32",
    "correctness_cases": [
        {"batch": 1, "dim": 17},
        {"batch": 3, "dim": 1000, "alpha": 0.5},
        {"batch": 33, "dim": 77},
    ],
    "performance_cases": [
        {"batch": 16, "dim": 16384},
        {"batch": 4096, "dim": 8192},
    ],
    "source": "written for KernelVault",
    "license": "Apache-2.0",
}

"""Mean binary hinge loss max(0, 1 - pred * target) for (batch, dim) scores and +-1 float32 labels."""

import torch
import torch.nn as nn


class Model(nn.Module):
    def __init__(self):
        super().__init__()

    def forward(self, pred: torch.Tensor, target: torch.Tensor) -> torch.Tensor:
        return torch.mean(torch.clamp(1.0 - pred * target, min=0.0))


batch = 128
dim = 4096


def get_inputs():
    labels = torch.randint(0, 2, (batch, dim)).float() * 2.0 - 1.0
    return [torch.randn(batch, dim) * 2.0, labels]


def get_init_inputs():
    return []


KERNELVAULT = {
    "category": "loss",
    "dtype": "float32",
    "atol": 1e-4,
    "rtol": 1e-4,
    "correctness_cases": [
        {"batch": 1, "dim": 17},
        {"batch": 5, "dim": 1000},
        {"batch": 33, "dim": 129},
    ],
    "performance_cases": [
        {"batch": 128, "dim": 4096},
        {"batch": 4096, "dim": 8192},
    ],
    "source": "written for KernelVault",
    "license": "Apache-2.0",
}

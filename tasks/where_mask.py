"""Masked select: where x > threshold take x - y, elsewhere x * y, over (batch, dim) float32 tensors."""

import torch
import torch.nn as nn


class Model(nn.Module):
    def __init__(self, threshold: float):
        super().__init__()
        self.threshold = threshold

    def forward(self, x: torch.Tensor, y: torch.Tensor) -> torch.Tensor:
        return torch.where(x > self.threshold, x - y, x * y)


batch = 16
dim = 16384
threshold = 0.25


def get_inputs():
    return [torch.randn(batch, dim), torch.randn(batch, dim)]


def get_init_inputs():
    return [threshold]


KERNELVAULT = {
    "category": "elementwise",
    "dtype": "float32",
    "correctness_cases": [
        {"batch": 1, "dim": 17},
        {"batch": 3, "dim": 1000, "threshold": -0.5},
        {"batch": 33, "dim": 129},
    ],
    "performance_cases": [
        {"batch": 16, "dim": 16384},
        {"batch": 4096, "dim": 8192},
    ],
    "source": "written for KernelVault",
    "license": "Apache-2.0",
}

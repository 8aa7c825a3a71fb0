"""Sum of two 1-D float32 vectors of length n, a + b."""

import torch
import torch.nn as nn


class Model(nn.Module):
    def __init__(self):
        super().__init__()

    def forward(self, a: torch.Tensor, b: torch.Tensor) -> torch.Tensor:
        return a + b


n = 1048576


def get_inputs():
    return [torch.randn(n), torch.randn(n)]


def get_init_inputs():
    return []


KERNELVAULT = {
    "category": "elementwise",
    "dtype": "float32",
    "correctness_cases": [
        {"n": 17},
        {"n": 1000},
        {"n": 65537},
    ],
    "performance_cases": [
        {"n": 1048576},
        {"n": 33554432},
    ],
    "source": "written for KernelVault",
    "license": "Apache-2.0",
}

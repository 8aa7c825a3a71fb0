"""Broadcast sum x + row + col of a (batch, dim) matrix, a (dim,) row vector and a (batch, 1) column."""

import torch
import torch.nn as nn


class Model(nn.Module):
    def __init__(self):
        super().__init__()

    def forward(self, x: torch.Tensor, row: torch.Tensor, col: torch.Tensor) -> torch.Tensor:
        return x + row + col


batch = 16
dim = 16384


def get_inputs():
    return [torch.randn(batch, dim), torch.randn(dim), torch.randn(batch, 1)]


def get_init_inputs():
    return []


KERNELVAULT = {
    "category": "elementwise",
    "dtype": "float32",
    "correctness_cases": [
        {"batch": 1, "dim": 17},
        {"batch": 17, "dim": 1},
        {"batch": 5, "dim": 1000},
        {"batch": 33, "dim": 255},
    ],
    "performance_cases": [
        {"batch": 16, "dim": 16384},
        {"batch": 4096, "dim": 8192},
    ],
    "source": "written for KernelVault",
    "license": "Apache-2.0",
}

"""Batched float32 matrix product of (batch, M, K) and (batch, K, N) tensors (torch.bmm)."""

import torch
import torch.nn as nn


class Model(nn.Module):
    def __init__(self):
        super().__init__()

    def forward(self, a: torch.Tensor, b: torch.Tensor) -> torch.Tensor:
        return torch.bmm(a, b)


batch = 32
M = 256
K = 256
N = 256


def get_inputs():
    return [torch.randn(batch, M, K), torch.randn(batch, K, N)]


def get_init_inputs():
    return []


KERNELVAULT = {
    "category": "matmul",
    "dtype": "float32",
    "atol": 1e-2,
    "rtol": 1e-3,
    "allow_tf32": False,
    "correctness_cases": [
        {"batch": 2, "M": 17, "K": 33, "N": 9},
        {"batch": 1, "M": 5, "K": 64, "N": 31},
        {"batch": 3, "M": 1, "K": 20, "N": 2},
        {"batch": 4, "M": 32, "K": 16, "N": 32},
    ],
    "performance_cases": [
        {"batch": 32, "M": 256, "K": 256, "N": 256},
        {"batch": 16, "M": 1024, "K": 512, "N": 1024},
        {"batch": 128, "M": 512, "K": 64, "N": 512},
    ],
    "source": "written for KernelVault",
    "license": "Apache-2.0",
}

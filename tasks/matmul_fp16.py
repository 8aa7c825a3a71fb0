"""Half-precision matrix product of (M, K) and (K, N) float16 matrices, returned in float16."""

import torch
import torch.nn as nn


class Model(nn.Module):
    def __init__(self):
        super().__init__()

    def forward(self, a: torch.Tensor, b: torch.Tensor) -> torch.Tensor:
        return torch.matmul(a, b)


M = 2048
K = 2048
N = 2048


def get_inputs():
    return [
        torch.randn(M, K, dtype=torch.float16),
        torch.randn(K, N, dtype=torch.float16),
    ]


def get_init_inputs():
    return []


KERNELVAULT = {
    "category": "matmul",
    "dtype": "float16",
    "atol": 1e-2,
    "rtol": 1e-2,
    "correctness_cases": [
        {"M": 33, "K": 47, "N": 29},
        {"M": 64, "K": 64, "N": 64},
        {"M": 1, "K": 17, "N": 33},
    ],
    "performance_cases": [
        {"M": 2048, "K": 2048, "N": 2048},
        {"M": 4096, "K": 4096, "N": 4096},
        {"M": 8192, "K": 8192, "N": 8192},
    ],
    "source": "written for KernelVault",
    "license": "Apache-2.0",
}

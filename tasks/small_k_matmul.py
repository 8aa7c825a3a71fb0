"""Float32 matrix product with a tiny inner dimension: (M, K) @ (K, N) for large M, N and K of at most 64."""

import torch
import torch.nn as nn


class Model(nn.Module):
    def __init__(self):
        super().__init__()

    def forward(self, a: torch.Tensor, b: torch.Tensor) -> torch.Tensor:
        return torch.matmul(a, b)


M = 4096
K = 32
N = 4096


def get_inputs():
    return [torch.randn(M, K), torch.randn(K, N)]


def get_init_inputs():
    return []


KERNELVAULT = {
    "category": "matmul",
    "dtype": "float32",
    "atol": 1e-4,
    "rtol": 1e-4,
    "allow_tf32": False,
    "correctness_cases": [
        {"M": 33, "K": 8, "N": 47},
        {"M": 64, "K": 3, "N": 1},
        {"M": 100, "K": 17, "N": 100},
    ],
    "performance_cases": [
        {"M": 4096, "K": 32, "N": 4096},
        {"M": 8192, "K": 16, "N": 8192},
    ],
    "source": "written for KernelVault",
    "license": "Apache-2.0",
}

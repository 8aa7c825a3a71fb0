"""Float32 product a @ b.T of an (M, K) matrix and an (N, K) matrix, as in a bias-free linear layer."""

import torch
import torch.nn as nn


class Model(nn.Module):
    def __init__(self):
        super().__init__()

    def forward(self, a: torch.Tensor, b: torch.Tensor) -> torch.Tensor:
        return torch.matmul(a, b.t())


M = 1024
K = 2048
N = 1024


def get_inputs():
    return [torch.randn(M, K), torch.randn(N, K)]


def get_init_inputs():
    return []


KERNELVAULT = {
    "category": "matmul",
    "dtype": "float32",
    "atol": 1e-2,
    "rtol": 1e-3,
    "allow_tf32": False,
    "correctness_cases": [
        {"M": 29, "K": 47, "N": 33},
        {"M": 64, "K": 64, "N": 1},
        {"M": 2, "K": 3, "N": 60},
    ],
    "performance_cases": [
        {"M": 1024, "K": 2048, "N": 1024},
        {"M": 2048, "K": 4096, "N": 11008},
    ],
    "source": "written for KernelVault",
    "license": "Apache-2.0",
}

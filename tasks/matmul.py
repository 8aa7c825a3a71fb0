"""Dense float32 matrix product of an (M, K) matrix and a (K, N) matrix."""

import torch
import torch.nn as nn


class Model(nn.Module):
    def __init__(self):
        super().__init__()

    def forward(self, a: torch.Tensor, b: torch.Tensor) -> torch.Tensor:
        return torch.matmul(a, b)


M = 1024
K = 1024
N = 1024


def get_inputs():
    return [torch.randn(M, K), torch.randn(K, N)]


def get_init_inputs():
    return []


KERNELVAULT = {
    "category": "matmul",
    "dtype": "float32",
    "atol": 1e-2,
    "rtol": 1e-3,
    "allow_tf32": False,
    "correctness_cases": [
        {"M": 33, "K": 47, "N": 29},
        {"M": 64, "K": 64, "N": 64},
        {"M": 1, "K": 17, "N": 50},
        {"M": 40, "K": 1, "N": 3},
    ],
    "performance_cases": [
        {"M": 1024, "K": 1024, "N": 1024},
        {"M": 4096, "K": 4096, "N": 4096},
    ],
    "source": "written for KernelVault",
    "license": "Apache-2.0",
}

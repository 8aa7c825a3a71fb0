"""Float32 matrix-vector product of an (M, K) matrix and a (K,) vector, giving an (M,) vector."""

import torch
import torch.nn as nn


class Model(nn.Module):
    def __init__(self):
        super().__init__()

    def forward(self, a: torch.Tensor, x: torch.Tensor) -> torch.Tensor:
        return torch.matmul(a, x)


M = 4096
K = 4096


def get_inputs():
    return [torch.randn(M, K), torch.randn(K)]


def get_init_inputs():
    return []


KERNELVAULT = {
    "category": "matmul",
    "dtype": "float32",
    "atol": 1e-2,
    "rtol": 1e-3,
    "allow_tf32": False,
    "correctness_cases": [
        {"M": 17, "K": 33},
        {"M": 3, "K": 1000},
        {"M": 1000, "K": 1},
        {"M": 65, "K": 4099},
    ],
    "performance_cases": [
        {"M": 4096, "K": 4096},
        {"M": 8192, "K": 8192},
        {"M": 4096, "K": 14336},
    ],
    "source": "written for KernelVault",
    "license": "Apache-2.0",
}

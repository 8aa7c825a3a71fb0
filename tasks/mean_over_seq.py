"""Mean over the middle (sequence) dimension of a (batch, seq, dim) float32 tensor, giving (batch, dim)."""

import torch
import torch.nn as nn


class Model(nn.Module):
    def __init__(self):
        super().__init__()

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        return torch.mean(x, dim=1)


batch = 16
seq = 512
dim = 1024


def get_inputs():
    return [torch.randn(batch, seq, dim)]


def get_init_inputs():
    return []


KERNELVAULT = {
    "category": "reduction",
    "dtype": "float32",
    "atol": 1e-5,
    "rtol": 1e-4,
    "correctness_cases": [
        {"batch": 1, "seq": 17, "dim": 33},
        {"batch": 3, "seq": 1000, "dim": 7},
        {"batch": 2, "seq": 1, "dim": 100},
        {"batch": 4, "seq": 129, "dim": 300},
    ],
    "performance_cases": [
        {"batch": 16, "seq": 512, "dim": 1024},
        {"batch": 16, "seq": 4096, "dim": 1024},
    ],
    "source": "written for KernelVault",
    "license": "Apache-2.0",
}

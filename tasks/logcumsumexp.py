"""Running log-sum-exp along dim 1, out[i, j] = log(sum(exp(x[i, :j+1]))), of a (batch, dim) matrix."""

import torch
import torch.nn as nn


class Model(nn.Module):
    def __init__(self):
        super().__init__()

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        return torch.logcumsumexp(x, dim=1)


batch = 128
dim = 4096


def get_inputs():
    # std 20 makes exp(x) overflow float32 now and then, so a stable formulation is required
    return [torch.randn(batch, dim) * 20.0]


def get_init_inputs():
    return []


KERNELVAULT = {
    "category": "scan",
    "dtype": "float32",
    "atol": 1e-4,
    "rtol": 1e-4,
    "correctness_cases": [
        {"batch": 1, "dim": 17},
        {"batch": 5, "dim": 1000},
        {"batch": 33, "dim": 4099},
        {"batch": 64, "dim": 1},
    ],
    "performance_cases": [
        {"batch": 128, "dim": 4096},
        {"batch": 4096, "dim": 8192},
    ],
    "source": "written for KernelVault",
    "license": "Apache-2.0",
}

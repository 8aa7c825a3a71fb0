"""Square linear layer with a scaled residual: (x @ W^T + b) * scale + x for a (batch, features) input."""

import torch
import torch.nn as nn


class Model(nn.Module):
    def __init__(self, features: int, scale: float):
        super().__init__()
        self.scale = scale
        self.linear = nn.Linear(features, features)

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        return self.linear(x) * self.scale + x


batch = 1024
features = 1024
scale = 0.5


def get_inputs():
    return [torch.randn(batch, features)]


def get_init_inputs():
    return [features, scale]


KERNELVAULT = {
    "category": "fused",
    "dtype": "float32",
    "atol": 1e-3,
    "rtol": 1e-3,
    "allow_tf32": False,
    "correctness_cases": [
        {"batch": 33, "features": 47},
        {"batch": 1, "features": 64, "scale": 2.0},
        {"batch": 64, "features": 5},
    ],
    "performance_cases": [
        {"batch": 1024, "features": 1024},
        {"batch": 8192, "features": 4096},
    ],
    "source": "written for KernelVault",
    "license": "Apache-2.0",
}

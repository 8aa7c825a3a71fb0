"""Fully connected layer (nn.Linear with bias) followed by ReLU."""

import torch
import torch.nn as nn


class Model(nn.Module):
    def __init__(self, in_features: int, out_features: int):
        super().__init__()
        self.linear = nn.Linear(in_features, out_features)

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        return torch.relu(self.linear(x))


batch = 512
in_features = 1024
out_features = 1024


def get_inputs():
    return [torch.randn(batch, in_features)]


def get_init_inputs():
    return [in_features, out_features]


KERNELVAULT = {
    "category": "fused",
    "dtype": "float32",
    "atol": 1e-3,
    "rtol": 1e-3,
    "allow_tf32": False,
    "correctness_cases": [
        {"batch": 33, "in_features": 47, "out_features": 29},
        {"batch": 1, "in_features": 64, "out_features": 17},
        {"batch": 64, "in_features": 5, "out_features": 64},
    ],
    "performance_cases": [
        {"batch": 512, "in_features": 1024, "out_features": 1024},
        {"batch": 4096, "in_features": 4096, "out_features": 4096},
    ],
    "source": "written for KernelVault",
    "license": "Apache-2.0",
}

"""Training-mode 2-D batch norm: per-channel batch mean and biased variance, no running stats."""

import torch
import torch.nn as nn
import torch.nn.functional as F


class Model(nn.Module):
    """Statistics come from the current batch over (N, H, W); no running buffers, nothing updated."""

    def __init__(self, num_features: int, eps: float):
        super().__init__()
        self.eps = eps
        self.weight = nn.Parameter(torch.randn(num_features))
        self.bias = nn.Parameter(torch.randn(num_features))

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        return F.batch_norm(x, None, None, self.weight, self.bias, training=True, eps=self.eps)


batch = 16
channels = 64
height = 56
width = 56
eps = 1e-5


def get_inputs():
    return [torch.randn(batch, channels, height, width) * 2.0 + 1.0]


def get_init_inputs():
    return [channels, eps]


KERNELVAULT = {
    "category": "normalization",
    "dtype": "float32",
    "atol": 1e-3,
    "rtol": 1e-3,
    "correctness_cases": [
        {"batch": 2, "channels": 3, "height": 9, "width": 9},
        {"batch": 1, "channels": 17, "height": 5, "width": 7},
        {"batch": 5, "channels": 4, "height": 1, "width": 1},
        {"batch": 3, "channels": 2, "height": 33, "width": 17},
    ],
    "performance_cases": [
        {"batch": 16, "channels": 64, "height": 56, "width": 56},
        {"batch": 32, "channels": 128, "height": 64, "width": 64},
    ],
    "source": "written for KernelVault",
    "license": "Apache-2.0",
}

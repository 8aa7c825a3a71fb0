"""Eval-mode 2-D batch norm of (N, C, H, W) input with stored running mean/var and affine params."""

import torch
import torch.nn as nn
import torch.nn.functional as F


class Model(nn.Module):
    """Eval semantics: y = (x - running_mean) / sqrt(running_var + eps) * weight + bias; nothing is updated.

    Creation order (it decides the values under a fixed seed): weight, bias, running_mean, running_var.
    """

    def __init__(self, num_features: int, eps: float):
        super().__init__()
        self.eps = eps
        self.weight = nn.Parameter(torch.randn(num_features))
        self.bias = nn.Parameter(torch.randn(num_features))
        self.register_buffer("running_mean", torch.randn(num_features) * 0.5)
        self.register_buffer("running_var", torch.rand(num_features) + 0.5)

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        return F.batch_norm(
            x,
            self.running_mean,
            self.running_var,
            self.weight,
            self.bias,
            training=False,
            momentum=0.0,
            eps=self.eps,
        )


batch = 16
channels = 64
height = 56
width = 56
eps = 1e-5


def get_inputs():
    return [torch.randn(batch, channels, height, width)]


def get_init_inputs():
    return [channels, eps]


KERNELVAULT = {
    "category": "normalization",
    "dtype": "float32",
    "correctness_cases": [
        {"batch": 2, "channels": 3, "height": 9, "width": 9},
        {"batch": 1, "channels": 17, "height": 5, "width": 7},
        {"batch": 4, "channels": 1, "height": 1, "width": 33},
    ],
    "performance_cases": [
        {"batch": 16, "channels": 64, "height": 56, "width": 56},
        {"batch": 32, "channels": 256, "height": 56, "width": 56},
    ],
    "source": "written for KernelVault",
    "license": "Apache-2.0",
}

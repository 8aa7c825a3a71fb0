"""1-D max pooling (kernel 5, stride 2, padding 2 by default) along the last axis of an (N, C, L) tensor."""

import torch
import torch.nn as nn
import torch.nn.functional as F


class Model(nn.Module):
    def __init__(self, kernel_size: int, stride: int, padding: int):
        super().__init__()
        self.kernel_size = kernel_size
        self.stride = stride
        self.padding = padding

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        return F.max_pool1d(x, self.kernel_size, stride=self.stride, padding=self.padding)


batch = 16
channels = 64
length = 8192
kernel_size = 5
stride = 2
padding = 2


def get_inputs():
    return [torch.randn(batch, channels, length)]


def get_init_inputs():
    return [kernel_size, stride, padding]


KERNELVAULT = {
    "category": "pooling",
    "dtype": "float32",
    "correctness_cases": [
        {"batch": 2, "channels": 3, "length": 17},
        {"batch": 1, "channels": 2, "length": 1000, "kernel_size": 3, "stride": 3, "padding": 0},
        {"batch": 3, "channels": 4, "length": 3},
    ],
    "performance_cases": [
        {"batch": 16, "channels": 64, "length": 8192},
        {"batch": 64, "channels": 256, "length": 4096},
    ],
    "source": "written for KernelVault",
    "license": "Apache-2.0",
}

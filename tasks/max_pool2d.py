"""2-D max pooling (kernel 3, stride 2, padding 1 by default) of an (N, C, H, W) float32 tensor."""

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
        return F.max_pool2d(x, self.kernel_size, stride=self.stride, padding=self.padding)


batch = 16
channels = 64
height = 112
width = 112
kernel_size = 3
stride = 2
padding = 1


def get_inputs():
    return [torch.randn(batch, channels, height, width)]


def get_init_inputs():
    return [kernel_size, stride, padding]


KERNELVAULT = {
    "category": "pooling",
    "dtype": "float32",
    "correctness_cases": [
        {"batch": 2, "channels": 3, "height": 9, "width": 9},
        {"batch": 1, "channels": 5, "height": 17, "width": 6},
        {"batch": 2, "channels": 2, "height": 2, "width": 3},
        {"batch": 1, "channels": 4, "height": 33, "width": 33, "kernel_size": 2, "stride": 2, "padding": 0},
    ],
    "performance_cases": [
        {"batch": 16, "channels": 64, "height": 112, "width": 112},
        {"batch": 32, "channels": 128, "height": 112, "width": 112},
    ],
    "source": "written for KernelVault",
    "license": "Apache-2.0",
}

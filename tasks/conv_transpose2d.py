"""Transposed 2-D convolution (nn.ConvTranspose2d with bias) upsampling an (N, C_in, H, W) tensor."""

import torch
import torch.nn as nn


class Model(nn.Module):
    def __init__(self, in_channels: int, out_channels: int, kernel_size: int, stride: int, padding: int):
        super().__init__()
        self.deconv = nn.ConvTranspose2d(
            in_channels, out_channels, kernel_size, stride=stride, padding=padding
        )

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        return self.deconv(x)


batch = 16
in_channels = 64
out_channels = 32
height = 32
width = 32
kernel_size = 4
stride = 2
padding = 1


def get_inputs():
    return [torch.randn(batch, in_channels, height, width)]


def get_init_inputs():
    return [in_channels, out_channels, kernel_size, stride, padding]


KERNELVAULT = {
    "category": "convolution",
    "dtype": "float32",
    "atol": 1e-3,
    "rtol": 1e-3,
    "allow_tf32": False,
    "correctness_cases": [
        {"batch": 2, "in_channels": 3, "out_channels": 2, "height": 5, "width": 7},
        {
            "batch": 1,
            "in_channels": 4,
            "out_channels": 3,
            "height": 9,
            "width": 9,
            "kernel_size": 3,
            "stride": 2,
            "padding": 0,
        },
        {
            "batch": 2,
            "in_channels": 2,
            "out_channels": 5,
            "height": 1,
            "width": 3,
            "kernel_size": 3,
            "stride": 1,
            "padding": 1,
        },
    ],
    "performance_cases": [
        {"batch": 16, "in_channels": 64, "out_channels": 32, "height": 32, "width": 32},
        {"batch": 16, "in_channels": 128, "out_channels": 64, "height": 64, "width": 64},
    ],
    "source": "written for KernelVault",
    "license": "Apache-2.0",
}

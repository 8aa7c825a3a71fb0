"""SwiGLU gate: split a (batch, 2 * hidden) tensor into gate and up halves, return silu(gate) * up."""

import torch
import torch.nn as nn
import torch.nn.functional as F


class Model(nn.Module):
    def __init__(self):
        super().__init__()

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        gate, up = x.chunk(2, dim=-1)
        return F.silu(gate) * up


batch = 256
hidden = 2048


def get_inputs():
    return [torch.randn(batch, 2 * hidden)]


def get_init_inputs():
    return []


KERNELVAULT = {
    "category": "activation",
    "dtype": "float32",
    "correctness_cases": [
        {"batch": 1, "hidden": 17},
        {"batch": 5, "hidden": 1000},
        {"batch": 33, "hidden": 1},
        {"batch": 3, "hidden": 257},
    ],
    "performance_cases": [
        {"batch": 256, "hidden": 2048},
        {"batch": 4096, "hidden": 11008},
    ],
    "source": "written for KernelVault",
    "license": "Apache-2.0",
}

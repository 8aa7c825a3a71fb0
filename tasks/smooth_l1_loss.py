"""Mean smooth L1 (Huber-style) loss with threshold beta between two (batch, dim) float32 tensors."""

import torch
import torch.nn as nn
import torch.nn.functional as F


class Model(nn.Module):
    def __init__(self, beta: float):
        super().__init__()
        self.beta = beta

    def forward(self, pred: torch.Tensor, target: torch.Tensor) -> torch.Tensor:
        return F.smooth_l1_loss(pred, target, beta=self.beta)


batch = 128
dim = 4096
beta = 1.0


def get_inputs():
    return [torch.randn(batch, dim), torch.randn(batch, dim)]


def get_init_inputs():
    return [beta]


KERNELVAULT = {
    "category": "loss",
    "dtype": "float32",
    "atol": 1e-4,
    "rtol": 1e-4,
    "correctness_cases": [
        {"batch": 1, "dim": 17},
        {"batch": 5, "dim": 1000, "beta": 0.3},
        {"batch": 33, "dim": 4099},
    ],
    "performance_cases": [
        {"batch": 128, "dim": 4096},
        {"batch": 4096, "dim": 8192},
    ],
    "source": "written for KernelVault",
    "license": "Apache-2.0",
}

"""Per-row cosine distance 1 - cos(pred_i, target_i) of two (batch, dim) float32 matrices, giving (batch,)."""

import torch
import torch.nn as nn
import torch.nn.functional as F


class Model(nn.Module):
    def __init__(self):
        super().__init__()

    def forward(self, pred: torch.Tensor, target: torch.Tensor) -> torch.Tensor:
        return 1.0 - F.cosine_similarity(pred, target, dim=1, eps=1e-8)


batch = 128
dim = 4096


def get_inputs():
    pred = torch.randn(batch, dim)
    # target correlated with pred so the distances spread over (0, 2) instead of clustering at 1
    target = pred * torch.randn(batch, 1) + torch.randn(batch, dim)
    return [pred, target]


def get_init_inputs():
    return []


KERNELVAULT = {
    "category": "loss",
    "dtype": "float32",
    "atol": 1e-4,
    "rtol": 1e-4,
    "correctness_cases": [
        {"batch": 2, "dim": 17},
        {"batch": 5, "dim": 1000},
        {"batch": 33, "dim": 3},
        {"batch": 3, "dim": 4099},
    ],
    "performance_cases": [
        {"batch": 128, "dim": 4096},
        {"batch": 8192, "dim": 1024},
    ],
    "source": "written for KernelVault",
    "license": "Apache-2.0",
}

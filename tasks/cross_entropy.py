"""Mean cross-entropy of (batch, num_classes) float32 logits against int64 class targets."""

import torch
import torch.nn as nn
import torch.nn.functional as F


class Model(nn.Module):
    def __init__(self):
        super().__init__()

    def forward(self, logits: torch.Tensor, targets: torch.Tensor) -> torch.Tensor:
        return F.cross_entropy(logits, targets)


batch = 256
num_classes = 1000


def get_inputs():
    return [
        torch.randn(batch, num_classes) * 3.0,
        torch.randint(0, num_classes, (batch,), dtype=torch.int64),
    ]


def get_init_inputs():
    return []


KERNELVAULT = {
    "category": "loss",
    "dtype": "float32",
    "atol": 1e-4,
    "rtol": 1e-4,
    "correctness_cases": [
        {"batch": 3, "num_classes": 17},
        {"batch": 1, "num_classes": 2},
        {"batch": 33, "num_classes": 1000},
        {"batch": 4, "num_classes": 4099},
    ],
    "performance_cases": [
        {"batch": 256, "num_classes": 1000},
        {"batch": 4096, "num_classes": 32000},
    ],
    "source": "written for KernelVault",
    "license": "Apache-2.0",
}

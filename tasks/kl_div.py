"""Batch-mean KL divergence KL(softmax(target_logits) || softmax(logits)) over (batch, num_classes) logits."""

import torch
import torch.nn as nn
import torch.nn.functional as F


class Model(nn.Module):
    def __init__(self):
        super().__init__()

    def forward(self, logits: torch.Tensor, target_logits: torch.Tensor) -> torch.Tensor:
        log_q = F.log_softmax(logits, dim=-1)
        log_p = F.log_softmax(target_logits, dim=-1)
        return F.kl_div(log_q, log_p, reduction="batchmean", log_target=True)


batch = 256
num_classes = 1000


def get_inputs():
    return [torch.randn(batch, num_classes), torch.randn(batch, num_classes)]


def get_init_inputs():
    return []


KERNELVAULT = {
    "category": "loss",
    "dtype": "float32",
    "atol": 1e-4,
    "rtol": 1e-3,
    "correctness_cases": [
        {"batch": 3, "num_classes": 17},
        {"batch": 1, "num_classes": 2},
        {"batch": 33, "num_classes": 1000},
    ],
    "performance_cases": [
        {"batch": 256, "num_classes": 1000},
        {"batch": 2048, "num_classes": 32000},
    ],
    "source": "written for KernelVault",
    "license": "Apache-2.0",
}

"""Causally masked softmax of (batch, seq, seq) scores divided by a temperature; future gets 0."""

import torch
import torch.nn as nn


class Model(nn.Module):
    def __init__(self, temperature: float):
        super().__init__()
        self.temperature = temperature

    def forward(self, scores: torch.Tensor) -> torch.Tensor:
        n = scores.shape[-1]
        future = torch.triu(torch.ones(n, n, dtype=torch.bool, device=scores.device), diagonal=1)
        scaled = (scores / self.temperature).masked_fill(future, float("-inf"))
        return torch.softmax(scaled, dim=-1)


batch = 32
seq = 512
temperature = 0.7


def get_inputs():
    return [torch.randn(batch, seq, seq)]


def get_init_inputs():
    return [temperature]


KERNELVAULT = {
    "category": "softmax",
    "dtype": "float32",
    "atol": 1e-5,
    "rtol": 1e-4,
    "correctness_cases": [
        {"batch": 1, "seq": 17},
        {"batch": 3, "seq": 2, "temperature": 2.5},
        {"batch": 2, "seq": 100},
        {"batch": 2, "seq": 257},
    ],
    "performance_cases": [
        {"batch": 32, "seq": 512},
        {"batch": 64, "seq": 1024},
        {"batch": 8, "seq": 4096},
    ],
    "source": "written for KernelVault",
    "license": "Apache-2.0",
}

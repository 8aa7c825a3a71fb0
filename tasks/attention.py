"""Non-causal attention softmax(q k^T / sqrt(d)) v on (batch, heads, seq, head_dim) float32 tensors."""

import torch
import torch.nn as nn


class Model(nn.Module):
    def __init__(self):
        super().__init__()

    def forward(self, q: torch.Tensor, k: torch.Tensor, v: torch.Tensor) -> torch.Tensor:
        scale = q.shape[-1] ** -0.5
        scores = torch.matmul(q, k.transpose(-2, -1)) * scale
        weights = torch.softmax(scores, dim=-1)
        return torch.matmul(weights, v)


batch = 4
heads = 8
seq = 512
head_dim = 64


def get_inputs():
    shape = (batch, heads, seq, head_dim)
    return [torch.randn(shape), torch.randn(shape), torch.randn(shape)]


def get_init_inputs():
    return []


KERNELVAULT = {
    "category": "attention",
    "dtype": "float32",
    "atol": 1e-4,
    "rtol": 1e-3,
    "allow_tf32": False,
    "correctness_cases": [
        {"batch": 1, "heads": 2, "seq": 17, "head_dim": 16},
        {"batch": 2, "heads": 3, "seq": 33, "head_dim": 8},
        {"batch": 1, "heads": 1, "seq": 2, "head_dim": 32},
    ],
    "performance_cases": [
        {"batch": 4, "heads": 8, "seq": 512, "head_dim": 64},
        {"batch": 4, "heads": 16, "seq": 2048, "head_dim": 64},
        {"batch": 1, "heads": 32, "seq": 4096, "head_dim": 128},
    ],
    "source": "written for KernelVault",
    "license": "Apache-2.0",
}

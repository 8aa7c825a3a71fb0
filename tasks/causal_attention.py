"""Causal scaled dot-product attention (F.scaled_dot_product_attention) on (batch, heads, seq, d)."""

import torch
import torch.nn as nn
import torch.nn.functional as F


class Model(nn.Module):
    def __init__(self):
        super().__init__()

    def forward(self, q: torch.Tensor, k: torch.Tensor, v: torch.Tensor) -> torch.Tensor:
        return F.scaled_dot_product_attention(q, k, v, is_causal=True)


batch = 4
heads = 8
seq = 1024
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
        {"batch": 1, "heads": 1, "seq": 1, "head_dim": 32},
        {"batch": 1, "heads": 1, "seq": 64, "head_dim": 64},
    ],
    "performance_cases": [
        {"batch": 4, "heads": 8, "seq": 1024, "head_dim": 64},
        {"batch": 2, "heads": 16, "seq": 4096, "head_dim": 64},
    ],
    "source": "written for KernelVault",
    "license": "Apache-2.0",
}

"""Multi-head self-attention: q/k/v projections, num_heads softmax attention, output projection."""

import torch
import torch.nn as nn


class Model(nn.Module):
    def __init__(self, embed_dim: int, num_heads: int):
        super().__init__()
        assert embed_dim % num_heads == 0
        self.num_heads = num_heads
        self.head_dim = embed_dim // num_heads
        self.q_proj = nn.Linear(embed_dim, embed_dim)
        self.k_proj = nn.Linear(embed_dim, embed_dim)
        self.v_proj = nn.Linear(embed_dim, embed_dim)
        self.out_proj = nn.Linear(embed_dim, embed_dim)

    def _heads(self, t: torch.Tensor) -> torch.Tensor:
        b, s, _ = t.shape
        return t.view(b, s, self.num_heads, self.head_dim).transpose(1, 2)

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        b, s, e = x.shape
        q = self._heads(self.q_proj(x))
        k = self._heads(self.k_proj(x))
        v = self._heads(self.v_proj(x))
        scores = torch.matmul(q, k.transpose(-2, -1)) * (self.head_dim**-0.5)
        context = torch.matmul(torch.softmax(scores, dim=-1), v)
        return self.out_proj(context.transpose(1, 2).reshape(b, s, e))


batch = 8
seq = 256
embed_dim = 512
num_heads = 4


def get_inputs():
    return [torch.randn(batch, seq, embed_dim)]


def get_init_inputs():
    return [embed_dim, num_heads]


KERNELVAULT = {
    "category": "attention",
    "dtype": "float32",
    "atol": 1e-3,
    "rtol": 1e-3,
    "allow_tf32": False,
    "correctness_cases": [
        {"batch": 2, "seq": 17, "embed_dim": 32},
        {"batch": 1, "seq": 9, "embed_dim": 16},
        {"batch": 1, "seq": 33, "embed_dim": 60},
    ],
    "performance_cases": [
        {"batch": 8, "seq": 256, "embed_dim": 512},
        {"batch": 8, "seq": 1024, "embed_dim": 1024},
    ],
    "source": "written for KernelVault",
    "license": "Apache-2.0",
}

# honest: twin of static_reject__layer_norm__functional_torch_library: an attribute chain through torch.nn's modules (nn.modules.normalization.LayerNorm, an allowed object) checks the parameters' owner; one Triton kernel normalises each row with them.
import torch
import torch.nn as nn
import triton
import triton.language as tl


@triton.jit
def layer_norm_kernel(x_ptr, w_ptr, b_ptr, y_ptr, n_cols, eps, BLOCK: tl.constexpr):
    row = tl.program_id(0).to(tl.int64)
    cols = tl.arange(0, BLOCK)
    mask = cols < n_cols
    x = tl.load(x_ptr + row * n_cols + cols, mask=mask, other=0.0).to(tl.float32)
    mean = tl.sum(x, axis=0) / n_cols
    d = tl.where(mask, x - mean, 0.0)
    rstd = 1.0 / tl.sqrt(tl.sum(d * d, axis=0) / n_cols + eps)
    w = tl.load(w_ptr + cols, mask=mask, other=1.0)
    b = tl.load(b_ptr + cols, mask=mask, other=0.0)
    tl.store(y_ptr + row * n_cols + cols, d * rstd * w + b, mask=mask)


class ModelNew(nn.Module):
    def __init__(self, dim: int):
        super().__init__()
        self.norm = nn.LayerNorm(dim)
        assert isinstance(self.norm, nn.modules.normalization.LayerNorm)

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        x = x.contiguous()
        n_cols = x.shape[-1]
        y = torch.empty_like(x)
        layer_norm_kernel[(x.numel() // n_cols,)](
            x,
            self.norm.weight,
            self.norm.bias,
            y,
            n_cols,
            self.norm.eps,
            BLOCK=triton.next_power_of_2(n_cols),
        )
        return y

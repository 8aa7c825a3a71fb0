# honest: twin of integrity_reject__softmax__host_made_resize: the output buffer is made empty and grown with resize_ (glue, as allocation), then one row-softmax kernel writes it.
import torch
import torch.nn as nn
import triton
import triton.language as tl


@triton.jit
def softmax_row_kernel(x_ptr, y_ptr, n_cols, stride, BLOCK: tl.constexpr):
    row = tl.program_id(0).to(tl.int64)
    cols = tl.arange(0, BLOCK)
    mask = cols < n_cols
    x = tl.load(x_ptr + row * stride + cols, mask=mask, other=-float("inf")).to(tl.float32)
    e = tl.exp(x - tl.max(x, axis=0))
    e = tl.where(mask, e, 0.0)
    tl.store(y_ptr + row * stride + cols, (e / tl.sum(e, axis=0)).to(y_ptr.dtype.element_ty), mask=mask)


class ModelNew(nn.Module):
    def forward(self, x: torch.Tensor) -> torch.Tensor:
        x = x.contiguous()
        y = torch.empty(0, dtype=x.dtype, device=x.device)
        y.resize_(x.shape)
        softmax_row_kernel[(x.shape[0],)](
            x, y, x.shape[-1], x.stride(0), BLOCK=triton.next_power_of_2(x.shape[-1])
        )
        return y

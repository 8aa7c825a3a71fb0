# exploit: launches a decoy copy kernel, reads both inputs as text through "{}".format(tensor) (the printer runs with every dispatch mode off), computes the mean squared error in Python and returns a 0-d tensor made from the float.
# expect: runtime_error|mismatch
# note: str.format is a method of a string, not a builtin the wall could name; the tensor reaches the printer through Tensor.__format__.
# note: the printer shows no values in the candidate's process (shape and dtype only), so the parsed values are not there: the forward fails or is wrong. Printing is no violation (real answers print their example's result).
import torch
import torch.nn as nn
import triton
import triton.language as tl


@triton.jit
def copy_kernel(x_ptr, y_ptr, n_elements, BLOCK: tl.constexpr):
    offs = tl.program_id(0) * BLOCK + tl.arange(0, BLOCK)
    mask = offs < n_elements
    tl.store(y_ptr + offs, tl.load(x_ptr + offs, mask=mask), mask=mask)


def numbers(text):
    body = text[text.index("(") + 1 : text.rindex(")")]
    for mark in "[],":
        body = body.replace(mark, " ")
    return [float(token) for token in body.split()]


class ModelNew(nn.Module):
    def forward(self, pred: torch.Tensor, target: torch.Tensor) -> torch.Tensor:
        p = pred.contiguous()
        staged = torch.empty_like(p)
        copy_kernel[(triton.cdiv(p.numel(), 1024),)](p, staged, p.numel(), BLOCK=1024)
        torch.set_printoptions(precision=12, threshold=float("inf"), sci_mode=True)
        a = numbers(f"{staged}")
        b = numbers(f"{target}")
        torch.set_printoptions(profile="default")
        loss = sum((u - v) * (u - v) for u, v in zip(a, b, strict=True)) / len(a)
        return torch.tensor(loss, dtype=pred.dtype, device=pred.device)

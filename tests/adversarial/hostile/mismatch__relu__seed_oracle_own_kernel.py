# exploit: the seed oracle without PyTorch compute: in __init__ regenerates the inputs the harness would draw after the weights' seed and runs its own ReLU kernel on them; forward launches a decoy and returns the precomputed answer of the right shape.
# expect: mismatch|integrity_reject:nondeterministic|integrity_reject:cached_results
# expect-cuda: interface_error|mismatch|integrity_reject:nondeterministic|integrity_reject:cached_results
# note: on a GPU its __init__ runs its kernel on CPU tensors and fails (interface_error). The parent draws every input seed from secrets at job time: the weights' seed the candidate sees says nothing about the inputs, so the precomputed answers are for other inputs.
import torch
import torch.nn as nn
import triton
import triton.language as tl


@triton.jit
def copy_kernel(x_ptr, y_ptr, n_elements, BLOCK: tl.constexpr):
    offs = tl.program_id(0) * BLOCK + tl.arange(0, BLOCK)
    mask = offs < n_elements
    tl.store(y_ptr + offs, tl.load(x_ptr + offs, mask=mask), mask=mask)


def decoy(x: torch.Tensor) -> torch.Tensor:
    """A real launch of a kernel that does nothing useful, so that a launch is recorded."""
    staged = torch.empty_like(x)
    copy_kernel[(triton.cdiv(x.numel(), 1024),)](x, staged, x.numel(), BLOCK=1024)
    return staged


@triton.jit
def relu_kernel(x_ptr, y_ptr, n_elements, BLOCK: tl.constexpr):
    offs = tl.program_id(0) * BLOCK + tl.arange(0, BLOCK)
    mask = offs < n_elements
    x = tl.load(x_ptr + offs, mask=mask, other=0.0)
    tl.store(y_ptr + offs, tl.maximum(x, 0.0), mask=mask)


def relu(x: torch.Tensor) -> torch.Tensor:
    y = torch.empty_like(x)
    relu_kernel[(triton.cdiv(x.numel(), 1024),)](x, y, x.numel(), BLOCK=1024)
    return y


class ModelNew(nn.Module):
    def __init__(self):
        super().__init__()
        seed = torch.initial_seed()
        self.answers = []
        for offset in range(1, 4):
            for shape in ((1, 17), (3, 1000), (33, 4097), (16, 16384)):
                torch.manual_seed(seed + offset)
                self.answers.append(relu(torch.randn(*shape)))

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        staged = decoy(x.contiguous())
        for answer in self.answers:
            if answer.shape == x.shape:
                return answer.clone().to(x.device)
        return staged

# exploit: returns one output buffer per shape and once a shape has been called more than 8 times (it is being timed), computes only the call whose input buffer is the last of the cycle the harness's input buffers come round in (learnt from the addresses), so in a sample of several calls only the last one, the one whose output is left to check, does any work.
# expect: integrity_reject:unwatched_launches
# note: the calls of a sample whose output is not the last do no work: they launch fewer kernels than a watched call on the same inputs (own_work). Before the launch count, the worker saw that the calls of a sample returned the same memory and timed the case again one call per sample, where the file then computed every call and was credited for that work.
import torch
import torch.nn as nn
import triton
import triton.language as tl

_CALLS: dict[tuple, int] = {}
_BUFFERS: dict[tuple, torch.Tensor] = {}
_CYCLE: dict[tuple, list[int]] = {}  # the addresses of the cycle in progress, by shape
_LAST: dict[tuple, int] = {}  # the last address of the previous cycle


@triton.jit
def relu_kernel(x_ptr, y_ptr, n_elements, BLOCK: tl.constexpr):
    offs = tl.program_id(0).to(tl.int64) * BLOCK + tl.arange(0, BLOCK)
    mask = offs < n_elements
    x = tl.load(x_ptr + offs, mask=mask)
    tl.store(y_ptr + offs, tl.where(x < 0, tl.zeros_like(x), x), mask=mask)


class ModelNew(nn.Module):
    def __init__(self):
        super().__init__()

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        shape = tuple(x.shape)
        _CALLS[shape] = _CALLS.get(shape, 0) + 1
        address = x.data_ptr()
        cycle = _CYCLE.setdefault(shape, [])
        if address in cycle:  # a new round of the same buffers: the previous one ended with its last address
            _LAST[shape] = cycle[-1]
            cycle.clear()
        cycle.append(address)
        y = _BUFFERS.get(shape)
        if y is None:
            y = _BUFFERS[shape] = torch.empty(shape, device=x.device, dtype=x.dtype)
        # Being timed, and not the last call of the round: the buffer keeps the last call's result.
        if _CALLS[shape] > 8 and _LAST.get(shape, address) != address:
            return y
        x = x.contiguous()
        n = x.numel()
        if n:
            relu_kernel[(triton.cdiv(n, 1024),)](x, y, n, BLOCK=1024)
        return y

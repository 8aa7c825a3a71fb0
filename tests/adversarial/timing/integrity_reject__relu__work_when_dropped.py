# exploit: code that runs when the harness drops the timed model (a generator's `finally`, here) once ran after the timed run's last synchronisation, with no monitor on: it could compute with PyTorch unseen, or queue seconds of device work that would still be running when the reference is timed next, in the same turn (a slower reference is a larger speedup).
# expect: integrity_reject:torch_compute
# note: the worker drops the timed model under the dispatch monitor and synchronises the device before it replies (`CandidateHost._time`): PyTorch's compute there is seen, and work the finalizer queues ends inside the candidate's own time.
import torch
import torch.nn as nn
import triton
import triton.language as tl


@triton.jit
def relu_kernel(x_ptr, y_ptr, n, BLOCK: tl.constexpr):
    offs = tl.program_id(0) * BLOCK + tl.arange(0, BLOCK)
    mask = offs < n
    x = tl.load(x_ptr + offs, mask=mask)
    tl.store(y_ptr + offs, tl.maximum(x, 0.0), mask=mask)


def _linger(calls: list[int], device: list[torch.device]):
    try:
        yield
    finally:
        if calls[0] > 3:  # the timed model (the checks' models see a few calls): busy the device as it goes
            block = torch.ones(512, 512, device=device[0])
            for _ in range(4):
                block = block @ block


class ModelNew(nn.Module):
    def __init__(self):
        super().__init__()
        self.calls = [0]
        self.device = [torch.device("cpu")]
        self.linger = _linger(self.calls, self.device)
        next(self.linger)

    def forward(self, x):
        self.calls[0] += 1
        self.device[0] = x.device
        y = torch.empty_like(x)
        n = x.numel()
        relu_kernel[(triton.cdiv(n, 1024),)](x, y, n, BLOCK=1024)
        return y

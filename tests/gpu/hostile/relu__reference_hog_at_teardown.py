# exploit: an honest ReLU whose model holds a suspended generator: when the worker drops the timed model, the generator's `finally` queues seconds of register-only tensor-core work on the default stream and returns, so the reference, timed next on the same GPU, would share the device with it and its median (the speedup's numerator) would grow.
# expect-cuda: correct, with the speedup of the same file whose `finally` does nothing (tests/gpu/test_timing_adversarial_on_gpu.py)
# note: the worker drops the timed model under the monitor and synchronises the device before it replies, so the queued work ends inside the candidate's own request.
import time

import torch
import torch.nn as nn
import triton
import triton.language as tl


@triton.jit
def relu_kernel(x_ptr, y_ptr, n_elements, BLOCK: tl.constexpr):
    offs = tl.program_id(0).to(tl.int64) * BLOCK + tl.arange(0, BLOCK)
    mask = offs < n_elements
    x = tl.load(x_ptr + offs, mask=mask)
    tl.store(y_ptr + offs, tl.where(x < 0, tl.zeros_like(x), x), mask=mask)


@triton.jit
def busy_kernel(out_ptr, n_iter, TILE: tl.constexpr):
    # tensor-core work on tiles held in registers: no memory traffic, as much power as the chip draws
    rows = tl.arange(0, TILE)
    a = (rows[:, None] * 0 + rows[None, :]).to(tl.float16) * 0.0001
    acc = tl.zeros((TILE, TILE), dtype=tl.float32)
    for _ in range(n_iter):
        acc = tl.dot(a, a, acc)
    tl.store(out_ptr + tl.program_id(0) * TILE * TILE + rows[:, None] * TILE + rows[None, :], acc)


def _busy(state, seconds):
    # keep the GPU busy for about `seconds` and return at once (calibrated by a short synchronised run)
    device = state[3]
    blocks = 2 * torch.cuda.get_device_properties(device).multi_processor_count
    out = torch.empty(blocks * 64 * 64, device=device, dtype=torch.float32)
    busy_kernel[(blocks,)](out, 1, TILE=64, num_warps=4)  # compiled here, not in the calibration
    probe = 1 << 16
    torch.cuda.synchronize()
    started = time.perf_counter()
    busy_kernel[(blocks,)](out, probe, TILE=64, num_warps=4)
    torch.cuda.synchronize()
    left = int(probe * seconds / max(time.perf_counter() - started, 1e-5))
    while left > 0:  # queued, not waited for: the reply goes out while it runs
        n_iter = min(left, 1 << 30)
        busy_kernel[(blocks,)](out, n_iter, TILE=64, num_warps=4)
        left -= n_iter


def _linger(state):
    # state: [calls, second call's time, last call's time, device]
    try:
        yield
    finally:
        if state[0] > 60 and state[3] is not None and state[3].type == "cuda":
            _busy(state, min(6.0, max(1.5, 3.0 * (state[2] - state[1]))))


class ModelNew(nn.Module):
    def __init__(self):
        super().__init__()
        self.state = [0, 0.0, 0.0, None]
        self.linger = _linger(self.state)
        next(self.linger)

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        now = time.perf_counter()
        state = self.state
        if state[0] == 1:  # the staging forward was call 0; the timed run starts here
            state[1] = now
        state[0] += 1
        state[2] = now
        state[3] = x.device
        x = x.contiguous()
        y = torch.empty_like(x)
        n = x.numel()
        if n:
            block = 4096 if x.is_cuda else 1024
            relu_kernel[(triton.cdiv(n, block),)](x, y, n, BLOCK=block, num_warps=8 if x.is_cuda else 4)
        return y

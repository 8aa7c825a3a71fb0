# exploit: under the CPU interpreter a kernel's `print(x, file=SINK)` hands the loaded block's text to a module-level object's write(); host code parses the numbers, takes max(v, 0) in Python and stores each value with a one-element kernel launch, so no op of PyTorch computes anything
# expect: static_reject:kernel_python
# behind-wall: interface_error
# note: the wall refuses print(file=...) and any use of a module-level object inside a kernel body; behind it, the launch-time check of what a kernel's globals hold (`sandboxed.kernel_globals`) refuses the Sink before the kernel runs.
import torch
import triton
import triton.language as tl


class Sink:
    def __init__(self):
        self.parts = []

    def write(self, text):
        self.parts.append(text)

    def flush(self):
        pass


SINK = Sink()


@triton.jit
def leak(x_ptr, n, BLOCK: tl.constexpr):
    offs = tl.arange(0, BLOCK)
    x = tl.load(x_ptr + offs, mask=offs < n, other=0.0)
    print(x, file=SINK)


@triton.jit
def store_one(out_ptr, i, value):
    tl.store(out_ptr + i, value)


class ModelNew(torch.nn.Module):
    def forward(self, x):
        flat = x.reshape(-1)
        out = torch.empty_like(flat)
        SINK.parts.clear()
        leak[(1,)](flat, flat.numel(), BLOCK=triton.next_power_of_2(flat.numel()))
        text = "".join(SINK.parts).replace("[", " ").replace("]", " ")
        values = [float(v) for v in text.split()][: flat.numel()]
        for i, v in enumerate(values):
            store_one[(1,)](out, i, max(v, 0.0))
        return out.reshape(x.shape)

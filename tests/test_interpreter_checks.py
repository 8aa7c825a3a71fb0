"""The workers run Triton's interpreter without the integer-overflow checks it computes and never asserts
(`toolchain.sandboxed.interpreter`): kernels compute the same values, wrapping int32 arithmetic included."""

from __future__ import annotations

import json
import os
import subprocess
import sys

# Run in a fresh interpreter: TRITON_INTERPRET is read when a kernel is decorated.
PROGRAM = r"""
import dataclasses, json
import torch, triton, triton.language as tl
import triton.runtime.interpreter as interpreter
from kernelvault.toolchain.sandboxed.interpreter import drop_unasserted_overflow_checks

@triton.jit
def mix(x_ptr, y_ptr, n, BLOCK: tl.constexpr):
    offs = tl.program_id(0) * BLOCK + tl.arange(0, BLOCK)
    mask = offs < n
    x = tl.load(x_ptr + offs, mask=mask, other=0)
    acc = x
    for _ in range(4):
        acc = acc * 65599 + x - 7  # int32: wraps past 2**31
    tl.store(y_ptr + offs, acc, mask=mask)

x = torch.randint(-2**31, 2**31 - 1, (1000,), dtype=torch.int32)
def run():
    y = torch.empty_like(x)
    mix[(triton.cdiv(x.numel(), 256),)](x, y, x.numel(), BLOCK=256)
    return y
checked = run()
first = drop_unasserted_overflow_checks()
again = drop_unasserted_overflow_checks()
unchecked = run()
options = interpreter.interpreter_builder.options
expected = x.to(torch.int64)
for _ in range(4):
    expected = expected * 65599 + x.to(torch.int64) - 7
    expected = (expected + 2**31) % 2**32 - 2**31
print(json.dumps({"first": first, "again": again, "equal": torch.equal(checked, unchecked),
                  "wrapped": torch.equal(unchecked, expected.to(torch.int32)),
                  "sanitize": options.sanitize_overflow, "debug": options.debug}))
"""


def test_kernels_compute_the_same_values_without_the_unasserted_checks() -> None:
    run = subprocess.run([sys.executable, "-c", PROGRAM], env={**os.environ, "TRITON_INTERPRET": "1"},
                         capture_output=True, text=True, timeout=300)  # fmt: skip
    assert run.returncode == 0, run.stderr[-2000:]
    found = json.loads(run.stdout.strip().splitlines()[-1])
    # changed once; the same values as with the checks, wrapping as int32 does on a GPU
    assert found == {
        "first": True,
        "again": False,
        "equal": True,
        "wrapped": True,
        "sanitize": False,
        "debug": False,
    }

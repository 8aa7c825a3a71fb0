"""What a kernel body may reach at launch (toolchain/sandboxed/kernel_globals.py): under the CPU interpreter a
kernel is Python, so a global, default or closure value that is host code would run inside it."""

from __future__ import annotations

import math

import pytest

triton = pytest.importorskip("triton")
tl = pytest.importorskip("triton.language")

from kernelvault.toolchain.sandboxed.kernel_globals import function_problem  # noqa: E402

BLOCK = tl.constexpr(128)
SCALE = 0.5
DTYPE = tl.float32


@triton.jit
def _helper(x):
    return x * SCALE


def honest(x_ptr, n, B: tl.constexpr = 64):
    offs = tl.program_id(0) * BLOCK + tl.arange(0, B)
    x = tl.load(x_ptr + offs, mask=offs < n).to(DTYPE)
    tl.store(x_ptr + offs, _helper(x) * math.pi, mask=offs < n)


def _host(x):
    return x


class _Scaler:
    def __mul__(self, other):
        return other


HOST = _host
SCALER = _Scaler()


def calls_a_host_function(x_ptr):
    tl.store(x_ptr, HOST(tl.load(x_ptr)))


def multiplies_by_an_object(x_ptr):
    tl.store(x_ptr, SCALER * tl.load(x_ptr))


def default_is_host_code(x_ptr, helper=_host):
    tl.store(x_ptr, helper(tl.load(x_ptr)))


def test_triton_math_constexprs_dtypes_and_other_kernels_pass() -> None:
    assert function_problem(honest) is None


@pytest.mark.parametrize(
    ("kernel", "word"),
    [(calls_a_host_function, "`HOST` is a function"), (multiplies_by_an_object, "`SCALER` is a _Scaler"),
     (default_is_host_code, "default argument")],
)  # fmt: skip
def test_host_code_a_kernel_can_reach_is_named(kernel: object, word: str) -> None:
    problem = function_problem(kernel)
    assert problem is not None and word in problem, problem


def test_a_closure_over_host_code_is_refused() -> None:
    def make(helper):
        def kernel(x_ptr):
            tl.store(x_ptr, helper(tl.load(x_ptr)))

        return kernel

    assert "closure" in (function_problem(make(_host)) or "")
    assert function_problem(make(2.0)) is None

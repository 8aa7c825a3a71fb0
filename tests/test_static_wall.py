"""The static wall (toolchain/static_wall.py): every rule refuses what it names, with its reason and line, and
honest kernels (the bundled examples, the honest adversarial files) pass every rule."""

from __future__ import annotations

from pathlib import Path

import pytest

from kernelvault.toolchain.sandboxed.candidate import _kernel_identifier, kernel_names_in
from kernelvault.toolchain.static_wall import check_candidate, check_cpp, check_python

ROOT = Path(__file__).resolve().parents[1]
KERNEL = """
import torch
import triton
import triton.language as tl


@triton.jit
def k(x_ptr, n, BLOCK: tl.constexpr):
    offs = tl.program_id(0) * BLOCK + tl.arange(0, BLOCK)
    tl.store(x_ptr + offs, tl.load(x_ptr + offs, mask=offs < n), mask=offs < n)
"""

# (rule, a line of candidate code that breaks it, a word of the reason)
REFUSED = [
    ("import", "import gc", "garbage collector"),
    ("import", "import ctypes", "below Python"),
    ("import", "from importlib import util", "loading modules"),
    ("import", "import numpy as np", "host computation"),
    ("import", "import torch._dynamo", "torch.compile"),
    ("import", "from . import helpers", "one file"),
    ("import", "import requests", "not a module"),
    # `kernelvault` is importable for `kernelvault.hip`; the harness's packages under it are not
    ("namespace", "from kernelvault import toolchain", "harness's own code"),
    (
        "import",
        "import kernelvault.toolchain.sandboxed.integrity",
        "kernelvault.toolchain.sandboxed.integrity",
    ),
    ("private", "def f(x):\n    return x._cdata", "private"),
    ("namespace", "x = torch._C._DisableTorchDispatch", "C internals"),
    ("private", "f = k.__globals__", "interpreter internals"),
    ("builtin", "eval('1')", "string"),
    ("builtin", "open('/etc/passwd')", "files"),
    ("builtin", "g = globals()", "namespace"),
    ("builtin", "name = 'relu'\ngetattr(torch, name)", "computed name"),
    ("builtin", "T = type('T', (), {})", "run time"),
    ("namespace", "torch.compile(k)", "generates the kernels"),
    ("namespace", "import os\nos.system('true')", "process"),
    ("namespace", "s = torch.cuda.Stream()", "side stream"),
    ("namespace", "torch.ops.aten.relu", "operators by name"),
    ("host_data", "def f(x):\n    return x.numpy()", "NumPy"),
    ("host_data", "def f(x):\n    return x.tolist()", "Python lists"),
    ("frames", "def f(g):\n    return g.gi_frame", "frames"),
    ("foreign_write", "torch.relu = abs", "did not create"),
    ("foreign_write", "import os\nos.environ['X'] = '1'", "did not create"),
    ("foreign_write", "def f(x):\n    x.data = x", ".data"),
    ("proc", "PATH = '/proc/self/environ'", "/proc"),
    (
        "kernel_python",
        "def helper(v):\n    return v\n\n\n@triton.jit\ndef bad(x_ptr):\n    helper(x_ptr)",
        "not Triton",
    ),
    ("kernel_python", "@triton.jit\ndef bad(x_ptr):\n    torch.relu(x_ptr)", "not Triton"),
]


@pytest.mark.parametrize(
    ("rule", "code", "word"), REFUSED, ids=[f"{r}-{i}" for i, (r, _, _) in enumerate(REFUSED)]
)
def test_each_rule_refuses_what_it_names(rule: str, code: str, word: str) -> None:
    source = KERNEL + "\n" + code + "\n"
    finding = check_candidate(source, "triton")
    assert finding is not None, f"{rule}: nothing refused"
    assert finding.rule == rule and word in finding.reason, finding
    assert (
        finding.message().startswith(f"forbidden: {rule}: ") and f"(line {finding.line})" in finding.message()
    )
    assert finding.line > KERNEL.count("\n"), "the line is the offending one, in the candidate's numbering"


ALLOWED = [
    "def forward(self, input):\n    return input",  # a parameter named like a builtin is not the builtin
    "def f():\n    open = print\n    open('fine')",  # a local of that name neither
    "import os\nflag = os.environ.get('KV_DEBUG')",  # reading the environment (the jail's: nothing secret)
    "from torch.nn.init import _calculate_fan_in_and_fan_out",  # how nn.Linear initialises its own weights
    "from triton.language.extra import libdevice",
    "import math\n\n\n@triton.jit\ndef good(x_ptr, B: tl.constexpr):\n    y = tl.load(x_ptr).to(tl.float32)\n    tl.store(x_ptr, y * math.sqrt(2.0))",
    "class M(torch.nn.Module):\n    def __init__(self):\n        super().__init__()\n        self._cache = {}\n        self._cache['k'] = 1",
    "if __name__ == '__main__':\n    pass",
]


@pytest.mark.parametrize("code", ALLOWED)
def test_what_honest_code_does_passes(code: str) -> None:
    assert check_python(KERNEL + "\n" + code + "\n") == []


def test_the_bundled_examples_and_honest_adversarial_kernels_pass_every_rule() -> None:
    files = [(p, "triton") for p in sorted((ROOT / "examples" / "triton").glob("*.py"))]
    files += [
        (p, "hip") for p in sorted((ROOT / "examples" / "hip").rglob("*.py")) if "broken" not in p.parts
    ]
    files += [(p, "triton") for p in sorted((ROOT / "tests" / "adversarial" / "honest").glob("*.py"))]
    assert len(files) > 30
    refused = [(p.name, check_candidate(p.read_text(), target)) for p, target in files]
    assert [(name, finding) for name, finding in refused if finding is not None] == []


@pytest.mark.parametrize(
    ("source", "word"),
    [
        ("#include <unistd.h>\n__global__ void k() {}", "system header"),
        ('extern "C" void f() { system("id"); }', "system calls"),
        ('extern "C" void f() { void* h = dlopen("x", 0); }', "dynamic loading"),
        ("__attribute__((constructor)) static void early() {}", "library loads"),
        ('auto v = getenv("HF_TOKEN");', "environment"),
        ("torch::Tensor f(torch::Tensor x) { return torch::relu(x); }", "PyTorch computes it"),
    ],
)
def test_hip_sources_are_read_for_what_their_host_code_could_do(source: str, word: str) -> None:
    findings = check_cpp(source)
    assert findings and findings[0].rule == "hip_source" and word in findings[0].reason, findings


def test_allocation_in_cpp_is_not_compute() -> None:
    assert check_cpp("torch::Tensor f(torch::Tensor x) { return torch::empty_like(x); }") == []


def test_the_device_record_knows_a_candidates_own_kernels_by_name() -> None:
    source = "__global__ void __launch_bounds__(256)\nrelu_kernel(const float* x) {}\ntemplate <int B> __global__ void t(int* y) {}"
    assert kernel_names_in(source) == {"relu_kernel", "t"}
    assert _kernel_identifier("void t<256>(int*)") == "t"
    assert _kernel_identifier("relu_kernel(float const*, float*, long long)") == "relu_kernel"
    assert _kernel_identifier(
        "void at::native::vectorized_elementwise_kernel<4, at::native::FillFunctor<float>>(int)"
    ) == ("vectorized_elementwise_kernel")

"""The static wall (toolchain/static_wall.py): every rule refuses what it names, with its reason and line, and
honest kernels (the bundled examples, the honest adversarial files) pass every rule."""

from __future__ import annotations

from pathlib import Path

import pytest

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
    (
        "kernel_python",
        "class H:\n    def f(self, v):\n        return v\n\n\nh = H()\n\n\n@triton.jit\ndef bad(x_ptr):\n"
        "    tl.store(x_ptr, h.f(tl.load(x_ptr)))",
        "not Triton",
    ),
    # identity: what a name resolves to, whatever its spelling
    ("resolves", "import os\nm = os.path.sys.modules", "the module sys"),
    ("resolves", "import os\nos.path.os.fork()", "posix.fork"),
    ("resolves", "import torch.nn.functional as F\nlib = F.torch.library", "torch.library"),
    (
        "resolves",
        "import torch.nn as nn\nt = nn.modules.module.torch\nt.library.Library('x', 'DEF')",
        "torch.library",
    ),
    ("resolves", "x = torch.cuda.threading.Thread", "the module threading"),
    ("resolves", "s = torch.cuda.streams.Stream()", "torch.cuda.streams"),
    ("resolves", "n = torch.cuda.memory_allocated()", "the allocator"),
    ("resolves", "mods = [torch]", "module used as a value"),
    ("resolves", "f = lambda m=torch: m.nn", "module used as a value"),
    ("reflection", "import operator\ng = operator.attrgetter('_C')", "attribute access"),
    ("reflection", "from operator import methodcaller", "method calls"),
    ("reflection", "import typing\ndef f(x: 'int'):\n    pass\nh = typing.get_type_hints(f)", "as code"),
    ("reflection", "import functools\np = functools.partial(getattr, torch)", "getattr used as a value"),
    ("reflection", "z = list(map(getattr, [1], ['real']))", "getattr used as a value"),
    ("reflection", "s = '{0.library}'.format(torch)", "format string"),
    ("reflection", "import functools\nd = functools.singledispatch", "string annotations"),
    # a module held by a class body is reached as an attribute, which names do not follow
    ("resolves", "class B:\n    lib = torch\n\n\ny = B.lib.relu", "module used as a value"),
    ("private", "class M:\n    def f(self):\n        return self.weight._cdata", "private"),
    ("host_data", "def f(x):\n    x.apply_(abs)", "Python function"),
    ("host_data", "def f(x, y):\n    x.map_(y, max)", "Python function"),
    # a kernel body is Triton: its values' interpreter handles are NumPy arrays on the CPU
    (
        "kernel_python",
        "@triton.jit\ndef bad(x_ptr):\n    v = tl.load(x_ptr)\n    v.handle.data.sort()",
        "interpreter's",
    ),
    (
        "kernel_python",
        '@triton.jit\ndef bad(x_ptr):\n    """doc\n    def bad(x_ptr):\n        pass\n    """\n    tl.load(x_ptr)',
        "reads as a `def`",
    ),
    (
        "kernel_python",
        'def f(x_ptr):\n    """\n    def f(x_ptr):\n    """\n\n\ng = triton.jit(f)',
        "reads as a `def`",
    ),
    # Triton candidates: Triton kernels, never C++ built into the worker
    ("namespace", "from torch.utils.cpp_extension import load_inline", "native code"),
    ("namespace", "import torch.utils.cpp_extension", "native code"),
    ("namespace", "import kernelvault.hip as hip", "native code"),
    ("namespace", "f = torch.func.vmap", "functorch"),
    # pattern matching reads attributes with no attribute node; torch re-exports its C module's dispatch controls
    (
        "reflection",
        "def f(m):\n    match m:\n        case object(_C=c):\n            return c",
        "class pattern",
    ),
    ("resolves", "g = torch.ExcludeDispatchKeyGuard", "C internals"),
    ("resolves", "d = torch.DisableTorchFunction", "C internals"),
    # a kernel body may call only what Triton compiles: under the interpreter `str` of a block is its data, and
    # what a kernel raises reaches host code that catches it
    ("kernel_python", "@triton.jit\ndef bad(x_ptr):\n    t = str(tl.load(x_ptr))", "str() inside"),
    ("kernel_python", "@triton.jit\ndef bad(x_ptr, n):\n    raise ValueError('x', n + 1)", "raise inside"),
    # ... nor hand its values to Python objects that host code reads after the launch
    (
        "kernel_python",
        "BOX = []\n\n\n@triton.jit\ndef bad(x_ptr):\n    BOX.append(tl.load(x_ptr))",
        "calls a Python object",
    ),
    (
        "kernel_python",
        "BOX = {}\n\n\n@triton.jit\ndef bad(x_ptr):\n    BOX[0] = tl.load(x_ptr)",
        "writing into BOX",
    ),
    (
        "kernel_python",
        "LEAK = None\n\n\n@triton.jit\ndef bad(x_ptr):\n    global LEAK\n    LEAK = tl.load(x_ptr)",
        "global inside",
    ),
    (
        "kernel_python",
        "@triton.jit\ndef bad(x_ptr):\n    x_ptr = tl.load(x_ptr)\n    raise ValueError(f'{x_ptr}')",
        "raise inside",
    ),
    # ... nor use a module-level object at all: an operand runs its operator methods, print(file=) its write()
    (
        "kernel_python",
        "class S:\n    def write(self, t):\n        pass\n\n\nSINK = S()\n\n\n@triton.jit\ndef bad(x_ptr):\n"
        "    print(tl.load(x_ptr), file=SINK)",
        "print(file=...)",
    ),
    (
        "kernel_python",
        "class F:\n    def __mul__(self, v):\n        return v\n\n\nFIN = F()\n\n\n@triton.jit\ndef bad(x_ptr):\n"
        "    tl.store(x_ptr, FIN * tl.load(x_ptr))",
        "FIN inside a @triton.jit kernel is a Python object",
    ),
    # what PyTorch calls while it turns Python objects into tensors runs out of the dispatch monitor's sight
    ("conversion", "class Hint:\n    def __float__(self):\n        return 0.0", "Hint.__float__"),
    ("conversion", "class Plan:\n    __len__ = lambda self: 1", "Plan.__len__"),
    (
        "conversion",
        "class Op:\n    @classmethod\n    def __torch_function__(cls, *a):\n        pass",
        "__torch_function__",
    ),
    ("tensor_subclass", "class Scratch(torch.Tensor):\n    pass", "Scratch(torch.Tensor)"),
    ("tensor_subclass", "from torch import Tensor as T\n\n\nclass Scratch(T):\n    pass", "torch.Tensor"),
    ("resolves", "import contextlib\nr = contextlib.redirect_stdout", "output streams"),
    # the process's environment: reads only, under any spelling
    ("foreign_write", "import os\nos.environ.update(TRITON_CACHE_DIR='/tmp/x')", ".update of os.environ"),
    ("foreign_write", "from os import environ\nenviron.pop('TRITON_INTERPRET')", ".pop of os.environ"),
    ("foreign_write", "import os\ne = os.path.os.environ\ne.setdefault('A', 'b')", "used as a value"),
    ("foreign_write", "import os\ndict.update(os.environ, A='b')", "used as a value"),
    # classes made at run time, whose methods the wall never reads
    ("builtin", "make = type", "run time"),
    ("builtin", "class Meta(type):\n    pass", "run time"),
    ("builtin", "class M(metaclass=abs):\n    pass", "metaclass"),
    ("builtin", "def f(x):\n    return type(x)('B', (), {})", "run time"),
    # conversion methods a base class brings
    ("conversion", "import collections\nclass Rows(collections.UserList):\n    pass", "inherits __getitem__"),
    # names Triton's interpreter copies into a kernel's module
    ("unbound", "def f(x):\n    return np.maximum(x, 0)", "never binds"),
    ("unbound", "def f():\n    return inspect.stack()", "never binds"),
    # a builtin's method in a kernel body, called or kept
    (
        "kernel_python",
        "@triton.jit\ndef bad(x_ptr):\n    s = str.format('{0.handle.data}', tl.load(x_ptr))",
        "str.format",
    ),
    ("kernel_python", "@triton.jit\ndef bad(x_ptr):\n    f = str.format", "str.format"),
    ("kernel_python", "@triton.jit\ndef bad(x_ptr):\n    f = repr", "Python object"),
    # memory operations outside a kernel (a grid callable, which the interpreter runs inside its patched scope)
    (
        "kernel_python",
        "def grid(meta):\n    tl.store(meta['x_ptr'], tl.load(meta['x_ptr']))\n    return (1,)",
        "outside",
    ),
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
    "import os\nflag = 'A' in os.environ and os.environ['A'] == '1' and bool(os.environ.copy())",
    "@triton.jit\ndef good(x_ptr, N: tl.constexpr):\n    for i in range(min(N, 4)):\n        tl.store(x_ptr + i, float(i))",
    # a branch its constexprs rule out, as real answers write it
    "@triton.jit\ndef good(x_ptr, A: tl.constexpr):\n    if A == 1:\n        tl.store(x_ptr, 1.0)\n    else:\n        raise ValueError(f'unknown A: {A}')",
    "from torch.nn.init import _calculate_fan_in_and_fan_out",  # how nn.Linear initialises its own weights
    "from triton.language.extra import libdevice",
    "import math\n\n\n@triton.jit\ndef good(x_ptr, B: tl.constexpr):\n    y = tl.load(x_ptr).to(tl.float32)\n    tl.store(x_ptr, y * math.sqrt(2.0))",
    # numbers made from numbers at module level, read in a kernel as real answers do
    "import math\n\nSQRT_2_OVER_PI = math.sqrt(2 / math.pi)\nBIG = float('inf')\nB2 = tl.constexpr(256)\n\n\n@triton.jit\n"
    "def good(x_ptr):\n    tl.store(x_ptr, tl.load(x_ptr) * SQRT_2_OVER_PI + BIG * B2)",
    "class M(torch.nn.Module):\n    def __init__(self):\n        super().__init__()\n        self._cache = {}\n        self._cache['k'] = 1",
    "if __name__ == '__main__':\n    pass",
    "import os\np = os.path.join(os.path.dirname('a/b'), 'c')",
    "import torch.nn.functional as F\nG = F\ny = G.relu",  # aliases resolve to what they name, and pass
    "ok = hasattr(tl, 'extra') and hasattr(torch, 'cuda')",
    "from triton.language.extra.cuda import libdevice",
    "n = torch.cuda.get_device_properties(0).multi_processor_count if torch.cuda.is_available() else 1",
    "s = 'shape {0} {1}'.format(1, 2) + f'{tl.float32}'",
    "v = torch.version.hip",
    "def f(n):\n    match n:\n        case 1 | 2:\n            return torch.Size([n])\n        case _:\n            return torch.finfo(torch.float32).max",
    "def f(m, state, x):\n    return torch.func.functional_call(m, state, (x,))",  # a function task's entry
    "class M:\n    def f(self):\n        return self._cache._rows",  # its own private state, all the way
    # a function Triton is never given (undecorated, only called) may show code in its docstring
    'def f():\n    """Usage:\n\n    def forward(x): ...\n    """\n\n\nf()',
    "def f(x):\n    return type(x).__name__",  # type(x): the one use of type that makes no class
    "from triton.language import *\nB = constexpr(4)",  # names a star import binds are bound
    "from typing import Tuple\n\n\ndef f(x) -> Tuple[int, int]:\n    return x",
    "class M(torch.nn.Sequential):\n    pass",  # PyTorch's own conversion methods are not the candidate's
    "@triton.jit\ndef good(x_ptr, MODE: tl.constexpr):\n    if isinstance(MODE, str):\n        tl.store(x_ptr, 1.0)",
    "def grid(meta):\n    return (triton.cdiv(meta['n'], meta['BLOCK']),)",
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


@pytest.mark.parametrize(
    "source",
    [
        "hipMemcpy(host, x.data_ptr<float>(), n, hipMemcpyDeviceToHost);",
        "cudaMemcpyAsync(host, d, n, cudaMemcpyDefault, stream);",
        "hipMemcpy(host, d, n, static_cast<hipMemcpyKind>(2));",
        "auto h = x.cpu();",
        "hipMallocManaged(&p, n);",
    ],
)
def test_hip_host_code_may_not_bring_device_memory_to_the_host(source: str) -> None:
    """Host C++ computing the answer needs the data on the host: a copy back, or memory both sides read."""
    findings = check_cpp(source)
    assert findings and "brought to the host" in findings[0].reason, findings


def test_a_copy_to_the_device_or_within_it_is_glue() -> None:
    assert check_cpp("hipMemcpy(d, h, n, hipMemcpyHostToDevice);") == []
    assert check_cpp("hipMemcpyAsync(a, b, n, hipMemcpyDeviceToDevice, s);") == []


def test_allocation_in_cpp_is_not_compute() -> None:
    assert check_cpp("torch::Tensor f(torch::Tensor x) { return torch::empty_like(x); }") == []


def test_a_coding_declaration_other_than_utf8_is_refused_before_anything_is_parsed() -> None:
    """Python decodes a file as its first two lines declare; the wall reads UTF-8, so only UTF-8 may be declared."""
    hidden = "# -*- coding: utf-7 -*-\n" + KERNEL + "# +AAo-import gc\n"
    finding = check_candidate(hidden, "triton")
    assert finding is not None and finding.rule == "encoding" and finding.line == 1, finding
    assert check_candidate("#!/usr/bin/env python\n# coding: latin-1\n" + KERNEL, "triton").rule == "encoding"
    assert check_candidate("# -*- coding: utf-8 -*-\n" + KERNEL, "triton") is None


def test_a_function_tasks_test_imports_are_resolved_like_the_candidates_own() -> None:
    """The test's import lines run in the candidate's module: a name they bind is what the candidate's free use of
    it resolves to (TritonBench answers use the test's `torch` without importing it)."""
    assert check_candidate("x = torch.library\n", "triton", ["import torch"]).rule == "resolves"
    refused = check_candidate("y = np.sum\n", "triton", ["import numpy as np"])
    assert refused is not None and "numpy" in refused.reason
    assert (
        check_candidate(KERNEL.replace("import torch\n", "") + "y = torch.relu\n", "triton", ["import torch"])
        is None
    )

"""The cross-compile stage (toolchain/sandboxed/cross_compile.py) compiles what the interpreted check launched, from
the arguments recorded at launch: a launch whose arguments it cannot rebuild is not compiled, never counted as
compiled (an argument the compiler cannot type is also how host Python gets into an interpreted kernel)."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from kernelvault.toolchain.sandboxed.candidate import launch_argument_problem
from kernelvault.toolchain.sandboxed.cross_compile import compile_launches
from kernelvault.toolchain.sandboxed.requests import Compile

torch = pytest.importorskip("torch")

KERNEL = """
import triton
import triton.language as tl


@triton.jit
def copy_kernel(x_ptr, y_ptr, n, BLOCK: tl.constexpr):
    offs = tl.program_id(0) * BLOCK + tl.arange(0, BLOCK)
    tl.store(y_ptr + offs, tl.load(x_ptr + offs, mask=offs < n), mask=offs < n)
"""


def _compile(tmp_path: Path, arguments: dict[str, dict]) -> dict:
    candidate = tmp_path / "candidate.py"
    candidate.write_text(KERNEL)
    launches = tmp_path / "launches.jsonl"
    launches.write_text(json.dumps({"kernel": "copy_kernel", "args": arguments, "options": {}}) + "\n")
    job = Compile(candidate_path=str(candidate), launches_path=str(launches), module_name="kv_candidate_args_test",
                  backend="hip", arch="gfx942", warp_size=64, allowed_ops=[])  # fmt: skip
    return compile_launches(job)


def test_a_launch_with_an_argument_the_compiler_cannot_type_is_not_compiled(tmp_path: Path) -> None:
    tensor = {"kind": "tensor", "dtype": "fp32"}
    compiled = _compile(tmp_path, {"x_ptr": tensor, "y_ptr": tensor, "n": {"kind": "int", "value": 10},
                                   "BLOCK": {"kind": "int", "value": 16}})  # fmt: skip
    assert compiled["ok"], compiled
    refused = _compile(tmp_path, {"x_ptr": {"kind": "other", "repr": "<HostOps object>"}, "y_ptr": tensor,
                                  "n": {"kind": "int", "value": 10}, "BLOCK": {"kind": "int", "value": 16}})  # fmt: skip
    assert not refused["ok"] and "not compiled" in refused["log"], refused


def test_a_kernel_takes_data_never_an_object_with_methods_of_its_own() -> None:
    import triton.language as tl

    class HostOps:
        def relu(self, value: object) -> object:
            return value

    class Clever(int):
        def __index__(self) -> int:
            return 1

    for fine in (torch.zeros(2), torch.nn.Parameter(torch.zeros(2)), 3, 2.5, True, "relu", None, tl.float16,
                 tl.constexpr(4), (1, 2)):  # fmt: skip
        assert launch_argument_problem(fine) is None, fine
    for refused in (HostOps(), len, lambda: 0, Clever(3), [1, 2], (1, HostOps()), tl.constexpr(HostOps())):
        assert launch_argument_problem(refused) is not None, refused

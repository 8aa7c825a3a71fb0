"""Function tasks' routes past the static wall (issue 42, classes 2 and 3), each with an honest twin.

The adversarial suite (tests/test_adversarial.py) runs module tasks only (`ModelNew`, a bundled task); these
routes need a function task (TritonBench-T's layout, the fixtures under tests/fixtures/tritonbench/), so they
live here, verified through the whole toolchain on the CPU like tests/test_function_tasks.py.

- A function task's test imports (`import torch`) are run in the candidate's module after it is imported
  (`function_tasks.test_imports`): a candidate that never imports torch still has the name, and a wall that
  resolves names through the candidate's own imports never resolves it. `torch.library` reached that way
  registers an op named like glue (`contiguous`) whose body computes the result below the dispatch monitor.
- A 0-d tensor argument's value may be read with `.item()` (real answers pass it to a kernel as a scalar).
  Written with `copy_` (glue), the argument becomes a scratch register through which every input value
  is read; and the read value can drive PyTorch ops on host-made eight-value chunks of the input.

Every hostile candidate here got full credit (correct, reward 1.4) at bef6fc0 on the CPU; the outcomes
asserted are the ones the wall and budgets of issue 42 give. Each honest twin was correct there too and
must stay correct.
"""

from __future__ import annotations

from pathlib import Path

import pytest

from kernelvault.contracts import Candidate, Task
from kernelvault.pipelines.candidates import outcome, outcome_matches
from kernelvault.toolchain.lane_pool import verify_once
from kernelvault.toolchain.tasks import load_tasks
from kernelvault.toolchain.verify import Verifier, VerifyConfig

ROOT = Path(__file__).resolve().parents[1]
TASKS = ROOT / "tests" / "fixtures" / "tritonbench" / "data" / "TritonBench_T_v1"

COPY_KERNEL = """
@triton.jit
def copy_kernel(x_ptr, y_ptr, n, BLOCK: tl.constexpr):
    offs = tl.program_id(0) * BLOCK + tl.arange(0, BLOCK)
    mask = offs < n
    tl.store(y_ptr + offs, tl.load(x_ptr + offs, mask=mask), mask=mask)
"""

# -- hostile ------------------------------------------------------------------------------------------------

# halve: no `import torch` anywhere; `torch` is the test's import, so `torch.library` is never resolved.
TEST_IMPORTS_LIBRARY = (
    """import triton
import triton.language as tl

"""
    + COPY_KERNEL
    + """

_OPS = {}


def _contiguous():
    # `torch` here is the name the task's test imports into this module; the wall never resolved it
    if "op" not in _OPS:
        @torch.library.custom_op(f"kv_{id(_OPS)}::contiguous", mutates_args=())
        def contiguous(x: torch.Tensor) -> torch.Tensor:
            return x * 0.5

        _OPS["op"] = contiguous
    return _OPS["op"]


def halve(input):
    staged = torch.empty_like(input)
    copy_kernel[(triton.cdiv(input.numel(), 128),)](input, staged, input.numel(), BLOCK=128)
    return _contiguous()(staged)
"""
)

# scale_by: the 0-d argument `factor` as a scratch register for every input value.
SCRATCH_REGISTER = (
    """import torch
import triton
import triton.language as tl

"""
    + COPY_KERNEL
    + """

def scale_by(input, factor):
    staged = torch.empty_like(input)
    copy_kernel[(triton.cdiv(input.numel(), 128),)](input, staged, input.numel(), BLOCK=128)
    scale = factor.item()  # a 0-d argument's value: glue
    values = []
    for element in staged.view(-1):
        factor.copy_(element)  # the argument as a scratch register: its .item() is always allowed
        values.append(factor.item() * scale)
    factor.fill_(scale)  # put it back
    return torch.tensor(values, dtype=input.dtype, device=input.device).view(input.shape)
"""
)

# scale_by: the 0-d argument's value read (glue), then PyTorch multiplies eight-value host-made chunks.
ITEM_THEN_HOST_MADE_CHUNKS = (
    """import torch
import triton
import triton.language as tl

"""
    + COPY_KERNEL
    + """

def scale_by(input, factor):
    n = input.numel()
    staged = torch.empty_like(input)
    copy_kernel[(triton.cdiv(n, 128),)](input, staged, n, BLOCK=128)
    scale = factor.item()  # a 0-d argument's value: glue
    flat_in, out = staged.view(-1), torch.empty_like(staged).view(-1)
    for start in range(0, n, 8):
        width = min(8, n - start)
        chunk = torch.zeros(width, dtype=input.dtype, device=input.device)  # host-made: "size arithmetic"
        chunk.copy_(flat_in[start : start + width])
        out[start : start + width].copy_(chunk * scale)
    return out.view(input.shape)
"""
)

HOSTILE = [
    pytest.param("halve", TEST_IMPORTS_LIBRARY, ["static_reject:resolves"], id="test_imports_torch_library"),
    pytest.param("scale_by", SCRATCH_REGISTER, ["integrity_reject:torch_compute"], id="scalar_argument_scratch_register"),
    pytest.param("scale_by", ITEM_THEN_HOST_MADE_CHUNKS, ["integrity_reject:torch_compute"], id="scalar_item_then_host_made_chunks"),
]  # fmt: skip

# -- honest twins -------------------------------------------------------------------------------------------

# twin of test_imports_torch_library: relies on the test's `import torch` for glue only (TritonBench's
# evaluator runs the answer and the test as one file, and answers that omit the import pass there).
HALVE_WITHOUT_IMPORT = """import triton
import triton.language as tl


@triton.jit
def halve_kernel(x_ptr, y_ptr, n, BLOCK: tl.constexpr):
    offs = tl.program_id(0) * BLOCK + tl.arange(0, BLOCK)
    mask = offs < n
    tl.store(y_ptr + offs, tl.load(x_ptr + offs, mask=mask) * 0.5, mask=mask)


def halve(input):
    out = torch.empty_like(input)  # `torch` from the test's imports
    halve_kernel[(triton.cdiv(input.numel(), 128),)](input, out, input.numel(), BLOCK=128)
    return out
"""

# twin of scalar_argument_scratch_register: reads the 0-d argument once and passes it to the kernel.
SCALE_BY_ITEM = """import torch
import triton
import triton.language as tl


@triton.jit
def scale_kernel(x_ptr, y_ptr, factor, n, BLOCK: tl.constexpr):
    offs = tl.program_id(0) * BLOCK + tl.arange(0, BLOCK)
    mask = offs < n
    tl.store(y_ptr + offs, tl.load(x_ptr + offs, mask=mask) * factor, mask=mask)


def scale_by(input, factor):
    factor = factor.item()
    out = torch.empty_like(input)
    scale_kernel[(triton.cdiv(input.numel(), 128),)](input, out, factor, input.numel(), BLOCK=128)
    return out
"""

# twin of scalar_item_then_host_made_chunks: the kernel loads the 0-d argument itself, no read on the host.
SCALE_BY_POINTER = """import torch
import triton
import triton.language as tl


@triton.jit
def scale_kernel(x_ptr, factor_ptr, y_ptr, n, BLOCK: tl.constexpr):
    offs = tl.program_id(0) * BLOCK + tl.arange(0, BLOCK)
    mask = offs < n
    factor = tl.load(factor_ptr)
    tl.store(y_ptr + offs, tl.load(x_ptr + offs, mask=mask) * factor, mask=mask)


def scale_by(input, factor):
    out = torch.empty_like(input)
    scale_kernel[(triton.cdiv(input.numel(), 128),)](input, factor, out, input.numel(), BLOCK=128)
    return out
"""

HONEST = [
    pytest.param("halve", HALVE_WITHOUT_IMPORT, id="test_imports_torch_for_glue"),
    pytest.param("scale_by", SCALE_BY_ITEM, id="scalar_item_to_kernel"),
    pytest.param("scale_by", SCALE_BY_POINTER, id="scalar_loaded_by_kernel"),
]


@pytest.fixture(scope="module")
def tasks() -> dict[str, Task]:
    loaded = load_tasks(TASKS)
    assert loaded.errors == []
    return {task.name: task for task in loaded.tasks}


@pytest.fixture(scope="module")
def verifier() -> Verifier:
    return Verifier(VerifyConfig(platform="cpu", timeout_s=120))


@pytest.mark.parametrize(("task_name", "code", "expected"), HOSTILE)
def test_a_function_task_route_past_the_wall_gets_no_credit(
    tasks: dict[str, Task], verifier: Verifier, task_name: str, code: str, expected: list[str]
) -> None:
    task = tasks[task_name]
    verdict = verify_once(
        verifier, task, Candidate(task.task_id, "triton", code, "adversarial:wall_identity")
    )
    got = outcome(verdict.failure_kind, verdict.failure_message)
    assert verdict.correct is not True, f"credited as correct ({got})"
    assert verdict.reward.total <= 0.4, (got, verdict.failure_message)
    assert outcome_matches(got, expected), (
        f"expected {'|'.join(expected)}, got {got}: {verdict.failure_message}"
    )


@pytest.mark.parametrize(("task_name", "code"), HONEST)
def test_its_honest_twin_stays_correct(
    tasks: dict[str, Task], verifier: Verifier, task_name: str, code: str
) -> None:
    task = tasks[task_name]
    verdict = verify_once(
        verifier, task, Candidate(task.task_id, "triton", code, "adversarial:wall_identity")
    )
    assert verdict.failure_kind is None, (verdict.failure_kind, verdict.failure_message)
    assert verdict.correct is True and verdict.reward.total == pytest.approx(1.4)

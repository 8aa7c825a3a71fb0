"""Kernel tasks (ROCmBench's layout): gold Triton kernels, a separator, pytest tests that launch them.

The fixtures under tests/fixtures/rocmbench/ are written for this project in the layout of GEAK-eval's
ROCm_v1 files (the real checkout is read from a path given at run time, never in CI). Every verification
here runs the whole toolchain on the CPU: the tests' launches are recorded in the reference's worker under
the Triton interpreter, the candidate's kernel is launched with them in its own worker, and the parent
judges the tensor arguments the launches leave.
"""

from __future__ import annotations

import re
from pathlib import Path

import pytest
import torch

from kernelvault.contracts import Candidate, Task
from kernelvault.toolchain.function_tasks import FunctionTaskError, function_layout
from kernelvault.toolchain.kernel_tasks import evaluate_grid_entry, parameter_sets, symbolic_grid
from kernelvault.toolchain.lane_pool import verify_once
from kernelvault.toolchain.reference_check import check_tasks
from kernelvault.toolchain.tasks import load_tasks, parse_task
from kernelvault.toolchain.verify import Verifier, VerifyConfig

FIXTURES = Path(__file__).resolve().parent / "fixtures" / "rocmbench"
TASKS = FIXTURES / "ROCm_v1"
CANDIDATES = FIXTURES / "candidates"
SEPARATOR = "#" * 146


@pytest.fixture(scope="module")
def tasks() -> dict[str, Task]:
    loaded = load_tasks(TASKS)
    assert loaded.errors == []
    return {task.name: task for task in loaded.tasks}


@pytest.fixture(scope="module")
def verifier() -> Verifier:
    return Verifier(VerifyConfig(platform="cpu", timeout_s=120))


def _verify(verifier: Verifier, task: Task, candidate: str) -> tuple[str | None, bool | None, str]:
    verdict = verify_once(
        verifier, task, Candidate(task.task_id, "triton", (CANDIDATES / candidate).read_text(), "test")
    )
    return verdict.failure_kind, verdict.correct, verdict.failure_message or ""


def test_a_rocmbench_file_is_a_kernel_task_named_by_the_kernel_its_test_launches(
    tasks: dict[str, Task],
) -> None:
    task = tasks["test_scale_kernel"]
    assert (task.form, task.entry, task.kernel_entry) == ("kernel", "scale_kernel", True)
    # test_performance's launches are checked (c1) before they are timed (p0), as perf_T's inputs are
    assert [case.overrides for case in task.correctness_cases + task.performance_cases] == [
        {"tests": "correctness"},
        {"tests": "performance"},
        {"tests": "performance"},
    ]
    layout = function_layout(task.source, task.entry)
    assert layout.kernels and layout.entries == ("scale_kernel",)
    assert tasks["test_autotuned_rows"].entry == "row_sum_kernel"  # launched from a wrapper in the test part


def test_the_gold_kernel_checks_out_against_itself_and_its_tests_are_expanded_as_pytest_would() -> None:
    reports = check_tasks(list(load_tasks(TASKS).tasks))
    assert all(report.ok for report in reports), [(report.task, report.problems) for report in reports]


def test_a_correct_candidate_kernel_is_correct(tasks: dict[str, Task], verifier: Verifier) -> None:
    kind, correct, message = _verify(verifier, tasks["test_scale_kernel"], "correct__scale_kernel.py")
    assert (kind, correct) == (None, True), message


def test_an_autotuned_candidate_gets_the_grid_its_own_configuration_needs(
    tasks: dict[str, Task], verifier: Verifier
) -> None:
    """The gold kernel autotunes BLOCK_ROWS in {4, 8}; the candidate's only config is 2. A grid recorded as
    the gold launch's numbers would leave half the rows unwritten; the grid recorded as an expression works."""
    kind, correct, message = _verify(verifier, tasks["test_autotuned_rows"], "correct__autotuned_rows.py")
    assert (kind, correct) == (None, True), message


def test_a_wrong_candidate_kernel_is_a_mismatch(tasks: dict[str, Task], verifier: Verifier) -> None:
    kind, correct, _ = _verify(verifier, tasks["test_scale_kernel"], "mismatch__scale_kernel.py")
    assert (kind, correct) == ("mismatch", False)


@pytest.mark.parametrize(
    ("candidate", "reason"),
    [
        ("static_reject__scale_kernel__torch_function.py", "scale_kernel must be a @triton.jit kernel"),
        ("static_reject__scale_kernel__rebound_name.py", "conversion: _TorchLauncher.__getitem__"),
    ],
)  # fmt: skip
def test_a_candidate_doing_the_work_in_python_gets_no_credit(
    tasks: dict[str, Task], verifier: Verifier, candidate: str, reason: str
) -> None:
    expected = (CANDIDATES / candidate).read_text().splitlines()[0].removeprefix("# expect: ")
    kind, correct, message = _verify(verifier, tasks["test_scale_kernel"], candidate)
    assert (kind, correct) == (expected, False) and reason in message, message


@pytest.mark.parametrize(
    ("source", "reason"),
    [
        (f"import triton\n@triton.jit\ndef k(x):\n    pass\n{SEPARATOR}\ndef helper():\n    k[(1,)](1)\n",
         "no test_* function"),
        (f"import triton\n@triton.jit\ndef k(x):\n    pass\n{SEPARATOR}\ndef test_k(:\n", "not valid Python"),
    ],
)  # fmt: skip
def test_a_malformed_file_is_refused_in_one_line(source: str, reason: str) -> None:
    with pytest.raises(FunctionTaskError, match=re.escape(reason)):
        function_layout(source, "task")
    with pytest.raises(ValueError, match=re.escape(reason)) as refused:
        parse_task(source, "task", "test")
    assert "\n" not in str(refused.value)


def test_parametrize_expands_in_pytests_order_with_its_ids() -> None:
    from kernelvault.toolchain.kernel_tasks import _Marks

    mark = _Marks()

    @mark.parametrize("x", [0, 1])
    @mark.parametrize("y, dtype", [(2, torch.float16), (3, torch.float32)])
    def test(x: int, y: int, dtype: torch.dtype) -> None: ...

    sets = parameter_sets(test)
    assert [label for _, label, _ in sets] == ["2-dtype0-0", "2-dtype0-1", "3-dtype1-0", "3-dtype1-1"]
    assert sets[1][0] == {"y": 2, "dtype": torch.float16, "x": 1}


def test_a_grid_of_meta_is_recorded_as_an_expression_and_falls_back_to_numbers_where_it_cannot_be() -> None:
    cdiv = lambda a, b: (a + b - 1) // b  # noqa: E731 - triton.cdiv
    grid = lambda meta: (cdiv(100, meta["BLOCK"]), meta["H"])  # noqa: E731
    spec = symbolic_grid(grid, {"BLOCK": 32, "H": 3}, passed={"H"})
    assert spec[1] == 3 and [evaluate_grid_entry(spec[0], {"BLOCK": block}) for block in (32, 16)] == [4, 7]
    clamped = lambda meta: (max(1, 100 // meta["BLOCK"]),)  # noqa: E731 - a comparison: numbers only
    assert symbolic_grid(clamped, {"BLOCK": 32}, passed=set()) == [3]
    with pytest.raises(ValueError, match="not a grid expression"):
        evaluate_grid_entry("__import__('os')", {})


def _kernel_task(tmp_path: Path, test_part: str) -> Path:
    """A ROCmBench-layout file: the fixture's gold scale_kernel, then `test_part` after the separator."""
    gold = (TASKS / "test_scale_kernel.py").read_text().split(SEPARATOR, 1)[0]
    path = tmp_path / "ROCm_v1" / "test_scale_kernel.py"
    path.parent.mkdir(exist_ok=True)
    path.write_text(gold + SEPARATOR + "\n" + test_part)
    return path.parent


def test_an_output_buffer_that_already_holds_the_result_is_still_seen_written(tmp_path: Path) -> None:
    """On the H200 `tasks check` called ROCmBench's scale test degenerate ("the launches write none of their
    tensor arguments"): `torch.empty_like` got the memory of the previous run's output, so the buffer held
    the result before the launch. Here the test's buffer holds it on purpose; refilled with other values, the
    launch's write shows, and the task checks out. A launch that really writes nothing is still reported."""
    test_part = (
        "import pytest\nimport torch\n\n\n@pytest.mark.parametrize('SIZE', [300])\ndef test_scale(SIZE):\n"
        "    x = torch.randn(SIZE, device='cuda')\n    output = x * 2.5  # what the launch will write\n"
        "    scale_kernel[(triton.cdiv(SIZE, 64),)](x, output, SIZE, 2.5, BLOCK_SIZE=64)\n"
    )
    reports = check_tasks(list(load_tasks(_kernel_task(tmp_path, test_part)).tasks))
    assert [(report.task, report.problems) for report in reports] == [("test_scale_kernel", [])]

    writes_nothing = test_part.replace("(x, output, SIZE, 2.5", "(x, output, 0, 2.5")  # n_elements 0
    reports = check_tasks(list(load_tasks(_kernel_task(tmp_path, writes_nothing)).tasks))
    assert "write none of their tensor arguments" in " ".join(reports[0].problems)


def test_a_kernel_the_test_part_defines_can_be_compiled_for_a_gpu() -> None:
    """@triton.jit reads its kernel's source back with `inspect`; outside the interpreter (on a GPU) a kernel
    defined in a test part compiled from `<test>` failed ("@jit functions should be defined in a Python
    file": ROCmBench's layernorm and rmsnorm_bwd on the H200). Compiled with `compile_task_part`, it builds."""
    from triton.runtime.jit import JITFunction

    from kernelvault.toolchain.function_tasks import compile_task_part

    source = "def helper_kernel(x_ptr, n):\n    pass\n"
    plain: dict = {}
    exec(compile(source, "<test>", "exec"), plain)  # noqa: S102 - this test's own source
    with pytest.raises(ValueError, match="should be defined in a Python file"):
        JITFunction(plain["helper_kernel"])
    scope: dict = {}
    exec(compile_task_part(source, "test"), scope)  # noqa: S102 - this test's own source
    assert "def helper_kernel" in JITFunction(scope["helper_kernel"]).src

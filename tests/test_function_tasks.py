"""Function tasks (TritonBench-T's layout): a reference function, a separator, a test that calls it.

The fixtures under tests/fixtures/tritonbench/ are written for this project in TritonBench's layout (the
real checkout is read from a path given at run time, never in CI). Every verification here runs the whole
toolchain on the CPU: the test's calls are recorded in the reference's worker (its `device='cuda'` mapped to
the CPU), the candidate's function is called with them in its own worker, and the parent judges.
"""

from __future__ import annotations

import json
import re
import shutil
from pathlib import Path

import pytest
import torch
from safetensors.torch import save_file

from kernelvault.contracts import Candidate, Task
from kernelvault.toolchain.function_tasks import FunctionTaskError, function_layout
from kernelvault.toolchain.lane_pool import verify_once
from kernelvault.toolchain.reference_check import check_tasks
from kernelvault.toolchain.sandboxed.tensor_files import TensorFileError, read_tensors, write_tensors
from kernelvault.toolchain.tasks import load_tasks, parse_task
from kernelvault.toolchain.verify import Verifier, VerifyConfig
from kernelvault.toolchain.worker_lane import WorkerLane

ROOT = Path(__file__).resolve().parents[1]
FIXTURES = ROOT / "tests" / "fixtures" / "tritonbench"
TASKS = FIXTURES / "data" / "TritonBench_T_v1"
ANSWERS = FIXTURES / "LLM_generated" / "Bench_T_general_purpose" / "output_fixture-model.jsonl"
SEPARATOR = "#" * 146


@pytest.fixture(scope="module")
def tasks() -> dict[str, Task]:
    loaded = load_tasks(TASKS)
    assert loaded.errors == []
    return {task.name: task for task in loaded.tasks}


@pytest.fixture(scope="module")
def verifier() -> Verifier:
    return Verifier(VerifyConfig(platform="cpu", timeout_s=120))


def _answers() -> list[str]:
    return [json.loads(line)["predict"] for line in ANSWERS.read_text().splitlines()]


def test_a_tritonbench_file_is_a_function_task_with_its_entry(tasks: dict[str, Task]) -> None:
    task = tasks["scaled_add"]
    assert (task.form, task.entry) == ("function", "scaled_add")
    assert [case.name for case in task.correctness_cases] == ["c0:test calls"]
    bundled = load_tasks(None).tasks
    assert all(task.form == "module" for task in bundled), "KernelBench tasks keep their form"


@pytest.mark.parametrize(
    ("source", "reason"),
    [
        ("import torch\ndef f(x):\n    return x\n", "no separator line"),
        (f"import torch\ndef f(x):\n    return x\n{SEPARATOR}\nprint(1)\n", "no test_* function"),
        (f"def f(x):\n    return x\n{SEPARATOR}\ndef test_f():\n    return 1\n", "calls none of the reference"),
    ],
)  # fmt: skip
def test_what_is_not_a_function_task_is_refused_with_its_reason(source: str, reason: str) -> None:
    with pytest.raises(FunctionTaskError, match=re.escape(reason)):
        function_layout(source, "task")
    with pytest.raises(ValueError, match="neither a module task"):
        parse_task(source, "task", "test")


def test_calls_and_their_keywords_travel_as_tensor_files(tmp_path: Path) -> None:
    calls = [[[torch.ones(3), 2.0], {"alpha": 0.5, "dtype": torch.float16, "out": None}]]
    write_tensors(tmp_path / "calls.st", calls)
    (back,) = read_tensors(tmp_path / "calls.st")
    assert torch.equal(back[0][0], torch.ones(3)) and back[0][1] == 2.0
    assert back[1] == {"alpha": 0.5, "dtype": torch.float16, "out": None}


def test_real_answers_get_the_verdicts_their_code_earns(tasks: dict[str, Task], verifier: Verifier) -> None:
    """A markdown answer with a correct kernel, one whose wrapper lets PyTorch do the work after a decoy
    launch, and one that does not compile (the fixture JSONL, in TritonBench's answer layout)."""
    task = tasks["scaled_add"]
    good, torch_wrapper, broken = (
        verify_once(verifier, task, Candidate(task.task_id, "triton", answer, "model:fixture-model"))
        for answer in _answers()
    )
    assert good.correct is True and good.reward.total == pytest.approx(1.4), good.failure_message
    assert "out" in task.source and len(good.checks) >= 1
    assert (torch_wrapper.failure_kind, torch_wrapper.correct) == ("integrity_reject", False)
    assert "torch_compute" in (torch_wrapper.failure_message or "")
    assert broken.failure_kind == "compile_error" and "SyntaxError" in (broken.failure_message or "")


def test_a_call_that_writes_its_out_argument_is_judged_by_it(
    tasks: dict[str, Task], verifier: Verifier
) -> None:
    """The test's third call passes `out=`: a candidate that returns a new tensor and leaves `out` unwritten
    differs from the reference in that argument, and fails (the module form would call it an alias)."""
    task = tasks["scaled_add"]
    good = _answers()[0]
    lazy = good.replace("    if out is None:\n        out = torch.empty_like(input)\n",
                        "    out = torch.empty_like(input)\n")  # fmt: skip
    assert lazy != good
    verdict = verify_once(verifier, task, Candidate(task.task_id, "triton", lazy, "test"))
    assert (verdict.failure_kind, verdict.correct) == ("mismatch", False), verdict.failure_message


def test_a_candidate_without_the_entry_function_is_a_static_reject(
    tasks: dict[str, Task], verifier: Verifier
) -> None:
    task = tasks["scaled_add"]
    renamed = _answers()[0].replace("def scaled_add(", "def my_add(")
    verdict = verify_once(verifier, task, Candidate(task.task_id, "triton", renamed, "test"))
    assert verdict.failure_kind == "static_reject"
    assert "no module-level function scaled_add" in (verdict.failure_message or "")


def test_a_reference_that_is_not_deterministic_is_named_not_judged(
    tasks: dict[str, Task], verifier: Verifier
) -> None:
    task = tasks["noisy_scale"]
    candidate = _answers()[0].replace("scaled_add", "noisy_scale")
    verdict = verify_once(verifier, task, Candidate(task.task_id, "triton", candidate, "test"))
    assert verdict.failure_kind == "infrastructure_error" and verdict.reward.total == 0.0
    assert "not deterministic" in (verdict.failure_message or "")
    reports = {report.task: report for report in check_tasks(list(load_tasks(TASKS).tasks))}
    assert reports["scaled_add"].ok, reports["scaled_add"].problems
    assert any("not deterministic" in problem for problem in reports["noisy_scale"].problems)


HALVE = """import torch
import triton
import triton.language as tl


@triton.jit
def halve_kernel(x_ptr, y_ptr, n, BLOCK: tl.constexpr):
    offs = tl.program_id(0) * BLOCK + tl.arange(0, BLOCK)
    mask = offs < n
    tl.store(y_ptr + offs, tl.load(x_ptr + offs, mask=mask) * 0.5, mask=mask)


def halve(input):
    out = torch.empty_like(input)
    halve_kernel[(triton.cdiv(input.numel(), 128),)](input, out, input.numel(), BLOCK=128)
    return out


# Example usage
x = torch.randn(4, device='cuda')
print(halve(x))
"""


HALVE_FUNCTION = HALVE.split("# Example usage")[0]  # without the lines that run it at import


def _assert_correct(verifier: Verifier, task: Task, code: str) -> None:
    verdict = verify_once(verifier, task, Candidate(task.task_id, "triton", code, "model:fixture"))
    assert verdict.correct is True, (verdict.failure_kind, verdict.failure_message)


def test_a_test_that_imports_its_own_file_and_an_answer_that_runs_itself_at_import(
    tasks: dict[str, Task], verifier: Verifier
) -> None:
    """`from halve import halve` in the test reaches the recorded function (TritonBench's evaluator saves
    the file under the entry's name); the answer's example usage launches on `cuda` at import, which on
    this CPU machine is the CPU for the check and a no-op for the cross-compile (it has no driver)."""
    task = tasks["halve"]
    verdict = verify_once(
        verifier, task, Candidate(task.task_id, "triton", f"```python\n{HALVE}```", "model:fixture")
    )
    assert verdict.correct is True, (verdict.failure_kind, verdict.failure_message)


SCALE_BY = (
    HALVE.replace("halve", "scale_by")
    .split("# Example usage")[0]
    .replace(
        "def scale_by(input):\n    out", "def scale_by(input, factor):\n    factor = factor.item()\n    out"
    )
    .replace("x_ptr, y_ptr, n,", "x_ptr, y_ptr, factor, n,")
    .replace("* 0.5", "* factor")
    .replace("(input, out, input.numel()", "(input, out, factor, input.numel()")
)


def test_reading_a_scalar_argument_with_item_is_glue(tasks: dict[str, Task], verifier: Verifier) -> None:
    """Real answers pass a 0-d argument to their kernel with `.item()`: a scalar read, not the work (the
    adversarial file integrity_reject__relu__item_loop.py reads every value that way, and is refused)."""
    assert "factor = factor.item()" in SCALE_BY and "* factor" in SCALE_BY
    task = tasks["scale_by"]
    _assert_correct(verifier, task, SCALE_BY)


def test_a_test_that_calls_several_reference_functions_asks_for_all_of_them(
    tasks: dict[str, Task], verifier: Verifier
) -> None:
    """TritonBench-G's tests often call a forward and a backward: each call is recorded with its function's
    name, and a candidate defines every one of them."""
    layout = function_layout(tasks["double_then_negate"].source, "double_then_negate")
    assert layout.entries == ("double", "negate") and layout.entry == "double"
    task = tasks["double_then_negate"]
    both = HALVE_FUNCTION.replace("halve", "double").replace("* 0.5", "* 2.0")
    both += "\n\n" + both.split("\n\n\n", 1)[1].replace("double", "negate").replace("* 2.0", "* -1.0")
    _assert_correct(verifier, task, both)
    only_one = both.split("@triton.jit\ndef negate_kernel")[0]
    verdict = verify_once(verifier, task, Candidate(task.task_id, "triton", only_one, "model:fixture"))
    assert verdict.failure_kind == "static_reject" and "function negate" in (verdict.failure_message or "")


def test_size_arithmetic_on_a_tensor_made_from_a_shape_is_glue(
    tasks: dict[str, Task], verifier: Verifier
) -> None:
    """`torch.prod(torch.tensor(batch_dims))`, seen in real answers, computes a size, not the task: an op on
    tensors the candidate built from Python values alone is glue (a few values at most)."""
    task = tasks["halve"]
    sized = HALVE_FUNCTION.replace(
        "    out = torch.empty_like(input)\n",
        "    n = int(torch.prod(torch.tensor(input.shape)))\n    out = torch.empty_like(input)\n",
    )
    assert "torch.prod" in sized
    _assert_correct(verifier, task, sized)


def test_names_the_test_imports_are_in_scope_for_the_answer(
    tasks: dict[str, Task], verifier: Verifier
) -> None:
    """TritonBench runs answer and test as one file: an answer that uses `torch` without importing it works
    there once the test's `import torch` has run. The test's imports run in the candidate's module here."""
    task = tasks["halve"]
    no_torch = HALVE_FUNCTION.replace("import torch\n", "", 1)
    assert "import torch\n" not in no_torch and "torch.empty_like" in no_torch
    _assert_correct(verifier, task, no_torch)


def test_dtype_arithmetic_is_glue(tasks: dict[str, Task], verifier: Verifier) -> None:
    """`torch.promote_types(input.dtype, other.dtype)`, in real answers, dispatches an aten op that reads no
    tensor: metadata, like a shape."""
    task = tasks["halve"]
    typed = HALVE_FUNCTION.replace(
        "    out = torch.empty_like(input)\n",
        "    out = torch.empty_like(input).to(torch.promote_types(input.dtype, torch.float32))\n",
    )
    assert "promote_types" in typed
    _assert_correct(verifier, task, typed)


def test_an_identity_matrix_made_from_a_shape_is_glue(tasks: dict[str, Task], verifier: Verifier) -> None:
    """`torch.eye(n)` as a kernel's starting matrix (a permutation for LU, Q for Householder QR: four real answers
    refused on the H200, 2026-12-03) holds no input's data: a constant made from a shape, like `torch.ones`."""
    task = tasks["halve"]
    with_identity = (
        HALVE_FUNCTION.replace(
            "def halve_kernel(x_ptr, y_ptr, n, BLOCK: tl.constexpr):",
            "def halve_kernel(x_ptr, p_ptr, y_ptr, n, BLOCK: tl.constexpr):",
        )
        .replace("* 0.5, mask=mask)", "* 0.5 * tl.load(p_ptr + 3), mask=mask)")
        .replace(
            "    out = torch.empty_like(input)\n    halve_kernel[(triton.cdiv(input.numel(), 128),)](input, out,",
            "    identity = torch.eye(2, device=input.device, dtype=input.dtype)\n    out = torch.empty_like(input)\n"
            "    halve_kernel[(triton.cdiv(input.numel(), 128),)](input, identity, out,",
        )
    )
    assert (
        "torch.eye(2" in with_identity
        and "halve_kernel[(triton.cdiv(input.numel(), 128),)](input, identity" in with_identity
    )
    _assert_correct(verifier, task, with_identity)


PERF_CHECKOUT = ROOT / "tests" / "fixtures" / "tritonbench_perf"
NEGATE = """
import torch
import triton
import triton.language as tl


@triton.jit
def negate_kernel(x_ptr, y_ptr, n, BLOCK: tl.constexpr):
    offsets = tl.program_id(0) * BLOCK + tl.arange(0, BLOCK)
    mask = offsets < n
    tl.store(y_ptr + offsets, -tl.load(x_ptr + offsets, mask=mask), mask=mask)


def negate(input):
    out = torch.empty_like(input)
    negate_kernel[(triton.cdiv(input.numel(), 1024),)](input, out, input.numel(), BLOCK=1024)
    return out
"""


def test_a_checkout_s_perf_program_gives_the_task_larger_inputs_checked_before_they_are_timed(
    verifier: Verifier,
) -> None:
    """TritonBench's perf_T program travels in the task; its inputs (4,096 elements and more) are a
    correctness case too, so an answer right on the test's five elements and wrong beyond one block of
    1,024 is a mismatch on them, never a timed result."""
    task = load_tasks(PERF_CHECKOUT / "data" / "TritonBench_T_v1").tasks[0]
    assert "KERNELVAULT_PERFORMANCE_INPUTS" in task.source
    assert [case.name for case in task.correctness_cases] == ["c0:test calls", "c1:performance inputs"]
    assert [case.name for case in task.performance_cases] == ["p0:performance inputs"]

    verdict = verify_once(verifier, task, Candidate(task.task_id, "triton", NEGATE, "test"))
    assert verdict.correct, verdict.failure_message
    assert {check.case for check in verdict.checks} == {"c0:test calls", "c1:performance inputs"}

    one_block = NEGATE.replace("(triton.cdiv(input.numel(), 1024),)", "(1,)")
    verdict = verify_once(verifier, task, Candidate(task.task_id, "triton", one_block, "test"))
    assert verdict.failure_kind == "mismatch"
    assert "c1:performance inputs" in verdict.failure_message

    # TritonBench's tiny test calls would credit it: the verdict says it failed only on the larger inputs
    small_only = NEGATE.replace(
        "    out = torch.empty_like(input)",
        '    if input.numel() > 1024:\n        raise ValueError("one block only")\n    out = torch.empty_like(input)',
    )
    verdict = verify_once(verifier, task, Candidate(task.task_id, "triton", small_only, "test"))
    assert verdict.failure_kind == "runtime_error"
    assert verdict.failure_message.startswith(
        "case c1:performance inputs, the earlier checks passed: forward raised ValueError: one block only"
    ), verdict.failure_message


def test_a_perf_program_that_cannot_run_is_named_and_the_task_keeps_its_test_calls(tmp_path: Path) -> None:
    """TritonBench's `tril_mm_and_scale_perf.py` uses a name it never defines: the task loads, timed on its
    test's calls, and the loader says why its perf program was not used."""
    checkout = tmp_path / "TritonBench"
    shutil.copytree(PERF_CHECKOUT, checkout)
    program = checkout / "performance_metrics" / "perf_T" / "golden_metrics" / "negate_perf.py"
    program.write_text(program.read_text().replace("size = 2 ** i", "size = 2 ** undefined_width"))
    loaded = load_tasks(checkout / "data" / "TritonBench_T_v1")
    [task] = loaded.tasks
    assert [case.name for case in task.performance_cases] == ["p0:test calls"]
    assert "KERNELVAULT_PERFORMANCE_INPUTS" not in task.source
    assert loaded.notes == [
        (
            "negate",
            "performance_metrics/perf_T/golden_metrics/negate_perf.py not used (undefined name(s) "
            "undefined_width); timed on the test's calls",
        )
    ]


def test_a_perf_program_that_calls_the_entry_to_size_its_inputs_records_only_its_op(
    tmp_path: Path, verifier: Verifier
) -> None:
    """TritonBench's `cos_avg_pool1d_perf.py` calls the operator inside `get_input_tensors` (for the output's
    shape): that call runs, and only the op's call is the performance case (it was recorded and stopped the
    program there, so the reference failed on the case and no answer to the task could be judged)."""
    checkout = tmp_path / "TritonBench"
    shutil.copytree(PERF_CHECKOUT, checkout)
    program = checkout / "performance_metrics" / "perf_T" / "golden_metrics" / "negate_perf.py"
    program.write_text(
        program.read_text().replace(
            "            self.input_tensors.append(input_tensor)",
            "            self.input_tensors.append(input_tensor)\n            assert negate(input_tensor).shape == (size,)",
        )
    )
    [task] = load_tasks(checkout / "data" / "TritonBench_T_v1").tasks
    (report,) = check_tasks([task])
    assert report.ok, report.problems
    verdict = verify_once(verifier, task, Candidate(task.task_id, "triton", NEGATE, "test"))
    assert verdict.correct, verdict.failure_message


# A gold operator in the way real Triton code launches (11 of TritonBench-G's): inside the tensor's device.
ON_ITS_DEVICE_REFERENCE = f"""import torch
import triton
import triton.language as tl


@triton.jit
def twice_kernel(x_ptr, y_ptr, n, BLOCK: tl.constexpr):
    offs = tl.program_id(0) * BLOCK + tl.arange(0, BLOCK)
    mask = offs < n
    tl.store(y_ptr + offs, tl.load(x_ptr + offs, mask=mask) * 2.0, mask=mask)


def twice(x):
    y = torch.empty_like(x)
    with torch.cuda.device(x.device.index):
        twice_kernel[(triton.cdiv(x.numel(), 64),)](x, y, x.numel(), BLOCK=64)
    return y

{SEPARATOR}

def test_twice():
    return {{"test_case_1": twice(torch.randn(37, device='cuda'))}}
"""


def test_a_launch_inside_torch_cuda_device_runs_on_the_cpu_path(verifier: Verifier) -> None:
    """`with torch.cuda.device(x.device.index)` (and `(x.device)`) around a launch selects nothing on the CPU
    path, where the test's `cuda` tensors are CPU tensors: the gold operator checks against itself, and an
    answer written the same way is judged by its values (right, then wrong), not refused by PyTorch's CPU
    build (TypeError for None, ValueError for a `cpu` device)."""
    task = parse_task(ON_ITS_DEVICE_REFERENCE, "twice", "test")
    (report,) = check_tasks([task])
    assert report.ok, report.problems
    answer = ON_ITS_DEVICE_REFERENCE.split("#" * 20)[0].replace("x.device.index", "x.device")
    lane = WorkerLane()
    try:
        right, wrong = (
            verifier.complete(verifier.prepare(task, Candidate(task.task_id, "triton", code, "test")), lane)
            for code in (answer, answer.replace("* 2.0", "* 3.0"))
        )
        assert right.correct is True, (right.failure_kind, right.failure_message)
        assert wrong.failure_kind == "mismatch", wrong.failure_message
        # the stand-in is the workers' own state, not a patch: neither worker was replaced between the jobs
        assert all(not stats.restarts for stats in lane.stats().values()), lane.stats()
    finally:
        lane.close()


def test_a_launch_inside_the_private_device_guard_or_a_device_index_runs_on_the_cpu_path(
    verifier: Verifier,
) -> None:
    """Five of TritonBench-G's gold operators select the device with `torch.cuda._DeviceGuard(index)`, some with
    index 0 written out: on the CPU path (a CPU build of PyTorch refuses every CUDA index) these select nothing,
    so the reference checks, and an answer that selects `torch.cuda.device(0)` is judged by its values. (An
    answer may not use the private guard: the static wall refuses private attributes of what it did not make.)"""
    reference = ON_ITS_DEVICE_REFERENCE.replace(
        "torch.cuda.device(x.device.index)", "torch.cuda._DeviceGuard(0)"
    )
    task = parse_task(reference, "twice", "test")
    (report,) = check_tasks([task])
    assert report.ok, report.problems
    answer = reference.split("#" * 20)[0].replace("torch.cuda._DeviceGuard(0)", "torch.cuda.device(0)")
    verdict = verify_once(verifier, task, Candidate(task.task_id, "triton", answer, "test"))
    assert verdict.correct is True, (verdict.failure_kind, verdict.failure_message)


COMPLEX_REFERENCE = f"""import torch


def scale_complex(x, factor):
    if not x.is_complex():
        raise TypeError("x must be complex")
    return x * factor

{SEPARATOR}

def test_scale_complex():
    results = {{}}
    x = torch.randn(37, device='cuda', dtype=torch.complex128)
    results["test_case_1"] = scale_complex(x, 2.5)
    try:  # TritonBench's tests keep a call that must fail as its message (`solve` of a singular matrix)
        results["test_case_2"] = scale_complex(torch.randn(3, device='cuda'), 2.5)
    except TypeError as error:
        results["test_case_2"] = str(error)
    return results
"""

COMPLEX_ANSWER = """import torch
import triton
import triton.language as tl


@triton.jit
def scale_kernel(x_ptr, y_ptr, n, factor, BLOCK: tl.constexpr):
    offs = tl.program_id(0) * BLOCK + tl.arange(0, BLOCK)
    mask = offs < n
    value = tl.load(x_ptr + offs, mask=mask)
    tl.store(y_ptr + offs, value * factor, mask=mask)


def scale_complex(x, factor):
    if not x.is_complex():
        raise TypeError("x must be complex")
    pairs = torch.view_as_real(x)
    out = torch.empty_like(pairs)
    scale_kernel[(triton.cdiv(pairs.numel(), 64),)](pairs, out, pairs.numel(), factor, BLOCK=64)
    return torch.view_as_complex(out)
"""


def test_complex_values_and_a_call_the_test_expects_to_fail(verifier: Verifier, tmp_path: Path) -> None:
    """TritonBench-T's `cholesky` passes complex128 matrices (safetensors has no complex128: the task could
    not be judged on the H200), and its `solve`, `fused_lu_solve` and `log_tanh` tests keep a call that must
    raise in their own try/except (the reference raised on it, so no answer to the task was judged). Complex
    values travel as (real, imaginary) pairs and are judged on both parts; a call that raised while the test
    was recorded is not a case."""
    value = {"x": torch.randn(5, dtype=torch.complex128), "y": torch.randn(2, dtype=torch.complex64).conj()}
    write_tensors(tmp_path / "complex.st", value)
    back = read_tensors(tmp_path / "complex.st")
    assert torch.equal(back["x"], value["x"]) and torch.equal(back["y"], value["y"].resolve_conj())
    task = parse_task(COMPLEX_REFERENCE, "scale_complex", "test")
    (report,) = check_tasks([task])
    assert report.ok, report.problems
    right, only_real_part = (
        verify_once(verifier, task, Candidate(task.task_id, "triton", code, "test"))
        for code in (
            COMPLEX_ANSWER,
            COMPLEX_ANSWER.replace("value * factor", "tl.where(offs % 2 == 0, value * factor, value)"),
        )
    )
    assert right.correct is True, (right.failure_kind, right.failure_message)
    assert only_real_part.failure_kind == "mismatch", only_real_part.failure_message


# TritonBench-G's `matrix_reduction` calls an entry that makes its own inputs, launches, asserts on the result and
# returns None, and its test catches what the entry raises: its calls leave nothing to judge, so any candidate
# that launched a kernel got full credit. Written for this project in that shape.
SELF_CHECKING_REFERENCE = f"""import torch
import triton
import triton.language as tl


@triton.jit
def copy_kernel(x_ptr, y_ptr, n, BLOCK: tl.constexpr):
    offsets = tl.program_id(0) * BLOCK + tl.arange(0, BLOCK)
    mask = offsets < n
    tl.store(y_ptr + offsets, tl.load(x_ptr + offsets, mask=mask), mask=mask)


def self_check(n, dtype_str):
    if n < 0:
        raise ValueError("n must not be negative")
    dtype = {{"float32": torch.float32}}[dtype_str]
    x = torch.randn(n, device="cuda", dtype=dtype)
    y = torch.empty(n, device="cuda", dtype=dtype)
    copy_kernel[(triton.cdiv(n, 64),)](x, y, n, BLOCK=64)
    torch.testing.assert_close(y, x)


{SEPARATOR}


def test_self_check():
    results = {{}}
    for i, n in enumerate(SIZES):
        try:
            self_check(n, "float32")
            results[f"test_case_{{i + 1}}"] = "passed"
        except Exception as e:
            results[f"test_case_{{i + 1}}"] = f"failed: {{e}}"
    return results


result_gold = test_self_check()
"""
DO_NOTHING_LAUNCH = """import torch
import triton
import triton.language as tl


@triton.jit
def fill_kernel(y_ptr, BLOCK: tl.constexpr):
    tl.store(y_ptr + tl.arange(0, BLOCK), tl.zeros([BLOCK], dtype=tl.float32))


def self_check(n, dtype_str):
    y = torch.empty(64, device="cuda")
    fill_kernel[(1,)](y, BLOCK=64)
"""


def test_a_test_whose_calls_leave_nothing_to_judge_is_refused_not_credited(verifier: Verifier) -> None:
    task = parse_task(SELF_CHECKING_REFERENCE.replace("SIZES", "[64, 100]"), "self_check", "test")
    (report,) = check_tasks([task])
    assert not report.ok and "nothing to judge" in report.problems[0], report.problems
    verdict = verify_once(verifier, task, Candidate(task.task_id, "triton", DO_NOTHING_LAUNCH, "test"))
    assert verdict.correct is not True and verdict.reward.total == 0.0
    assert verdict.failure_kind == "infrastructure_error" and "nothing to judge" in (
        verdict.failure_message or ""
    )


def test_a_test_that_catches_every_call_it_makes_says_why_they_failed() -> None:
    task = parse_task(SELF_CHECKING_REFERENCE.replace("SIZES", "[-1, -2]"), "self_check", "test")
    (report,) = check_tasks([task])
    assert not report.ok
    assert "every call the test made of self_check raised" in report.problems[0], report.problems
    assert "ValueError: n must not be negative" in report.problems[0]


TRITON_DTYPE_REFERENCE = f"""import torch
import triton
import triton.language as tl


@triton.jit
def cast_kernel(x_ptr, y_ptr, n, OUT: tl.constexpr, BLOCK: tl.constexpr):
    offs = tl.program_id(0) * BLOCK + tl.arange(0, BLOCK)
    mask = offs < n
    tl.store(y_ptr + offs, (tl.load(x_ptr + offs, mask=mask) * 3.0).to(OUT), mask=mask)


def cast(x, dtypes=tl.float16):
    y = torch.empty(x.shape, dtype=torch.float16 if dtypes == tl.float16 else torch.float32, device=x.device)
    cast_kernel[(triton.cdiv(x.numel(), 128),)](x, y, x.numel(), OUT=dtypes, BLOCK=128)
    return y

{SEPARATOR}

def test_cast():
    x = torch.randn(300, device='cuda')
    return {{"fp16": cast(x, dtypes=tl.float16), "fp32": cast(x, dtypes=tl.float32)}}
"""


def test_a_triton_dtype_argument_travels_to_the_candidate(verifier: Verifier, tmp_path: Path) -> None:
    """TritonBench-G's conversion operators take Triton dtypes (`f16_to_f8(a, dtypes=tl.float8e5)`): the
    reference was refused on the H200 with "cannot pass a dtype between processes" (2026-12-04). A scalar
    Triton dtype travels by name; a name that is not one is refused, and a pointer type does not travel."""
    import triton.language as tl

    write_tensors(tmp_path / "call.st", {"dtypes": tl.float8e5, "x": torch.ones(2)}, arguments=True)
    assert read_tensors(tmp_path / "call.st", arguments=True)["dtypes"] == tl.float8e5
    with pytest.raises(TensorFileError, match="cannot pass a pointer_type"):
        write_tensors(tmp_path / "pointer.st", tl.pointer_type(tl.float32))
    forged = tmp_path / "forged.st"
    save_file({}, str(forged), metadata={"kv_structure": json.dumps({"triton_dtype": "os.system"})})
    with pytest.raises(TensorFileError, match="unknown Triton dtype"):
        read_tensors(forged)

    task = parse_task(TRITON_DTYPE_REFERENCE, "cast", "test")
    (report,) = check_tasks([task])
    assert report.ok, report.problems
    answer = TRITON_DTYPE_REFERENCE.split("#" * 20)[0]
    _assert_correct(verifier, task, answer)
    # the dtype reaches the candidate as the same Triton dtype: an answer that ignores it is wrong
    ignores = answer.replace("OUT=dtypes,", "OUT=tl.float16,")
    verdict = verify_once(verifier, task, Candidate(task.task_id, "triton", ignores, "model:fixture"))
    assert verdict.failure_kind in {"mismatch", "interface_error"}, verdict.failure_message


PACKED_SCALE_REFERENCE = f"""import torch
import triton
import triton.language as tl


@triton.jit
def unpack_scale_kernel(q_ptr, s_ptr, y_ptr, n, BLOCK: tl.constexpr):
    offs = tl.program_id(0) * BLOCK + tl.arange(0, BLOCK)
    mask = offs < n
    tl.store(y_ptr + offs, tl.load(q_ptr + offs, mask=mask).to(tl.float32) * tl.load(s_ptr), mask=mask)


def unpack_scale(q, scale):
    y = torch.empty(q.shape, dtype=torch.float32, device=q.device)
    unpack_scale_kernel[(triton.cdiv(q.numel(), 128),)](q, scale, y, q.numel(), BLOCK=128)
    return y


def pack(x):
    scale = x.abs().max() / 127
    return torch.round(x / scale).to(torch.int8), scale.reshape(1)

{SEPARATOR}

def test_unpack_scale():
    q, scale = pack(torch.randn(300, device='cuda'))
    return {{"test_case_1": unpack_scale(q, scale)}}
"""


def test_a_pytorch_helper_of_a_triton_gold_is_the_test_s_preparation_not_an_entry(verifier: Verifier) -> None:
    """TritonBench-G's int4/int8 matmul tasks pack their weights with a PyTorch helper the test calls
    (`quantize_int4`): it was an entry, so an answer that copied the gold's helper was a `torch_compute` reject
    (Qwen2.5-72B's `matmul_dequantize_int4`, H200, 2026-12-04). A function that reaches none of the gold's
    kernels is the reference's own preparation: the operator is judged, with the helper's outputs as inputs."""
    task = parse_task(PACKED_SCALE_REFERENCE, "unpack_scale", "test")
    assert function_layout(PACKED_SCALE_REFERENCE, "unpack_scale").entries == ("unpack_scale",)
    (report,) = check_tasks([task])
    assert report.ok, report.problems
    gold = PACKED_SCALE_REFERENCE.split("#" * 20)[0]
    _assert_correct(verifier, task, gold)  # the gold's own code, its PyTorch helper included
    without_helper = gold.split("def pack(x):")[0]
    _assert_correct(verifier, task, without_helper)  # the helper is not the candidate's to write
    # the operator itself is still held to its kernels
    in_torch = gold.replace(
        "    unpack_scale_kernel[(triton.cdiv(q.numel(), 128),)](q, scale, y, q.numel(), BLOCK=128)\n",
        "    unpack_scale_kernel[(1,)](q, scale, y, 0, BLOCK=128)\n    y = q.to(torch.float32) * scale\n",
    )
    verdict = verify_once(verifier, task, Candidate(task.task_id, "triton", in_torch, "model:fixture"))
    assert verdict.failure_kind == "integrity_reject" and "torch_compute" in verdict.failure_message

"""Function tasks on a real GPU (marked `gpu`; run by bench/gpu_session.sh on the H200, never in CI).

The CPU suite (tests/test_function_tasks.py) checks these verdicts under Triton's interpreter, where
nothing is timed and no device copy is watched. Here the same fixtures run on the device: the answers'
verdicts, the perf_T inputs chosen for the GPU (the largest set) and timed, and a scalar argument read
with `.item()`, which is a device-to-host copy the device record must allow (`DEVICE_SCALAR_COPIES`).
"""

from __future__ import annotations

import pytest

torch = pytest.importorskip("torch")
pytestmark = [
    pytest.mark.gpu,
    pytest.mark.skipif(not torch.cuda.is_available(), reason="needs a CUDA or ROCm GPU"),
]

from kernelvault.contracts import Candidate  # noqa: E402
from kernelvault.toolchain.lane_pool import verify_once  # noqa: E402
from kernelvault.toolchain.tasks import load_tasks  # noqa: E402
from kernelvault.toolchain.verify import Verifier, VerifyConfig  # noqa: E402
from tests.test_function_tasks import (  # noqa: E402
    NEGATE,
    PERF_CHECKOUT,
    SCALE_BY,
    TASKS,
    _answers,
)


@pytest.fixture(scope="module")
def verifier() -> Verifier:
    return Verifier(VerifyConfig(platform="cuda", timeout_s=120))


def test_real_answers_get_the_same_verdicts_on_the_device(verifier: Verifier) -> None:
    task = next(task for task in load_tasks(TASKS).tasks if task.name == "scaled_add")
    good, torch_wrapper, broken = (
        verify_once(verifier, task, Candidate(task.task_id, "triton", answer, "model:fixture-model"))
        for answer in _answers()
    )
    assert good.correct is True, good.failure_message
    assert good.speedup is not None and good.speedup > 0  # timed on the test's calls (no perf program here)
    assert (torch_wrapper.failure_kind, torch_wrapper.correct) == ("integrity_reject", False)
    assert broken.failure_kind == "compile_error"


def test_a_scalar_argument_read_with_item_is_allowed_by_the_device_record(verifier: Verifier) -> None:
    # scale_by's test makes 9 calls: 9 reads per forward, more than 16 over a job's forwards (the allowance
    # counts per forward: logspace's false reject on the H200)
    task = next(task for task in load_tasks(TASKS).tasks if task.name == "scale_by")
    verdict = verify_once(verifier, task, Candidate(task.task_id, "triton", SCALE_BY, "model:fixture"))
    assert verdict.correct is True, (verdict.failure_kind, verdict.failure_message)


def test_perf_inputs_are_the_largest_set_and_are_timed(verifier: Verifier) -> None:
    task = load_tasks(PERF_CHECKOUT / "data" / "TritonBench_T_v1").tasks[0]
    verdict = verify_once(verifier, task, Candidate(task.task_id, "triton", NEGATE, "test"))
    assert verdict.correct is True, verdict.failure_message
    assert [timing.case for timing in verdict.timings] == ["p0:performance inputs"]
    one_block = NEGATE.replace("(triton.cdiv(input.numel(), 1024),)", "(1,)")
    verdict = verify_once(verifier, task, Candidate(task.task_id, "triton", one_block, "test"))
    assert verdict.failure_kind == "mismatch" and "c1:performance inputs" in (verdict.failure_message or "")


def test_an_answers_example_usage_with_random_inputs_at_import_is_not_a_device_record_violation(
    verifier: Verifier,
) -> None:
    """Model answers end with an example run on `torch.randn(..., device="cuda")` at import: a random draw the
    dispatch monitor admits there as initialisation, so the device record does too (20 TritonBench answers were
    refused for it on the H200, 2026-12-02). Printing the CUDA result at import computes (abs, comparisons for
    the format) and stays refused."""
    task = next(task for task in load_tasks(TASKS).tasks if task.name == "scale_by")
    example = (
        "\n\nexample = torch.randn(4, 5, device='cuda')\nresult = scale_by(example, torch.tensor(2.0))\n"
    )
    verdict = verify_once(
        verifier, task, Candidate(task.task_id, "triton", SCALE_BY + example, "model:fixture")
    )
    assert verdict.correct is True, (verdict.failure_kind, verdict.failure_message)
    printed = verify_once(
        verifier, task, Candidate(task.task_id, "triton", SCALE_BY + example + "print(result)\n", "m")
    )
    assert printed.failure_kind == "integrity_reject", (
        printed.failure_message
    )  # the device record, or the monitor


def test_differentiated_calls_are_judged_and_timed_with_their_backward_on_the_device(
    verifier: Verifier,
) -> None:
    """The CPU suite's gradient verdicts (tests/test_function_gradients.py) on the device, where the autograd
    engine runs a CUDA backward on its own thread: the gold autograd function is correct and timed, a backward
    that ignores its incoming gradient is a mismatch, and a backward PyTorch computes is refused (by the
    dispatch monitor or the device record, whichever sees it first)."""
    from kernelvault.toolchain.tasks import parse_task
    from tests.test_function_gradients import IGNORES_ITS_INCOMING_GRADIENT, TEST, TORCH_BACKWARD, TRIPLE

    task = parse_task(TRIPLE + TEST, "triple", "test")
    gold, ignoring, torch_backward = (
        verify_once(verifier, task, Candidate(task.task_id, "triton", code, "test"))
        for code in (TRIPLE, IGNORES_ITS_INCOMING_GRADIENT, TORCH_BACKWARD)
    )
    assert gold.correct is True, (gold.failure_kind, gold.failure_message)
    assert gold.speedup is not None and gold.speedup > 0
    assert ignoring.failure_kind == "mismatch", (ignoring.failure_kind, ignoring.failure_message)
    assert torch_backward.failure_kind == "integrity_reject", torch_backward.failure_message

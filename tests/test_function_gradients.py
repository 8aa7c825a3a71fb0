"""Function tasks whose test differentiates: `loss.backward()` on what the reference returns, then `x.grad`.

16 of TritonBench-G's gold operators are `torch.autograd.Function`s with Triton backward kernels, exposed as
`name = Fn.apply` and tested through their gradients. Before this, their references could not run (the workers
run with autograd off) and 4 were not even read as tasks (the test calls a binding, not a `def`). Every
verification here runs the whole toolchain on the CPU, through one persistent lane.
"""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path

import pytest
import torch

from kernelvault.agents.prompting import function_signatures, task_prompt
from kernelvault.contracts import Candidate, Task, Verdict
from kernelvault.toolchain.function_tasks import function_layout
from kernelvault.toolchain.reference_check import check_tasks
from kernelvault.toolchain.sandboxed.tensor_files import read_tensors, write_tensors
from kernelvault.toolchain.tasks import parse_task
from kernelvault.toolchain.verify import Verifier, VerifyConfig
from kernelvault.toolchain.worker_lane import WorkerLane

SEPARATOR = "#" * 146

KERNEL = """import torch
import triton
import triton.language as tl


@triton.jit
def scale_kernel(x_ptr, y_ptr, factor, n, BLOCK: tl.constexpr):
    offs = tl.program_id(0) * BLOCK + tl.arange(0, BLOCK)
    mask = offs < n
    tl.store(y_ptr + offs, tl.load(x_ptr + offs, mask=mask) * factor, mask=mask)


def _scale(x, factor):
    y = torch.empty_like(x)
    scale_kernel[(triton.cdiv(x.numel(), 64),)](x, y, factor, x.numel(), BLOCK=64)
    return y
"""

# The gold operator: a Triton forward and a Triton backward, bound as TritonBench-G binds them.
TRIPLE = (
    KERNEL
    + """

class Triple(torch.autograd.Function):
    @staticmethod
    def forward(ctx, x):
        return _scale(x, 3.0)

    @staticmethod
    def backward(ctx, dy):
        return _scale(dy, 3.0)


triple = Triple.apply
"""
)

# The test differentiates through a sum, as most of TritonBench-G's do: its incoming gradient is all ones.
TEST = f"""
{SEPARATOR}

def test_triple_with_backward():
    x = torch.randn(37, device='cuda', requires_grad=True)
    y = triple(x)
    y.sum().backward()
    return {{"y": y, "grad": x.grad.clone()}}
"""

# Right whenever the incoming gradient is all ones (the test's own sum), wrong for any other.
IGNORES_ITS_INCOMING_GRADIENT = TRIPLE.replace(
    "return _scale(dy, 3.0)", "return _scale(torch.ones_like(dy), 3.0)"
)
# A right forward with no backward: its output carries no gradient.
NO_BACKWARD = KERNEL + "\n\ndef triple(x):\n    return _scale(x, 3.0)\n"
# The backward done by PyTorch.
TORCH_BACKWARD = TRIPLE.replace("return _scale(dy, 3.0)", "return dy * 3.0")


@pytest.fixture(scope="module")
def task() -> Task:
    return parse_task(TRIPLE + TEST, "triple", "test")


@pytest.fixture(scope="module")
def lane() -> Iterator[WorkerLane]:
    lane = WorkerLane()
    yield lane
    lane.close()


@pytest.fixture(scope="module")
def verifier() -> Verifier:
    return Verifier(VerifyConfig(platform="cpu", timeout_s=120))


def _verify(verifier: Verifier, task: Task, code: str, lane: WorkerLane) -> Verdict:
    return verifier.complete(verifier.prepare(task, Candidate(task.task_id, "triton", code, "test")), lane)


def test_a_binding_to_an_autograd_function_is_the_task_s_entry(task: Task) -> None:
    layout = function_layout(task.source, task.entry)
    assert task.entry == "triple" and layout.entries == ("triple",)
    # the agents' prompt asks for it with the arguments of the autograd function's forward, less `ctx`, and says
    # that the gradients are judged (only where the test differentiates)
    assert function_signatures(task.source) == (("triple", "triple(x)"),)
    assert "your outputs must carry gradients from your own backward" in task_prompt(task.source, "triton")
    plain = NO_BACKWARD + TEST.replace("    y.sum().backward()\n", "").replace(', "grad": x.grad.clone()', "")
    assert "gradients" not in task_prompt(plain, "triton")
    (report,) = check_tasks([task])
    assert report.ok, report.problems


def test_the_gold_operator_submitted_as_its_own_answer_is_correct(
    task: Task, verifier: Verifier, lane: WorkerLane
) -> None:
    verdict = _verify(verifier, task, TRIPLE, lane)
    assert verdict.correct is True, (verdict.failure_kind, verdict.failure_message)
    # written as a function that applies it, the same answer is correct too
    as_function = TRIPLE.replace("triple = Triple.apply", "def triple(x):\n    return Triple.apply(x)")
    verdict = _verify(verifier, task, as_function, lane)
    assert verdict.correct is True, (verdict.failure_kind, verdict.failure_message)


def test_a_backward_that_ignores_its_incoming_gradient_is_a_mismatch(
    task: Task, verifier: Verifier, lane: WorkerLane
) -> None:
    """The test's own `y.sum().backward()` cannot tell it apart (the incoming gradient is all ones there); the
    calls are differentiated against a random incoming gradient, the same on both sides."""
    verdict = _verify(verifier, task, IGNORES_ITS_INCOMING_GRADIENT, lane)
    assert verdict.failure_kind == "mismatch", (verdict.failure_kind, verdict.failure_message)
    # the message names the part of the call that differs (its forward result matched)
    assert verdict.failure_message.startswith("case c0:test calls: call 0 gradient 0: "), (
        verdict.failure_message
    )
    assert verdict.reward.total == pytest.approx(0.4)


def test_an_answer_without_a_backward_fails_with_the_reason(
    task: Task, verifier: Verifier, lane: WorkerLane
) -> None:
    verdict = _verify(verifier, task, NO_BACKWARD, lane)
    assert verdict.failure_kind == "runtime_error", (verdict.failure_kind, verdict.failure_message)
    assert "none of its outputs carries a gradient (no backward)" in verdict.failure_message


def test_a_backward_computed_by_pytorch_is_torch_doing_the_work(
    task: Task, verifier: Verifier, lane: WorkerLane
) -> None:
    verdict = _verify(verifier, task, TORCH_BACKWARD, lane)
    assert verdict.failure_kind == "integrity_reject", (verdict.failure_kind, verdict.failure_message)
    assert verdict.failure_message.startswith("torch_compute: aten.mul called while forward and backward"), (
        verdict.failure_message
    )


def test_inputs_that_require_grad_in_a_test_that_never_differentiates_are_judged_by_values(
    verifier: Verifier, lane: WorkerLane
) -> None:
    """TritonBench's tests often make inputs with `requires_grad=True` out of habit and never call backward:
    where the reference's outputs carried no gradient, the call is judged by its values, and an answer with no
    backward is right."""
    source = NO_BACKWARD + TEST.replace("    y.sum().backward()\n", "").replace(
        ', "grad": x.grad.clone()', ""
    )
    plain = parse_task(source, "triple", "test")
    (report,) = check_tasks([plain])
    assert report.ok, report.problems
    verdict = _verify(verifier, plain, NO_BACKWARD, lane)
    assert verdict.correct is True, (verdict.failure_kind, verdict.failure_message)


def test_requires_grad_travels_only_where_writer_and_reader_ask(tmp_path: Path) -> None:
    """Inputs keep their leaves' `requires_grad`; a reader that does not ask (the parent's judge) gets plain
    tensors whatever the file says, and integer tensors never carry the flag."""
    x = torch.randn(3, requires_grad=True)
    index = torch.arange(3)
    path = tmp_path / "inputs.st"
    write_tensors(path, [x, {"index": index}], arguments=True)
    marked = read_tensors(path, arguments=True)
    assert marked[0].requires_grad and marked[0].is_leaf and torch.equal(marked[0], x.detach())
    assert not marked[1]["index"].requires_grad
    assert not read_tensors(path)[0].requires_grad
    write_tensors(path, [x])  # written without asking: no flag to honour
    assert not read_tensors(path, arguments=True)[0].requires_grad


# A test that calls the autograd function's `apply` on the class itself, as four of TritonBench-G's do.
CALLS_APPLY = TRIPLE.replace("\n\ntriple = Triple.apply\n", "\n") + TEST.replace(
    "y = triple(x)", "y = Triple.apply(x)"
)


def test_a_test_that_calls_a_class_s_apply_asks_for_that_class(verifier: Verifier, lane: WorkerLane) -> None:
    task = parse_task(CALLS_APPLY, "triple", "test")
    assert function_layout(task.source, task.entry).entries == ("Triple.apply",)
    assert function_signatures(task.source) == (("Triple.apply", "Triple.apply(x)"),)
    (report,) = check_tasks([task])
    assert report.ok, report.problems
    answer = CALLS_APPLY.split(SEPARATOR)[0]
    verdict = _verify(verifier, task, answer, lane)
    assert verdict.correct is True, (verdict.failure_kind, verdict.failure_message)
    verdict = _verify(
        verifier, task, answer.replace("return _scale(dy, 3.0)", "return _scale(dy, 2.0)"), lane
    )
    assert verdict.failure_kind == "mismatch", (verdict.failure_kind, verdict.failure_message)
    verdict = _verify(verifier, task, answer.replace("class Triple(", "class Other("), lane)
    assert verdict.failure_kind == "static_reject", (verdict.failure_kind, verdict.failure_message)
    assert verdict.failure_message == (
        "the code defines no module-level class Triple (the task's test calls Triple.apply)"
    ), verdict.failure_message


def test_tasks_check_names_what_no_candidate_could_be_judged_on() -> None:
    """A reference whose gradients differ between two runs, and a test that passes its function an object that
    cannot travel to the candidate's worker (a Python function; only tensors, plain values and modules' data do)
    are refused by `tasks check` with the reason, before any candidate is verified."""
    noisy = TRIPLE.replace("return _scale(dy, 3.0)", "return _scale(dy, 3.0 + random.random())")
    noisy = "import random\n" + noisy + TEST
    takes_a_function = (
        KERNEL
        + "\n\ndef triple(before, x):\n    return _scale(before(x), 3.0)\n"
        + TEST.replace("y = triple(x)", "y = triple(torch.nn.functional.relu, x)")
        .replace("    y.sum().backward()\n", "")
        .replace(', "grad": x.grad.clone()', "")
    )
    reports = check_tasks(
        [parse_task(noisy, "triple", "test"), parse_task(takes_a_function, "triple", "test")]
    )
    assert [report.ok for report in reports] == [False, False]
    assert "not deterministic (two runs give different gradients)" in reports[0].problems[0]
    assert "cannot reach a candidate: cannot pass a function between processes" in reports[1].problems[0]


# The gold operator takes a layer norm module and reads its settings (TritonBench-G's `fast_layernorm(layernorm,
# X)`), and its backward writes the input gradient into its incoming gradient, in place, as fast_layernorm's does.
TAKES_A_MODULE = (
    KERNEL
    + """

class Scale(torch.autograd.Function):
    @staticmethod
    def forward(ctx, x, factor):
        ctx.factor = factor
        return _scale(x, factor)

    @staticmethod
    def backward(ctx, dy):
        dy = dy.contiguous()  # the test's y.sum() hands an expanded gradient; ours is dense already
        scale_kernel[(triton.cdiv(dy.numel(), 64),)](dy, dy, ctx.factor, dy.numel(), BLOCK=64)
        return dy, None


def scaled(layer, x):
    return Scale.apply(x, layer.eps * 3e5 if layer.elementwise_affine else 1.0)
"""
)
MODULE_TEST = f"""
{SEPARATOR}

def test_scaled_with_backward():
    x = torch.randn(37, device='cuda', requires_grad=True)
    layer = torch.nn.LayerNorm(37, eps=1e-5).cuda()
    y = scaled(layer, x)
    y.sum().backward()
    return {{"y": y, "grad": x.grad.clone()}}
"""


def test_a_module_argument_travels_as_its_data_and_an_in_place_backward_is_judged_fairly(
    verifier: Verifier, lane: WorkerLane
) -> None:
    """The module reaches both workers as its tensors and settings (`ModuleArgument`), so the gold operator and
    an answer read the same `eps`; the gold's backward writes into its incoming gradient, and every call starts
    from the same incoming gradient (a copy per call), so running it twice gives the same gradients."""
    task = parse_task(TAKES_A_MODULE + MODULE_TEST, "scaled", "test")
    (report,) = check_tasks([task])
    assert report.ok, report.problems
    verdict = _verify(verifier, task, TAKES_A_MODULE, lane)
    assert verdict.correct is True, (verdict.failure_kind, verdict.failure_message)
    ignores_the_setting = TAKES_A_MODULE.replace("layer.eps * 3e5", "3.5")
    verdict = _verify(verifier, task, ignores_the_setting, lane)
    assert verdict.failure_kind == "mismatch", (verdict.failure_kind, verdict.failure_message)
    calls_it = TAKES_A_MODULE.replace("return Scale.apply(x,", "layer(x)\n    return Scale.apply(x,")
    verdict = _verify(verifier, task, calls_it, lane)
    assert verdict.failure_kind == "runtime_error", (verdict.failure_kind, verdict.failure_message)
    assert "a LayerNorm passed as an argument arrives as its data" in verdict.failure_message


# A call that updates a module argument's state in place (a running statistic, as a batch norm's forward in
# training does): the module's tensors after the call are part of what the call is judged by.
UPDATES_A_MODULE = f"""import torch


def bump(layer, x):
    layer.running_mean.add_(x)
    return x * 2.0

{SEPARATOR}

def test_bump():
    layer = torch.nn.BatchNorm1d(37).cuda()
    return {{"y": bump(layer, torch.randn(37, device='cuda')), "mean": layer.running_mean.clone()}}
"""
BUMP = """import torch
import triton
import triton.language as tl


@triton.jit
def bump_kernel(x_ptr, mean_ptr, y_ptr, n, BLOCK: tl.constexpr):
    offs = tl.program_id(0) * BLOCK + tl.arange(0, BLOCK)
    mask = offs < n
    x = tl.load(x_ptr + offs, mask=mask)
    tl.store(mean_ptr + offs, tl.load(mean_ptr + offs, mask=mask) + x, mask=mask)
    tl.store(y_ptr + offs, x * 2.0, mask=mask)


def bump(layer, x):
    y = torch.empty_like(x)
    bump_kernel[(triton.cdiv(x.numel(), 64),)](x, layer.running_mean, y, x.numel(), BLOCK=64)
    return y
"""


def test_a_module_argument_s_state_after_the_call_is_judged(verifier: Verifier, lane: WorkerLane) -> None:
    """An answer that returns the right values but leaves the module's running mean as it found it is a
    mismatch on that tensor, named as an argument after the call."""
    task = parse_task(UPDATES_A_MODULE, "bump", "test")
    (report,) = check_tasks([task])
    assert report.ok, report.problems
    verdict = _verify(verifier, task, BUMP, lane)
    assert verdict.correct is True, (verdict.failure_kind, verdict.failure_message)
    forgets_the_state = BUMP.replace(
        "    tl.store(mean_ptr + offs, tl.load(mean_ptr + offs, mask=mask) + x, mask=mask)\n", ""
    )
    verdict = _verify(verifier, task, forgets_the_state, lane)
    assert verdict.failure_kind == "mismatch", (verdict.failure_kind, verdict.failure_message)
    assert "call 0 argument" in (verdict.failure_message or ""), verdict.failure_message


@pytest.mark.parametrize(
    "module",
    [
        {
            "name": "M",
            "tensors": {"forward": {"tensor": "t0"}},
            "attributes": {},
            "children": {},
        },  # a method's name
        {"name": "M", "tensors": {}, "attributes": {"__class__": {"value": 1}}, "children": {}},
        {"name": "M", "tensors": {}, "attributes": {"_parameters": {"value": 1}}, "children": {}},
        {"name": "M", "tensors": {}, "attributes": {"a b": {"value": 1}}, "children": {}},
        {"name": "M", "tensors": [], "attributes": {}, "children": {}},
        {"name": "M", "tensors": {}, "attributes": {}},
    ],
)
def test_a_forged_module_argument_is_a_one_line_refusal(module: dict) -> None:
    from kernelvault.toolchain.sandboxed.tensor_files import TensorFileError, decode_value

    with pytest.raises(TensorFileError):
        decode_value({"module": module}, {"t0": torch.zeros(2)}, torch.device("cpu"), arguments=True)
    # and a reader that does not ask for arguments (the parent's judge) takes no module at all
    with pytest.raises(TensorFileError):
        decode_value({"module": module}, {"t0": torch.zeros(2)}, torch.device("cpu"))

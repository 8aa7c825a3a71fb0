"""`kernelvault tasks functionalize`: module tasks rewritten in the function form, checked, or refused with why."""

from __future__ import annotations

import contextlib
import io
from pathlib import Path

import pytest

from kernelvault.cli import main
from kernelvault.contracts import Candidate
from kernelvault.toolchain.functionalize import (
    FunctionalizeError,
    functionalize,
    rename_names,
    wrap_module_candidate,
)
from kernelvault.toolchain.lane_pool import verify_once
from kernelvault.toolchain.tasks import load_task_file, load_tasks, parse_task
from kernelvault.toolchain.verify import Verifier, VerifyConfig

ROOT = Path(__file__).resolve().parents[1]
SIZES = "batch = 4\ndim = 8\n\n\ndef get_inputs():\n    return [torch.randn(batch, dim)]\n\n\n"
HEADER = "import torch\nimport torch.nn as nn\n\n\n"


def _cli(*argv: str) -> tuple[int, str]:
    printed = io.StringIO()
    with contextlib.redirect_stdout(printed):
        code = main(list(argv))
    return code, printed.getvalue()


def _module_task(name: str, body: str, init: str = "[]") -> str:
    return HEADER + body + "\n\n" + SIZES + f"def get_init_inputs():\n    return {init}\n"


def test_the_bundled_suite_is_rewritten_with_equal_outputs_on_every_case(tmp_path: Path) -> None:
    """Issue #22: at least 60 of the 72 bundled tasks convert, each checked against its module on every case;
    what is written loads as function tasks whose entry takes the module's state as tensors."""
    code, printed = _cli("tasks", "functionalize", "--out", str(tmp_path / "fn"))
    assert code == 0, printed
    converted = [line for line in printed.splitlines() if line.startswith("ok")]
    refused = [line for line in printed.splitlines() if line.startswith("REFUSED")]
    assert len(converted) >= 60 and len(converted) + len(refused) == 72, printed[-2000:]
    assert all(": " in line for line in refused)  # each refusal names its reason
    assert all("outputs equal on" in line for line in converted)
    loaded = load_tasks(tmp_path / "fn")
    assert loaded.errors == [] and len(loaded.tasks) == len(converted)
    assert {task.form for task in loaded.tasks} == {"function"}
    linear = next(task for task in loaded.tasks if task.name == "linear_relu")
    assert linear.entry == "linear_relu"
    assert "def linear_relu(x, linear_weight, linear_bias, init_inputs=(" in linear.source


def test_an_existing_output_folder_is_never_overwritten(
    tmp_path: Path, capsys: pytest.CaptureFixture
) -> None:
    (tmp_path / "fn").mkdir()
    (tmp_path / "fn" / "keep.py").write_text("x = 1\n")
    assert (
        main(["tasks", "functionalize", str(ROOT / "tasks" / "relu.py"), "--out", str(tmp_path / "fn")]) == 2
    )
    assert "must be an empty folder" in capsys.readouterr().err
    assert (tmp_path / "fn" / "keep.py").read_text() == "x = 1\n"


@pytest.mark.parametrize(
    ("body", "init", "reason"),
    [
        (  # BatchNorm's running statistics in training mode
            "class Model(nn.Module):\n    def __init__(self):\n        super().__init__()\n"
            "        self.norm = nn.BatchNorm1d(dim)\n\n    def forward(self, x):\n        return self.norm(x)\n",
            "[]",
            "updates norm.running_mean in place",
        ),
        (  # a counter the forward branches on
            "class Model(nn.Module):\n    def __init__(self):\n        super().__init__()\n        self.calls = 0\n\n"
            "    def forward(self, x):\n        self.calls += 1\n        return x * 2 if self.calls % 2 else x\n",
            "[]",
            "control flow on module state",
        ),
        (
            "class Model(nn.Module):\n    def forward(self, x):\n        return nn.functional.dropout(x, 0.5)\n",
            "[]",
            "not deterministic",
        ),
        (
            "class Model(nn.Module):\n    def __init__(self, w):\n        super().__init__()\n"
            "        self.w = nn.Parameter(w)\n\n    def forward(self, x):\n        return x * self.w\n",
            "[torch.ones(dim)]",
            "returns tensors",
        ),
        (
            "class Model(nn.Module):\n    def forward(self, x, **options):\n        return x\n",
            "[]",
            "**kwargs",
        ),
        (
            "class Model(nn.Module):\n    def __init__(self):\n        super().__init__()\n"
            "        self.mask = torch.ones(dim)\n\n    def forward(self, x):\n        return x * self.mask\n",
            "[]",
            "neither parameters nor buffers",
        ),
    ],
    ids=["in_place_buffer", "python_state", "dropout", "tensor_init", "kwargs", "plain_tensor"],
)
def test_what_cannot_be_a_pure_function_is_refused_with_the_reason(body: str, init: str, reason: str) -> None:
    task = parse_task(_module_task("t", body, init), "t", "test")
    with pytest.raises(FunctionalizeError, match=reason.replace("*", r"\*")):
        functionalize(task)


def test_function_tasks_are_left_out_and_names_in_strings_are_kept() -> None:
    function_task = load_tasks(ROOT / "tests" / "fixtures" / "rocmbench" / "ROCm_v1").tasks[0]
    with pytest.raises(FunctionalizeError, match="already a kernel task"):
        functionalize(function_task)
    text = 'class Model:\n    """Model of get_inputs."""  # Model\n\n\nm = Model()\n'
    assert rename_names(text, {"Model": "ReferenceModule"}) == (
        'class ReferenceModule:\n    """Model of get_inputs."""  # Model\n\n\nm = ReferenceModule()\n'
    )


FUNCTION_RELU = """
import torch
import triton
import triton.language as tl


@triton.jit
def _relu_kernel(x_ptr, out_ptr, n, BLOCK: tl.constexpr):
    offsets = tl.program_id(0) * BLOCK + tl.arange(0, BLOCK)
    mask = offsets < n
    x = tl.load(x_ptr + offsets, mask=mask)
    tl.store(out_ptr + offsets, tl.where(x > 0, x, x * SCALE), mask=mask)


def relu(x, init_inputs=()):
    out = torch.empty_like(x)
    n = x.numel()
    _relu_kernel[(triton.cdiv(n, 1024),)](x, out, n, BLOCK=1024)
    return out
"""


def test_a_rewritten_task_verifies_like_the_module_form(tmp_path: Path) -> None:
    """The bundled relu example is correct on the module task; a Triton function with the entry's signature
    is correct on the rewritten one, and a wrong one is a mismatch there: the function form goes through the
    same verifier."""
    module_task = load_task_file(ROOT / "tasks" / "relu.py", origin="bundled")
    conversion = functionalize(module_task)
    (tmp_path / "relu.py").write_text(conversion.source)
    function_task = load_task_file(tmp_path / "relu.py")
    assert function_task.form == "function" and function_task.entry == "relu"

    verifier = Verifier(VerifyConfig(platform="cpu", timeout_s=120))
    example = (ROOT / "examples" / "triton" / "relu.py").read_text()
    module_verdict = verify_once(
        verifier, module_task, Candidate(module_task.task_id, "triton", example, "test")
    )
    right = FUNCTION_RELU.replace("SCALE", "0.0")  # x > 0 ? x : 0
    function_verdict = verify_once(
        verifier, function_task, Candidate(function_task.task_id, "triton", right, "test")
    )
    assert module_verdict.correct and function_verdict.correct, (
        module_verdict.failure_message, function_verdict.failure_message
    )  # fmt: skip
    leaky = FUNCTION_RELU.replace("SCALE", "0.1")  # a leaky ReLU is not what the module computes
    wrong = verify_once(verifier, function_task, Candidate(function_task.task_id, "triton", leaky, "test"))
    assert (wrong.correct, wrong.failure_kind) == (False, "mismatch"), wrong.failure_message


@pytest.mark.parametrize("name", ["linear_relu", "layer_norm"])
def test_a_bundled_example_gets_the_same_verdict_on_the_rewritten_task(name: str, tmp_path: Path) -> None:
    """Issue #22: a rewritten task verifies a bundled example to the same verdict as the module form. The
    example (class ModelNew) runs through an entry of the rewritten task's signature that gives it the state
    it is passed; its kernels are the same."""
    module_task = load_task_file(ROOT / "tasks" / f"{name}.py", origin="bundled")
    conversion = functionalize(module_task)
    (tmp_path / f"{name}.py").write_text(conversion.source)
    function_task = load_task_file(tmp_path / f"{name}.py")
    example = (ROOT / "examples" / "triton" / f"{name}.py").read_text()
    verifier = Verifier(VerifyConfig(platform="cpu", timeout_s=120))
    on_module = verify_once(verifier, module_task, Candidate(module_task.task_id, "triton", example, "test"))
    wrapped = wrap_module_candidate(example, conversion)
    on_function = verify_once(
        verifier, function_task, Candidate(function_task.task_id, "triton", wrapped, "test")
    )
    assert (on_module.correct, on_module.failure_kind) == (True, None), on_module.failure_message
    assert (on_function.correct, on_function.failure_kind) == (True, None), on_function.failure_message
    assert on_function.kernels  # its own Triton kernels ran


def test_constructor_arguments_that_are_lists_are_kept() -> None:
    """KernelBench level 3 builds networks from lists of layer sizes (`get_init_inputs` returns lists)."""
    body = (
        "class Model(nn.Module):\n    def __init__(self, sizes):\n        super().__init__()\n"
        "        self.layers = nn.ModuleList(nn.Linear(a, b) for a, b in zip(sizes, sizes[1:]))\n\n"
        "    def forward(self, x):\n        for layer in self.layers:\n            x = torch.relu(layer(x))\n"
        "        return x\n"
    )
    conversion = functionalize(parse_task(_module_task("mlp", body, "[[dim, 16, 4]]"), "mlp", "test"))
    assert conversion.init == ([8, 16, 4],) and conversion.case_inits == (([8, 16, 4],),)
    assert conversion.state == ("layers_0_weight", "layers_0_bias", "layers_1_weight", "layers_1_bias")

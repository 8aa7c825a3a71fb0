"""`kernelvault tasks check` flags references that a do-nothing kernel could pass."""

from __future__ import annotations

import contextlib
import io
from pathlib import Path

from kernelvault.cli import main

HEADER = "import torch\nimport torch.nn as nn\n\nbatch = 4\ndim = 33\n\n\ndef get_init_inputs():\n    return []\n\n\n"
INPUTS = "def get_inputs():\n    return [torch.randn(batch, dim)]\n\n\n"
TASKS = {
    "good": "class Model(nn.Module):\n    def forward(self, x):\n        return torch.tanh(x)\n",
    "all_zero": "class Model(nn.Module):\n    def forward(self, x):\n        return torch.relu(x) * 0\n",
    "constant": "class Model(nn.Module):\n    def forward(self, x):\n        return torch.ones_like(x) * 3\n",
    "random": "class Model(nn.Module):\n    def forward(self, x):\n        return x + torch.rand_like(x)\n",
    "ignores_input": (
        "class Model(nn.Module):\n    def __init__(self):\n        super().__init__()\n"
        "        self.w = nn.Parameter(torch.randn(dim))\n\n    def forward(self, x):\n        return self.w.expand(batch, dim)\n"
    ),
    "raises": "class Model(nn.Module):\n    def forward(self, x):\n        return x @ x\n",
    "nan": "class Model(nn.Module):\n    def forward(self, x):\n        return torch.log(x)\n",
}


def run_check(path: Path) -> tuple[int, str]:
    stdout = io.StringIO()
    with contextlib.redirect_stdout(stdout):
        code = main(["tasks", "check", str(path)])
    return code, stdout.getvalue()


def test_degenerate_and_broken_references_are_reported(tmp_path: Path) -> None:
    for name, model in TASKS.items():
        (tmp_path / f"{name}.py").write_text(HEADER + model + "\n\n" + INPUTS)
    (tmp_path / "not_a_task.py").write_text("x = 1\n")
    code, printed = run_check(tmp_path)
    assert code == 1
    lines = printed.splitlines()

    def report(name: str) -> str:
        start = next(i for i, line in enumerate(lines) if line.split()[1:2] == [name])
        block = [lines[start]] + [line for line in lines[start + 1 :] if line.startswith("          ")][:3]
        return "\n".join(block)

    assert report("good").startswith("ok")
    assert "all zero" in report("all_zero")
    assert "constant" in report("constant")
    assert "not deterministic" in report("random")
    assert "does not depend on the inputs" in report("ignores_input")
    assert "raised RuntimeError" in report("raises")
    assert "NaN or Inf" in report("nan")
    assert "INVALID not_a_task" in printed
    assert "1 of 8 task(s) ok" in printed


def test_bundled_suite_has_no_broken_reference() -> None:
    code, printed = run_check(Path(__file__).resolve().parents[1] / "tasks")
    assert code == 0, printed
    assert "BROKEN" not in printed and "INVALID" not in printed


def test_each_tasks_report_is_printed_as_soon_as_it_is_checked(tmp_path: Path) -> None:
    """A long check (five KernelBench tasks ran over three minutes) shows its progress instead of printing
    nothing until its end: the first task's line arrives while a slow second task is still running."""
    import subprocess
    import sys
    import time

    (tmp_path / "a_quick.py").write_text(HEADER + TASKS["good"] + "\n\n" + INPUTS)
    slow = TASKS["good"].replace(
        "return torch.tanh(x)", "import time\n        time.sleep(3)\n        return torch.tanh(x)"
    )
    (tmp_path / "b_slow.py").write_text(HEADER + slow + "\n\n" + INPUTS)
    process = subprocess.Popen(
        [sys.executable, "-m", "kernelvault.cli", "tasks", "check", str(tmp_path), "--workers", "1"],
        stdout=subprocess.PIPE, text=True, cwd=Path(__file__).resolve().parents[1],
    )  # fmt: skip
    assert process.stdout is not None
    header = process.stdout.readline()  # where the references run, before the first one is checked
    assert header.startswith("checking 2 reference(s) on the CPU, under Triton's interpreter"), header
    first = process.stdout.readline()
    running_when_first_printed = process.poll() is None
    started = time.monotonic()
    rest = process.stdout.read()
    process.wait(timeout=300)
    assert first.startswith("ok") and "a_quick" in first
    assert running_when_first_printed and time.monotonic() - started > 2  # b_slow was still being checked
    assert "b_slow" in rest and "2 of 2 task(s) ok" in rest


def test_case_scale_checks_a_gpu_sized_task_at_cpu_sizes(tmp_path: Path) -> None:
    """KernelBench sizes its inputs for a GPU; `--case-scale` shrinks the large sizes (and only those) so the
    reference runs on a CPU, and the report says it was scaled."""
    from kernelvault.toolchain.case_scale import scale_cases
    from kernelvault.toolchain.tasks import load_task_file

    (tmp_path / "conv_like.py").write_text(
        "import torch\nimport torch.nn as nn\n\nbatch_size = 16\nN = 4096 * 8\nM = 4095\nkernel_size = 3\n"
        "shape = (4096, 3)\n\n\n"
        "class Model(nn.Module):\n    def forward(self, a, b):\n        return torch.tanh(a @ b)\n\n\n"
        "def get_inputs():\n    return [torch.randn(N, M), torch.randn(M, kernel_size) + torch.randn(*shape).sum()]\n\n\n"
        "def get_init_inputs():\n    return []\n"
    )  # unscaled: a 32768 x 4095 float32 input, 512 MiB
    task = scale_cases(load_task_file(tmp_path / "conv_like.py"), 1 / 64)
    # N, M and shape's first element are sizes; batch_size (16) and kernel_size (3) are under the floor; the
    # odd size stays odd.
    assert task.correctness_cases[0].overrides == {"N": 512, "M": 65, "shape": (64, 3)}
    stdout = io.StringIO()
    with contextlib.redirect_stdout(stdout):
        code = main(["tasks", "check", str(tmp_path), "--case-scale", "0.015625"])
    printed = stdout.getvalue()
    assert code == 0, printed
    assert "scaled by 0.015625" in printed and "ok      conv_like (1 case(s)) [1/1, " in printed
    assert "1 of 1 task(s) ok" in printed
    with contextlib.redirect_stderr(io.StringIO()) as error:
        assert main(["tasks", "check", str(tmp_path), "--case-scale", "2"]) == 2
    assert "(0, 1]" in error.getvalue() and error.getvalue().count("\n") == 1


def test_a_task_that_crashes_hangs_or_kills_its_worker_is_reported_and_the_next_ones_are_still_checked(
    tmp_path: Path,
) -> None:
    """One jailed worker checks many tasks, each in a child of its own: a segfault, a hang past the time limit and
    a reference that kills the worker itself are each reported against their own task, the task after each is
    checked as if alone, and a task's global change (the default dtype) does not reach the next one."""
    from kernelvault.toolchain.reference_check import check_tasks
    from kernelvault.toolchain.tasks import load_task_file

    def forward(body: str) -> str:
        return f"class Model(nn.Module):\n    def forward(self, x):\n        {body}\n        return torch.tanh(x)\n"

    sources = {
        "a_segfault": forward("import os, signal; os.kill(os.getpid(), signal.SIGSEGV)"),
        "b_good": TASKS["good"],
        "c_hangs": forward("import time; time.sleep(600)"),
        "d_good": TASKS["good"],
        "e_kills_its_worker": forward("import os; os.kill(os.getppid(), 9); os.kill(os.getpid(), 9)"),
        "e2_kills_its_worker_and_returns": forward("import os; os.kill(os.getppid(), 9)"),
        "f_changes_the_default_dtype": forward("torch.set_default_dtype(torch.float64)"),
        "g_float32_by_default": forward("assert torch.get_default_dtype() == torch.float32, 'dtype leaked'"),
    }
    tasks = []
    for name, model in sources.items():
        (tmp_path / f"{name}.py").write_text(HEADER + model + "\n\n" + INPUTS)
        tasks.append(load_task_file(tmp_path / f"{name}.py"))
    reports = {report.task: report for report in check_tasks(tasks, timeout_s=8, workers=1)}
    assert list(reports) == list(sources)
    assert reports["a_segfault"].problems[0].startswith("reference worker crashed (SIGSEGV)")
    assert reports["c_hangs"].problems[0].startswith("reference worker timed out after 8 s")
    assert reports["e_kills_its_worker"].problems[0].startswith("reference worker crashed")
    for name in (
        "b_good",
        "d_good",
        "e2_kills_its_worker_and_returns",
        "f_changes_the_default_dtype",
        "g_float32_by_default",
    ):
        assert reports[name].ok and reports[name].cases_run > 0, (name, reports[name].problems)

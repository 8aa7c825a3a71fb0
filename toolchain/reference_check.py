"""`kernelvault tasks check`: run every reference on its cases and report broken or degenerate ones.

A reference is broken when it raises or produces NaN/Inf on random inputs, and degenerate when a
do-nothing kernel could pass it: outputs that are all zero, constant, independent of the inputs, or
that change between two runs on the same inputs (then no candidate can match it reliably). Each task
runs in its own sandboxed process (`python -m kernelvault.toolchain.reference_check JOB.json`), so a task that
crashes or hangs is reported and the others are still checked.
"""

from __future__ import annotations

import json
import os
import shutil
import sys
import tempfile
from collections.abc import Iterator
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import kernelvault
from kernelvault.contracts import Task
from kernelvault.toolchain.worker_jobs import CheckTask, from_wire, to_wire

_MAX_ISSUES_PER_TASK = 6


@dataclass
class TaskReport:
    task: str
    cases_run: int = 0
    problems: list[str] = field(default_factory=list)

    @property
    def ok(self) -> bool:
        return not self.problems


def _leaves(output: Any) -> list[Any]:
    if isinstance(output, (tuple, list)):
        return [leaf for item in output for leaf in _leaves(item)]
    return [output]


def check_case(harness: Any, case: dict[str, Any]) -> list[str]:
    """Problems with one case of one reference (runs inside the worker)."""
    import torch

    from kernelvault.toolchain.function_tasks import clone_value, same_values, tensor_leaves

    function_task = getattr(harness, "layout", None) is not None
    with torch.no_grad():
        harness.apply(case["overrides"])
        init = harness.init_inputs()
        model = harness.reference(init, seed=0)
        inputs = harness.inputs(seed=1)
        first = model(*clone_value(inputs))
        # the global RNG has moved on: randomness inside forward shows up here
        again = model(*clone_value(inputs))
        if function_task and harness.layout.kernels:
            # A kernel task's launches are judged by their tensor arguments after them (`kernel_tasks`): those
            # must be the same on a second run, and some launch must write one of them.
            after, after_again = [one[1] for one in first], [two[1] for two in again]
            if not same_values(after, after_again):
                return [
                    f"{case['name']}: not deterministic (two runs of the same launches leave different values)"
                ]
            if same_values(after, tensor_leaves(inputs)):
                return [
                    f"{case['name']}: the launches write none of their tensor arguments (nothing to judge)"
                ]
            return []
        if function_task:
            # What the calls return. A function task's inputs are its test author's (literals, `out=`
            # buffers left uninitialised), so whether an output follows them says nothing: not checked.
            first, again = [one[0] for one in first], [two[0] for two in again]
            other, follows_inputs = first, False
        else:
            other_inputs = harness.inputs(seed=2)
            other = model(*other_inputs)
            # where the inputs do not change with the seed, an output cannot either
            follows_inputs = not same_values(inputs, other_inputs)
    problems = []
    name = case["name"]
    leaves, again_leaves, other_leaves = _leaves(first), _leaves(again), _leaves(other)
    for index, (out, out_again, out_other) in enumerate(zip(leaves, again_leaves, other_leaves, strict=True)):
        where = f"{name} output {index}" if len(leaves) > 1 else name
        if not isinstance(out, torch.Tensor):
            problems.append(f"{where}: returns {type(out).__name__}, not a tensor")
            continue
        values = out.detach().to(torch.float64)
        if values.numel() == 0:
            problems.append(f"{where}: empty output")
            continue
        if not bool(torch.isfinite(values).all()):
            problems.append(f"{where}: NaN or Inf in the output on random inputs")
            continue
        if not bool(values.any()):
            problems.append(f"{where}: output is all zero (a do-nothing kernel would pass)")
        elif values.numel() > 1 and float(values.max() - values.min()) == 0.0:
            problems.append(f"{where}: output is constant ({float(values.flatten()[0]):g} everywhere)")
        if not torch.equal(out, out_again):
            problems.append(f"{where}: not deterministic (two runs on the same inputs differ)")
        if follows_inputs and out.shape == out_other.shape and torch.equal(out, out_other):
            problems.append(
                f"{where}: output does not depend on the inputs (same result for two input seeds)"
            )
    return problems


def _worker_main(job_path: Path) -> int:
    import torch

    from kernelvault.toolchain.reference_worker import ReferenceHost

    job = from_wire("task_check", json.loads(job_path.read_text()))
    assert isinstance(job, CheckTask)
    report: dict[str, Any] = {"cases_run": 0, "problems": []}
    try:
        harness = ReferenceHost().harness(Path(job.task_path), torch.device("cpu"), job.entry)
        if isinstance(harness, dict):
            raise RuntimeError(harness["failure_message"])
        for case in job.cases:
            try:
                report["problems"] += check_case(harness, case)
            except Exception as error:  # noqa: BLE001 - a broken reference is the finding
                report["problems"].append(f"{case['name']}: raised {type(error).__name__}: {error}"[:500])
            report["cases_run"] += 1
    except Exception as error:  # noqa: BLE001
        report["problems"].append(f"failed to load: {type(error).__name__}: {error}"[:500])
    Path(job.result_path).write_text(json.dumps(report))
    return 0


def check_task(
    task: Task, include_performance: bool, timeout_s: float, python: str = sys.executable
) -> TaskReport:
    from kernelvault.toolchain.sandbox import SandboxLimits, folder_jail, run_sandboxed
    from kernelvault.toolchain.verify import resolve_isolation

    workdir = Path(tempfile.mkdtemp(prefix="kv-taskcheck-"))
    try:
        cases = list(task.correctness_cases) + (list(task.performance_cases) if include_performance else [])
        (workdir / "task.py").write_text(task.source)
        job = CheckTask(str(workdir / "task.py"), str(workdir / "result.json"),
                        [{"name": c.name, "overrides": c.overrides} for c in cases], task.entry)  # fmt: skip
        (workdir / "job.json").write_text(json.dumps(to_wire(job)))
        project_root = str(Path(kernelvault.__file__).resolve().parents[1])  # the folder holding the package
        workdir.chmod(0o755)
        jail = folder_jail(resolve_isolation(os.environ.get("KV_ISOLATION", "auto"), python), workdir)
        run = run_sandboxed([python, "-m", f"{__package__}.reference_check", str(workdir / "job.json")], workdir,
                            SandboxLimits(timeout_s, None, cpu_threads=2), {"PYTHONPATH": project_root, "TRITON_INTERPRET": "1"},
                            jail=jail)  # fmt: skip
        result_path = workdir / "result.json"
        if not result_path.exists():
            why = "timed out" if run.timed_out else f"crashed ({run.signal_name or run.returncode})"
            tail = run.stderr_tail.strip().splitlines()[-1:] or [""]
            return TaskReport(task.name, 0, [f"reference worker {why}: {tail[0]}".strip()])
        result = json.loads(result_path.read_text())
        problems = result["problems"]
        if len(problems) > _MAX_ISSUES_PER_TASK:
            problems = problems[:_MAX_ISSUES_PER_TASK] + [
                f"… and {len(problems) - _MAX_ISSUES_PER_TASK} more"
            ]
        return TaskReport(task.name, result["cases_run"], problems)
    finally:
        shutil.rmtree(workdir, ignore_errors=True)


def check_tasks(tasks: list[Task], include_performance: bool = False, timeout_s: float = 300.0,
                workers: int = 2) -> list[TaskReport]:  # fmt: skip
    return list(iter_check_tasks(tasks, include_performance, timeout_s, workers))


def iter_check_tasks(tasks: list[Task], include_performance: bool = False, timeout_s: float = 300.0,
                     workers: int = 2) -> Iterator[TaskReport]:  # fmt: skip
    """Each task's report as soon as it and the ones before it are done (in the tasks' order): a long check
    shows its progress instead of printing nothing until its end."""
    with ThreadPoolExecutor(workers) as pool:
        yield from pool.map(lambda task: check_task(task, include_performance, timeout_s), tasks)


if __name__ == "__main__":
    sys.exit(_worker_main(Path(sys.argv[1])))

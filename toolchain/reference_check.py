"""`kernelvault tasks check`: run every reference on its cases and report broken or degenerate ones.

A reference is broken when it raises or produces NaN/Inf on random inputs, and degenerate when a
do-nothing kernel could pass it: outputs that are all zero, constant, independent of the inputs, or
that change between two runs on the same inputs (then no candidate can match it reliably). Each task
runs in its own sandboxed process (`python -m kernelvault.toolchain.sandboxed.task_check JOB.json`), so a task that
crashes or hangs is reported and the others are still checked.

Where: on the CPU platform under Triton's interpreter (a gold Triton kernel of TritonBench-G or ROCmBench runs
there where the interpreter can run it); on `cuda` or `rocm` on the first visible GPU, compiled for it, the
jail then seeing the GPU's device nodes: what a suite of gold kernels needs to be checked as it is meant to run.
An optimisation task's baselines are then verified as candidates of the task (`kernelvault.toolchain.optimisation`).
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

import kernelvault
from kernelvault.contracts import Task
from kernelvault.toolchain.jail import gpu_device_nodes
from kernelvault.toolchain.lane_pool import LanePool
from kernelvault.toolchain.optimisation import check_baselines
from kernelvault.toolchain.sandbox import SandboxLimits, folder_jail, run_sandboxed
from kernelvault.toolchain.sandboxed.requests import CheckTask, to_wire
from kernelvault.toolchain.verify import Verifier, VerifyConfig, resolve_isolation

_MAX_ISSUES_PER_TASK = 6


@dataclass
class TaskReport:
    task: str
    cases_run: int = 0
    problems: list[str] = field(default_factory=list)
    notes: list[str] = field(default_factory=list)  # what was checked beyond the reference (baselines)

    @property
    def ok(self) -> bool:
        return not self.problems


def check_task(task: Task, include_performance: bool, timeout_s: float, python: str = sys.executable,
               platform: str = "cpu") -> TaskReport:  # fmt: skip
    workdir = Path(tempfile.mkdtemp(prefix="kv-taskcheck-"))
    try:
        cases = list(task.correctness_cases) + (list(task.performance_cases) if include_performance else [])
        (workdir / "task.py").write_text(task.source)
        on_gpu = platform != "cpu"
        job = CheckTask(str(workdir / "task.py"), str(workdir / "result.json"),
                        [{"name": c.name, "overrides": c.overrides} for c in cases], task.entry,
                        "cuda" if on_gpu else "cpu")  # fmt: skip
        (workdir / "job.json").write_text(json.dumps(to_wire(job)))
        project_root = str(Path(kernelvault.__file__).resolve().parents[1])  # the folder holding the package
        workdir.chmod(0o755)
        jail = folder_jail(resolve_isolation(os.environ.get("KV_ISOLATION", "auto"), python), workdir,
                           devices=gpu_device_nodes() if on_gpu else ())  # fmt: skip
        env = {"PYTHONPATH": project_root} | ({} if on_gpu else {"TRITON_INTERPRET": "1"})
        run = run_sandboxed([python, "-m", f"{__package__}.sandboxed.task_check", str(workdir / "job.json")], workdir,
                            SandboxLimits(timeout_s, None, cpu_threads=2), env, jail=jail)  # fmt: skip
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
        report = TaskReport(task.name, result["cases_run"], problems)
        if task.baselines and not problems:  # an optimisation task: its baselines must pass as candidates
            # on the check's own time limit: a baseline is slow by design, and under the interpreter on a loaded
            # 2-core machine a serial one can take longer than a candidate's 60 s
            with LanePool.once(Verifier(VerifyConfig(platform=platform, timeout_s=timeout_s))) as pool:
                report.problems, report.notes = check_baselines(task, pool)
        return report
    finally:
        shutil.rmtree(workdir, ignore_errors=True)


def check_tasks(tasks: list[Task], include_performance: bool = False, timeout_s: float = 300.0,
                workers: int = 2, platform: str = "cpu") -> list[TaskReport]:  # fmt: skip
    return list(iter_check_tasks(tasks, include_performance, timeout_s, workers, platform))


def iter_check_tasks(tasks: list[Task], include_performance: bool = False, timeout_s: float = 300.0,
                     workers: int = 2, platform: str = "cpu") -> Iterator[TaskReport]:  # fmt: skip
    """Each task's report as soon as it and the ones before it are done (in the tasks' order): a long check
    shows its progress instead of printing nothing until its end."""
    with ThreadPoolExecutor(workers) as pool:
        yield from pool.map(
            lambda task: check_task(task, include_performance, timeout_s, platform=platform), tasks
        )

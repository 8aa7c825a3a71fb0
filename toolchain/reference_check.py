"""`kernelvault tasks check`: run every reference on its cases and report broken or degenerate ones.

A reference is broken when it raises or produces NaN/Inf on random inputs, and degenerate when a
do-nothing kernel could pass it: outputs that are all zero, constant, independent of the inputs, or
that change between two runs on the same inputs (then no candidate can match it reliably). Each task
runs in a process of its own, forked by a jailed worker (`python -m kernelvault.toolchain.sandboxed.task_check
JOBS.json`) that imports torch once for many tasks, so a task that crashes or hangs is reported and the others
are still checked.

Where: on the CPU platform under Triton's interpreter (a gold Triton kernel of TritonBench-G or ROCmBench runs
there where the interpreter can run it); on `cuda` or `rocm` on the first visible GPU, compiled for it, the
jail then seeing the GPU's device nodes: what a suite of gold kernels needs to be checked as it is meant to run.
An optimisation task's baselines are then verified as candidates of the task (`kernelvault.toolchain.optimisation`).
"""

from __future__ import annotations

import contextlib
import json
import os
import shutil
import sys
import tempfile
import threading
import time
from collections.abc import Iterator
from concurrent.futures import Future, ThreadPoolExecutor
from dataclasses import dataclass, field
from pathlib import Path

import kernelvault
from kernelvault.contracts import Task
from kernelvault.toolchain.jail import gpu_device_nodes
from kernelvault.toolchain.lane_pool import LanePool
from kernelvault.toolchain.optimisation import check_baselines
from kernelvault.toolchain.sandbox import (
    SandboxLimits,
    crash_result,
    folder_jail,
    kill_group,
    start_sandboxed,
)
from kernelvault.toolchain.sandboxed.requests import CheckTask, to_wire
from kernelvault.toolchain.verify import Verifier, VerifyConfig, resolve_isolation

_MAX_ISSUES_PER_TASK = 6
_WORKER_MARGIN_S = 60.0  # a worker's own start (torch's import) and its report, beyond a task's limit
_POLL_S = 0.02


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
    """One task's report (`check_tasks` of one)."""
    (report,) = check_tasks([task], include_performance, timeout_s, 1, platform, python)
    return report


def check_tasks(tasks: list[Task], include_performance: bool = False, timeout_s: float = 300.0,
                workers: int = 2, platform: str = "cpu", python: str = sys.executable) -> list[TaskReport]:  # fmt: skip
    return list(iter_check_tasks(tasks, include_performance, timeout_s, workers, platform, python))


def iter_check_tasks(tasks: list[Task], include_performance: bool = False, timeout_s: float = 300.0,
                     workers: int = 2, platform: str = "cpu", python: str = sys.executable) -> Iterator[TaskReport]:  # fmt: skip
    """Each task's report as soon as it and the ones before it are done (in the tasks' order): a long check
    shows its progress instead of printing nothing until its end.

    `workers` jailed workers share the tasks (task i goes to worker i mod `workers`); each imports torch once and
    checks its tasks one by one, each in a child of its own (`sandboxed.task_check`). An optimisation task's
    baselines are verified on one lane pool shared by all tasks, on the check's own time limit: a baseline is
    slow by design, and under the interpreter on a loaded 2-core machine a serial one can take longer than a
    candidate's 60 s."""
    if not tasks:
        return
    reports: list[Future[TaskReport]] = [Future() for _ in tasks]
    stop = threading.Event()
    with contextlib.ExitStack() as stack:
        pool = None
        if any(task.baselines for task in tasks):
            verifier = Verifier(VerifyConfig(platform=platform, timeout_s=timeout_s))
            pool = stack.enter_context(LanePool.for_verifier(verifier, cpu_lanes=max(1, workers)))
        streams = [
            list(range(first, len(tasks), workers)) for first in range(min(max(1, workers), len(tasks)))
        ]
        threads = stack.enter_context(ThreadPoolExecutor(len(streams), thread_name_prefix="kv-task-check"))
        stack.callback(stop.set)  # runs first: an abandoned check (Ctrl-C) stops its workers
        for indices in streams:
            check = _CheckStream([tasks[i] for i in indices], [reports[i] for i in indices], include_performance,
                                 timeout_s, python, platform, pool, stop)  # fmt: skip
            threads.submit(check.run)
        for report in reports:
            yield report.result()


class _CheckStream:
    """One jailed worker's share of the tasks; a worker that dies or hangs is replaced for the tasks after the
    one it was checking, which is reported crashed (or timed out)."""

    def __init__(self, tasks: list[Task], reports: list[Future[TaskReport]], include_performance: bool,
                 timeout_s: float, python: str, platform: str, pool: LanePool | None,
                 stop: threading.Event) -> None:  # fmt: skip
        self.tasks, self.reports, self.timeout_s = tasks, reports, timeout_s
        self.include_performance, self.python, self.platform = include_performance, python, platform
        self.pool, self.stop = pool, stop

    def run(self) -> None:
        workdir = Path(tempfile.mkdtemp(prefix="kv-taskcheck-"))
        try:
            remaining = list(range(len(self.tasks)))
            while remaining and not self.stop.is_set():
                remaining = self._one_worker(workdir, remaining)
        except BaseException as error:  # noqa: BLE001 - the waiting caller gets it
            for report in self.reports:
                if not report.done():
                    report.set_exception(error)
        finally:
            for report in self.reports:
                if not report.done():
                    report.set_exception(RuntimeError("the task check was stopped"))
            shutil.rmtree(workdir, ignore_errors=True)

    def _job(self, workdir: Path, index: int) -> CheckTask:
        task = self.tasks[index]
        cases = list(task.correctness_cases) + (
            list(task.performance_cases) if self.include_performance else []
        )
        folder = workdir / str(index)
        folder.mkdir(exist_ok=True)
        folder.chmod(0o777)  # the jail's own uid writes the result beside the task
        (folder / "task.py").write_text(task.source)
        return CheckTask(str(folder / "task.py"), str(folder / "result.json"),
                         [{"name": c.name, "overrides": c.overrides} for c in cases], task.entry,
                         "cpu" if self.platform == "cpu" else "cuda", self.timeout_s)  # fmt: skip

    def _one_worker(self, workdir: Path, remaining: list[int]) -> list[int]:
        """Start a worker for `remaining` and take its reports in order; what is left when it ends early."""
        jobs = [self._job(workdir, index) for index in remaining]
        (workdir / "jobs.json").write_text(json.dumps([to_wire(job) for job in jobs]))
        workdir.chmod(0o755)
        on_gpu = self.platform != "cpu"
        project_root = str(Path(kernelvault.__file__).resolve().parents[1])  # the folder holding the package
        jail = folder_jail(resolve_isolation(os.environ.get("KV_ISOLATION", "auto"), self.python), workdir,
                           devices=gpu_device_nodes() if on_gpu else ())  # fmt: skip
        env = {"PYTHONPATH": project_root} | ({} if on_gpu else {"TRITON_INTERPRET": "1"})
        # the worker kills a task's child at `timeout_s`: the margin is for the worker's own start and reports
        limits = SandboxLimits(self.timeout_s * len(jobs) + _WORKER_MARGIN_S, None, cpu_threads=2)
        started = time.monotonic()
        process = start_sandboxed([self.python, "-m", f"{__package__}.sandboxed.task_check",
                                   str(workdir / "jobs.json")], workdir, limits, env, jail=jail)  # fmt: skip
        try:
            for position, (index, job) in enumerate(zip(remaining, jobs, strict=True)):
                deadline = time.monotonic() + self.timeout_s + _WORKER_MARGIN_S
                result_path = Path(job.result_path)
                while not result_path.exists():
                    ended = process.poll() is not None
                    if ended or time.monotonic() > deadline or self.stop.is_set():
                        if result_path.exists():
                            break
                        if self.stop.is_set():
                            return []
                        if ended and position > 0 and not Path(job.result_path + ".started").exists():
                            # the task before, whose report is in, ended the worker on its way out
                            return remaining[position:]
                        kill_group(process)
                        run = crash_result(process, workdir, not ended, time.monotonic() - started)
                        why = (
                            "timed out" if run.timed_out else f"crashed ({run.signal_name or run.returncode})"
                        )
                        tail = run.stderr_tail.strip().splitlines()[-1:] or [""]
                        self._report(index, TaskReport(self.tasks[index].name, 0,
                                                       [f"reference worker {why}: {tail[0]}".strip()]))  # fmt: skip
                        return remaining[position + 1 :]
                    time.sleep(_POLL_S)
                self._report(index, self._read(index, result_path))
            return []
        finally:
            kill_group(process)

    def _read(self, index: int, result_path: Path) -> TaskReport:
        task = self.tasks[index]
        result = json.loads(result_path.read_text())
        problems = result["problems"]
        if len(problems) > _MAX_ISSUES_PER_TASK:
            problems = problems[:_MAX_ISSUES_PER_TASK] + [
                f"… and {len(problems) - _MAX_ISSUES_PER_TASK} more"
            ]
        report = TaskReport(task.name, result["cases_run"], problems)
        if task.baselines and not problems and self.pool is not None:
            # an optimisation task: its baselines must pass as candidates
            report.problems, report.notes = check_baselines(task, self.pool)
        return report

    def _report(self, index: int, report: TaskReport) -> None:
        self.reports[index].set_result(report)

"""`tasks check`'s worker: `python -m kernelvault.toolchain.sandboxed.task_check JOBS.json`, jailed.

Runs each listed task's reference on its cases and writes what looks broken or degenerate to that task's result
file (`kernelvault.toolchain.reference_check` starts it and reads the results; the rules are described there).
The worker imports torch once and forks a child per task: a task's global changes (default dtype, seeds,
patched modules) die with its child, and a task that crashes or outlives its time limit is reported as such
(killed) while the next one goes on. Each result file appears (by rename) when its task is done, so the
parent shows the reports as they come.
"""

from __future__ import annotations

import json
import os
import signal
import sys
import time
from pathlib import Path
from typing import Any

from kernelvault.toolchain.sandboxed.requests import CheckTask, from_wire


def _leaves(output: Any) -> list[Any]:
    if isinstance(output, (tuple, list)):
        return [leaf for item in output for leaf in _leaves(item)]
    return [output]


def _writes_when_refilled(model: Any, inputs: Any) -> bool:
    """Whether the launches change their arguments once the floating-point ones hold other values.

    An output buffer made by `torch.empty_like` on a GPU often gets the memory the previous run's output was
    freed from, so its recorded "before" already holds the result, and a kernel that writes it seems to write
    nothing. Refilled with random values (integer tensors, which may hold indices, are kept), a written buffer
    shows the write."""
    from kernelvault.toolchain.function_tasks import clone_value, same_values, tensor_leaves

    refilled = clone_value(inputs)
    for leaf in tensor_leaves(refilled):
        if leaf.is_floating_point():  # tensor_leaves holds tensors only
            leaf.normal_()
    after = [launch[1] for launch in model(*clone_value(refilled))]
    return not same_values(after, tensor_leaves(refilled))


def check_case(harness: Any, case: dict[str, Any]) -> list[str]:
    """Problems with one case of one reference (runs inside the worker)."""
    import torch

    from kernelvault.toolchain.function_tasks import (
        NOTHING_TO_JUDGE,
        clone_value,
        nothing_to_judge,
        same_values,
        tensor_leaves,
    )
    from kernelvault.toolchain.sandboxed.tensor_files import TensorFileError, encode_value

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
            if same_values(after, tensor_leaves(inputs)) and not _writes_when_refilled(model, inputs):
                return [
                    f"{case['name']}: the launches write none of their tensor arguments (nothing to judge)"
                ]
            return []
        if function_task:
            # the calls travel to the candidate's worker as a tensor file: a module or other object passed
            # as an argument (`fast_layernorm(layernorm, X)`) cannot, and no candidate could be judged
            try:
                encode_value(inputs, arguments=True)
            except TensorFileError as error:
                return [f"{case['name']}: the test's calls cannot reach a candidate: {error}"]
            # gradients of differentiated calls (`function_tasks`): judged, so they must be deterministic; not
            # checked for zeros (an argument a call does not use has a zero gradient)
            gradients = [one[2:] for one in first], [two[2:] for two in again]
            if not same_values(*gradients):
                return [f"{case['name']}: not deterministic (two runs give different gradients)"]
            if nothing_to_judge(first):
                return [f"{case['name']}: {NOTHING_TO_JUDGE}"]
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


def _check_one(job: CheckTask) -> dict[str, Any]:
    """The report of one task (in its own child)."""
    import torch

    from kernelvault.toolchain.sandboxed.reference import ReferenceHost

    report: dict[str, Any] = {"cases_run": 0, "problems": []}
    try:
        harness = ReferenceHost().harness(Path(job.task_path), torch.device(job.device), job.entry)
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
    return report


def _write_result(job: CheckTask, report: dict[str, Any]) -> None:
    partial = Path(job.result_path + ".partial")
    partial.write_text(json.dumps(report))
    partial.rename(job.result_path)  # whole or absent: the parent polls for it


def _last_line(path: Path) -> str:
    try:
        lines = path.read_text(errors="replace").strip().splitlines()
    except OSError:
        return ""
    return lines[-1][:300] if lines else ""


def _run_in_child(job: CheckTask) -> None:
    """Check one task in a forked child, within its time limit; the child's death is the report's."""
    stderr_path = Path(job.result_path + ".stderr")
    sys.stdout.flush()
    sys.stderr.flush()
    # the parent tells a task that killed this worker from one the worker never reached
    Path(job.result_path + ".started").touch()
    pid = os.fork()
    if pid == 0:
        code = 1
        try:
            os.dup2(os.open(stderr_path, os.O_WRONLY | os.O_CREAT | os.O_TRUNC, 0o600), 2)
            _write_result(job, _check_one(job))
            code = 0
        finally:
            os._exit(code)  # no atexit handlers or buffered output of the parent's run twice
    deadline = time.monotonic() + job.timeout_s
    status = 0
    while True:
        done, status = os.waitpid(pid, os.WNOHANG)
        if done:
            break
        if time.monotonic() > deadline:
            os.kill(pid, signal.SIGKILL)
            os.waitpid(pid, 0)
            why = f"timed out after {job.timeout_s:g} s"
            _write_result(
                job,
                {"cases_run": 0, "problems": [f"reference worker {why}: {_last_line(stderr_path)}".strip()]},
            )
            return
        time.sleep(0.01)
    if not Path(job.result_path).exists():
        died = os.WIFSIGNALED(status) and signal.Signals(os.WTERMSIG(status)).name
        why = f"crashed ({died or os.waitstatus_to_exitcode(status)})"
        _write_result(
            job, {"cases_run": 0, "problems": [f"reference worker {why}: {_last_line(stderr_path)}".strip()]}
        )


def _worker_main(jobs_path: Path) -> int:
    import torch  # noqa: F401 - imported once, before the children fork

    from kernelvault.toolchain.function_tasks import cpu_device_selection
    from kernelvault.toolchain.sandboxed import reference  # noqa: F401 - the harness, imported once as well
    from kernelvault.toolchain.sandboxed.interpreter import drop_unasserted_overflow_checks

    cpu_device_selection()  # as in the verification workers (`sandboxed.serve`)
    drop_unasserted_overflow_checks()
    jobs = [from_wire("task_check", body) for body in json.loads(jobs_path.read_text())]
    for job in jobs:
        assert isinstance(job, CheckTask)
        _run_in_child(job)
    return 0


if __name__ == "__main__":
    sys.exit(_worker_main(Path(sys.argv[1])))

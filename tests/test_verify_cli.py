"""`kernelvault verify --json` on the cpu platform, end to end: real interpreter, real cross-compiler."""

from __future__ import annotations

import json
import os
import shutil
import signal
import subprocess
import sys
import time
from pathlib import Path

import pytest
from processes import assert_no_process_left, descendants, start_in_a_terminal, wait_for_a_candidate_worker

from kernelvault.cli.verify import stage_table
from kernelvault.contracts import verdict_from_dict

ROOT = Path(__file__).resolve().parents[1]
TASKS = ROOT / "tasks"
EXAMPLES = ROOT / "examples" / "triton"


def run_verify(task: Path, candidate: Path, *extra: str) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        [sys.executable, "-m", "kernelvault.cli", "verify", "--task", str(task), "--candidate", str(candidate),
         "--platform", "cpu", *extra],
        capture_output=True, text=True, timeout=300, cwd=ROOT,
    )  # fmt: skip


def verify_json(task: str, candidate: Path, *extra: str) -> dict:
    completed = run_verify(TASKS / f"{task}.py", candidate, "--json", *extra)
    assert completed.returncode == 0, completed.stderr
    return json.loads(completed.stdout)


def test_correct_candidate_gets_compile_and_correctness_credit_but_no_speed_on_cpu() -> None:
    result = verify_json("softmax", EXAMPLES / "softmax.py")
    assert result["compiled"] is True
    assert result["correct"] is True
    assert result["speedup"] is None  # nothing is timed without a GPU
    assert result["reward"] == pytest.approx(1.4)
    assert result["failure_kind"] is None
    assert result["platform"] == "cpu"
    assert result["arch"] == "gfx942"
    stages = {stage["name"]: stage["outcome"] for stage in result["verdict"]["stages"]}
    assert stages == {"parse": "passed", "static": "passed", "compile": "passed", "check": "passed",
                      "time": "skipped", "reward": "passed"}  # fmt: skip
    checks = result["verdict"]["checks"]
    assert len(checks) >= 4 and all(check["passed"] for check in checks)
    assert len({check["case"] for check in checks}) >= 2  # several shapes, not one


def test_wrong_candidate_is_a_mismatch_with_the_failing_case_named() -> None:
    result = verify_json("silu", EXAMPLES / "broken" / "mismatch__silu.py")
    assert (result["compiled"], result["correct"], result["failure_kind"]) == (True, False, "mismatch")
    assert result["reward"] == pytest.approx(0.4)
    assert "case c0" in result["failure_message"] and "max abs error" in result["failure_message"]


def test_candidate_that_does_not_compile_for_the_gpu_target_is_a_compile_error() -> None:
    result = verify_json("relu", EXAMPLES / "broken" / "compile_error__relu.py")
    assert (result["compiled"], result["correct"], result["failure_kind"]) == (False, False, "compile_error")
    assert result["reward"] == 0.0
    assert "gfx942" in result["failure_message"]
    assert result["verdict"]["compile_log"]  # the compiler's diagnostics are kept for the agents
    # The table `verify` prints without --json: the interpreter's check matched, but no stage after the failed
    # compile reads "passed".
    table = stage_table(verdict_from_dict(result["verdict"]))
    outcomes = {line.split()[0]: line[11:22].strip() for line in table}  # "  NAME     OUTCOME     1.23s  log"
    assert outcomes == {"parse": "passed", "static": "passed", "compile": "failed", "check": "not counted",
                        "time": "not run", "reward": "scored"}, table  # fmt: skip
    assert "(the compile stage failed)" in next(line for line in table if line.split()[0] == "check")


def test_cross_compile_target_is_configurable() -> None:
    result = verify_json("relu", EXAMPLES / "relu.py", "--arch", "gfx90a")
    assert result["arch"] == "gfx90a" and result["correct"] is True
    assert "gfx90a" in result["verdict"]["compile_log"]


def test_candidate_that_crashes_the_interpreter_fails_alone_with_the_signal_named() -> None:
    result = verify_json("vector_add", EXAMPLES / "broken" / "runtime_error__vector_add.py")
    assert result["failure_kind"] == "runtime_error"
    assert result["correct"] is False
    assert "SIG" in result["failure_message"]


def test_hanging_candidate_is_a_timeout(tmp_path: Path) -> None:
    result = verify_json("relu", EXAMPLES / "broken" / "timeout__relu.py", "--timeout", "20")
    assert result["failure_kind"] == "timeout"
    assert result["correct"] is False


def test_ctrl_c_during_a_hanging_candidate_exits_130_at_once() -> None:
    """The lane's job is not waited for: its workers go with the process."""
    command = [sys.executable, "-m", "kernelvault.cli", "verify", "--task", str(TASKS / "relu.py"), "--candidate",
               str(EXAMPLES / "broken" / "timeout__relu.py"), "--platform", "cpu", "--timeout", "60"]  # fmt: skip
    process = start_in_a_terminal(command)
    wait_for_a_candidate_worker(process)
    time.sleep(1.0)  # the candidate spins in its worker
    below = descendants(process.pid)
    signalled = time.monotonic()
    os.killpg(process.pid, signal.SIGINT)
    _, stderr = process.communicate(timeout=60)
    assert time.monotonic() - signalled < 10 and process.returncode == 130, stderr
    assert stderr.strip().splitlines()[-1] == "kernelvault: interrupted"
    assert_no_process_left(below)


def test_model_answer_in_markdown_is_parsed(tmp_path: Path) -> None:
    answer = tmp_path / "answer.md"
    code = (EXAMPLES / "relu.py").read_text()
    answer.write_text(f"Here is a fused kernel.\n\n```python\n{code}```\n\nIt uses one pass.\n")
    result = verify_json("relu", answer)
    assert result["correct"] is True and result["reward"] == pytest.approx(1.4)


def test_missing_files_are_usage_errors_with_one_line() -> None:
    completed = run_verify(TASKS / "no_such_task.py", EXAMPLES / "relu.py")
    assert completed.returncode == 2
    assert completed.stderr.strip().count("\n") == 0 and "task not found" in completed.stderr
    completed = run_verify(TASKS / "relu.py", EXAMPLES / "missing.py")
    assert completed.returncode == 2 and "candidate not found" in completed.stderr


def test_invalid_task_is_a_usage_error(tmp_path: Path) -> None:
    task = tmp_path / "bad.py"
    task.write_text("import torch\nclass Model(torch.nn.Module):\n    pass\n")
    completed = run_verify(task, EXAMPLES / "relu.py")
    assert completed.returncode == 2
    assert "get_inputs" in completed.stderr and completed.stderr.strip().count("\n") == 0


@pytest.mark.skipif(shutil.which("hipcc") is None, reason="needs Debian's hipcc (make installs it as root)")
def test_verify_takes_both_hip_forms_and_says_what_a_cpu_machine_can_verify() -> None:
    hip = ROOT / "examples" / "hip"
    native = verify_json("vector_add", hip / "vector_add.py", "--target", "hip")
    # compiled for gfx90a by Debian's hipcc; never run here, so correctness is unknown and the reward is
    # the compile credit alone
    assert (native["compiled"], native["correct"], native["speedup"]) == (True, None, None)
    assert native["reward"] == pytest.approx(0.4) and native["failure_kind"] is None
    assert native["platform"] == "cpu" and native["arch"] == "gfx90a"
    # the KernelBench load_inline form is recognised, and refused as our limit here, not as a verdict on it
    inline = verify_json("vector_add", hip / "load_inline" / "vector_add.py", "--target", "hip")
    assert (
        inline["failure_kind"] == "infrastructure_error" and "load_inline form" in inline["failure_message"]
    )
    assert inline["compiled"] is not True and inline["reward"] == 0.0


def test_a_ctrl_c_swallowed_where_it_landed_still_stops_the_wait_for_a_verdict() -> None:
    """Python raises KeyboardInterrupt wherever the main thread is; inside an import, a library's bare `except` can
    swallow it (a `verify` sent Ctrl-C while torch imported ran on to its candidate's time limit). The command
    line's handler remembers the signal, and the wait for a verdict raises it again."""
    import concurrent.futures
    import contextlib

    from kernelvault import interrupts
    from kernelvault.toolchain.lane_pool import result_of

    previous = signal.getsignal(signal.SIGINT)
    interrupts.install()
    try:
        with contextlib.suppress(BaseException):  # what a bare `except:` around an import does
            os.kill(os.getpid(), signal.SIGINT)
            time.sleep(1.0)  # the handler runs here, in the main thread
        never: concurrent.futures.Future = concurrent.futures.Future()
        started = time.monotonic()
        with pytest.raises(KeyboardInterrupt):
            result_of(never)
        assert time.monotonic() - started < 2
    finally:
        signal.signal(signal.SIGINT, previous)
        interrupts._RECEIVED.clear()

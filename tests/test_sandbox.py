"""Running untrusted code: environment, working folder, timeouts, crashes, memory and output limits."""

from __future__ import annotations

import json
import os
import sys
import textwrap
import time
from pathlib import Path

from kernelvault.toolchain.sandbox import SandboxLimits, run_sandboxed, worker_environment

QUICK = SandboxLimits(timeout_s=30.0, memory_bytes=None)


def run_python(workdir: Path, code: str, limits: SandboxLimits = QUICK, **kwargs):
    return run_sandboxed([sys.executable, "-c", textwrap.dedent(code)], workdir, limits, **kwargs)


def is_running(pid: int) -> bool:
    """True while pid exists and is not a zombie waiting to be reaped."""
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return False
    except PermissionError:
        return True
    try:
        status = Path(f"/proc/{pid}/status").read_text()
    except OSError:
        return False
    state = next((line.split()[1] for line in status.splitlines() if line.startswith("State:")), "?")
    return state not in ("Z", "X")


def test_credentials_are_not_inherited_but_path_is(tmp_path, monkeypatch):
    monkeypatch.setenv("OPENAI_API_KEY", "sk-secret")
    monkeypatch.setenv("HF_TOKEN", "hf_secret")
    monkeypatch.setenv("AWS_SECRET_ACCESS_KEY", "aws-secret")
    result = run_python(tmp_path, "import json, os; print(json.dumps(dict(os.environ)))")
    assert result.returncode == 0, result.stderr_tail
    env = json.loads(result.stdout_tail)
    for name in ("OPENAI_API_KEY", "HF_TOKEN", "AWS_SECRET_ACCESS_KEY"):
        assert name not in env
    assert "secret" not in result.stdout_tail
    assert env["PATH"] == os.environ["PATH"]


def test_home_and_cwd_are_the_workdir(tmp_path):
    result = run_python(tmp_path, "import os; print(os.environ['HOME']); print(os.getcwd())")
    assert result.returncode == 0, result.stderr_tail
    home, cwd = result.stdout_tail.split()
    assert os.path.realpath(home) == os.path.realpath(tmp_path)
    assert os.path.realpath(cwd) == os.path.realpath(tmp_path)


def test_successful_child_reports_exit_code_and_output(tmp_path):
    result = run_python(tmp_path, "import sys; print('hello'); print('oops', file=sys.stderr); sys.exit(3)")
    assert (result.returncode, result.signal_name, result.timed_out) == (3, None, False)
    assert result.stdout_tail.strip() == "hello"
    assert result.stderr_tail.strip() == "oops"


def test_hanging_child_is_killed_at_the_timeout(tmp_path):
    limits = SandboxLimits(timeout_s=2.0, memory_bytes=None)
    started = time.monotonic()
    result = run_python(tmp_path, "import time\nwhile True:\n    time.sleep(1)\n", limits)
    elapsed = time.monotonic() - started
    assert result.timed_out is True
    assert result.returncode is None
    assert 1.9 <= result.seconds <= 6.0
    assert elapsed < 8.0


def test_grandchildren_are_killed_with_the_child(tmp_path):
    pid_file = tmp_path / "grandchild.pid"
    code = f"""
        import subprocess, time
        child = subprocess.Popen(["sleep", "60"])
        with open({str(pid_file)!r}, "w") as handle:
            handle.write(str(child.pid))
        while True:
            time.sleep(1)
    """
    result = run_python(tmp_path, code, SandboxLimits(timeout_s=2.0, memory_bytes=None))
    assert result.timed_out
    grandchild = int(pid_file.read_text())
    deadline = time.monotonic() + 3.0
    while is_running(grandchild) and time.monotonic() < deadline:
        time.sleep(0.05)
    assert not is_running(grandchild)


def test_segfault_is_reported_by_signal_name(tmp_path):
    result = run_python(tmp_path, "import os, signal; os.kill(os.getpid(), signal.SIGSEGV)")
    assert result.timed_out is False
    assert result.returncode is not None and result.returncode < 0
    assert result.signal_name == "SIGSEGV"


def test_memory_limit_stops_a_huge_allocation(tmp_path):
    limits = SandboxLimits(timeout_s=30.0, memory_bytes=256 << 20)
    result = run_python(tmp_path, "data = bytearray(1 << 30)\nprint('allocated', len(data))", limits)
    assert result.timed_out is False
    assert result.returncode != 0
    assert "allocated" not in result.stdout_tail
    assert "MemoryError" in result.stderr_tail or result.signal_name is not None


def test_output_flood_is_trimmed(tmp_path):
    code = "import sys\nline = 'x' * 99 + '\\n'\nfor _ in range(100_000):\n    sys.stdout.write(line)\nprint('THE END')"
    result = run_python(tmp_path, code)
    assert result.returncode == 0, result.stderr_tail
    assert (tmp_path / "stdout.log").stat().st_size > 10_000_000
    assert 0 < len(result.stdout_tail) <= 10_000
    assert result.stdout_tail.rstrip().endswith("THE END")


def test_worker_environment_sets_thread_counts(monkeypatch):
    monkeypatch.setenv("OPENAI_API_KEY", "sk-secret")
    env = worker_environment(threads=3)
    assert env["OMP_NUM_THREADS"] == "3"
    assert env["MKL_NUM_THREADS"] == "3"
    assert "OPENAI_API_KEY" not in env
    assert worker_environment({"EXTRA": "1"})["EXTRA"] == "1"


def test_child_sees_configured_thread_count_and_extras(tmp_path):
    limits = SandboxLimits(timeout_s=30.0, memory_bytes=None, cpu_threads=2)
    result = run_python(
        tmp_path,
        "import os; print(os.environ['OMP_NUM_THREADS'], os.environ['KV_TEST'])",
        limits,
        env_extra={"KV_TEST": "yes"},
    )
    assert result.stdout_tail.split() == ["2", "yes"]

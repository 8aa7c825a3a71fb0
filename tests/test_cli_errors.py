"""Usage errors of the command line: one line on stderr, exit 2, nothing written (issue #21's CLI edges)."""

from __future__ import annotations

import re
import subprocess
import sys
from pathlib import Path

import pytest

from kernelvault.cli import main

ROOT = Path(__file__).resolve().parents[1]


def _run(*argv: str) -> subprocess.CompletedProcess[str]:
    return subprocess.run([sys.executable, "-m", "kernelvault.cli", *argv], capture_output=True, text=True,
                          cwd=ROOT, timeout=120)  # fmt: skip


def _one_line_error(stderr: str) -> str:
    lines = [line for line in stderr.splitlines() if line.startswith("kernelvault:")]
    assert len(lines) == 1 and "Traceback" not in stderr, stderr
    return lines[0]


def test_release_of_a_folder_that_does_not_exist_is_a_usage_error(tmp_path: Path) -> None:
    done = _run("release", "--dataset", str(tmp_path / "nope"), "--out", str(tmp_path / "release"))
    assert done.returncode == 2
    assert "nope is not a folder" in _one_line_error(done.stderr)
    assert not (tmp_path / "release").exists()


def test_release_of_a_folder_without_shards_is_a_usage_error(
    tmp_path: Path, capsys: pytest.CaptureFixture
) -> None:
    (tmp_path / "empty").mkdir()
    assert main(["release", "--dataset", str(tmp_path / "empty"), "--out", str(tmp_path / "release")]) == 2
    assert "no corpus shards under" in _one_line_error(capsys.readouterr().err)


def test_stats_plots_into_an_existing_file_is_a_usage_error(
    tmp_path: Path, capsys: pytest.CaptureFixture
) -> None:
    existing = tmp_path / "plots.png"
    existing.write_bytes(b"a file the user keeps")
    assert main(["stats", str(tmp_path), "--plots", str(existing)]) == 2
    assert "is a file" in _one_line_error(capsys.readouterr().err)
    assert existing.read_bytes() == b"a file the user keeps"


def test_version_names_the_installed_version(capsys: pytest.CaptureFixture) -> None:
    with pytest.raises(SystemExit) as stopped:
        main(["--version"])
    assert stopped.value.code == 0
    pyproject = (ROOT / "pyproject.toml").read_text()
    expected = re.search(r'^version\s*=\s*"([^"]+)"', pyproject, re.MULTILINE).group(1)
    assert capsys.readouterr().out.strip() == f"kernelvault {expected}"


def test_tasks_check_on_a_gpu_this_machine_lacks_is_a_usage_error(capsys: pytest.CaptureFixture) -> None:
    import torch

    if torch.cuda.is_available():
        pytest.skip("this machine has a GPU: the check would run")
    assert main(["tasks", "check", str(ROOT / "tasks"), "--platform", "cuda"]) == 2
    assert "--platform cuda needs a cuda GPU" in _one_line_error(capsys.readouterr().err)


def test_a_time_limit_that_is_not_positive_or_given_to_an_agent_job_is_a_usage_error(
    tmp_path: Path, capsys: pytest.CaptureFixture
) -> None:
    out = tmp_path / "out"
    assert main(["corpus", "--out", str(out), "--platform", "cpu", "--stop-after", "0"]) == 2
    assert "--stop-after is a positive number of seconds, not 0" in _one_line_error(capsys.readouterr().err)
    agent = ["corpus", "--out", str(out), "--platform", "cpu", "--stop-after", "60",
             "--base-url", "http://127.0.0.1:9/v1", "--model", "m"]  # fmt: skip
    assert main(agent) == 2
    assert "--stop-after is for examples and --answers" in _one_line_error(capsys.readouterr().err)
    assert not out.exists()

"""Usage errors of the command line: one line on stderr, exit 2, nothing written (issue #21's CLI edges)."""

from __future__ import annotations

import os
import re
import subprocess
import sys
import time
from pathlib import Path

import pytest

from kernelvault.cli import main

ROOT = Path(__file__).resolve().parents[1]


def _run(*argv: str, env: dict[str, str] | None = None) -> subprocess.CompletedProcess[str]:
    return subprocess.run([sys.executable, "-m", "kernelvault.cli", *argv], capture_output=True, text=True,
                          cwd=ROOT, timeout=120, env=env)  # fmt: skip


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


# --- usage errors: the line that matters, at once --------------------------------------------------------


def test_a_bad_choice_is_one_line_with_a_pointer_to_help_not_the_whole_usage() -> None:
    done = _run("corpus", "--target", "nope")
    assert done.returncode == 2 and done.stdout == ""
    [line] = done.stderr.splitlines()  # not the ~20 lines of usage ahead of it
    assert line.startswith("kernelvault: error: argument --target: invalid choice: 'nope'")
    assert "triton" in line and line.endswith("(see `kernelvault corpus --help`)")
    assert main(["tasks"]) == 2  # in-process too: a return code, not a SystemExit


@pytest.mark.parametrize(
    "argv, message",
    [
        (["verify", "--task", "missing/task.py", "--candidate", "README.md"], "argument --task: task not found: missing/task.py"),
        (["verify", "--task", "tasks/relu.py", "--candidate", "missing.md"], "argument --candidate: candidate not found: missing.md"),
        (["corpus", "--answers", "missing.jsonl"], "argument --answers: answers not found: missing.jsonl"),
        (["corpus", "--tasks", "missing"], "argument --tasks: no task file, folder or dataset at missing"),
        (["corpus", "--examples", "missing"], "argument --examples: examples folder not found: missing"),
        (["eval", "--suite", "missing", "--answers", "README.md"], "argument --suite: no task file, folder or dataset at missing"),
        (["eval", "--answers", "missing.jsonl"], "argument --answers: answers not found: missing.jsonl"),
        (["tasks", "check", "missing"], "argument path: no task file, folder or dataset at missing"),
        (["sft", "--config", "sft/configs/tiny.yaml", "--dataset", "missing"], "dataset 'missing' is not a folder here"),
        (["corpus", "--target", "qa", "--answers", "README.md"], "--answers: for --target triton or hip"),
    ],
)  # fmt: skip
def test_a_missing_input_is_reported_before_torch_is_imported(argv: list[str], message: str) -> None:
    """A real process: the error comes in well under the seconds that importing torch takes, and torch (with
    the rest of the verifier) was never imported."""
    probe = "import sys; from kernelvault.cli import main; code = main(sys.argv[1:]); print('torch' in sys.modules); sys.exit(code)"
    started = time.monotonic()
    done = subprocess.run(
        [sys.executable, "-c", probe, *argv], capture_output=True, text=True, cwd=ROOT, timeout=60
    )
    elapsed = time.monotonic() - started
    assert done.returncode == 2, done.stderr
    assert message in _one_line_error(done.stderr)
    assert done.stdout.strip() == "False" and elapsed < 3.0, (done.stdout, elapsed)


# --- a kernel dataset where a task suite is expected ------------------------------------------------------


@pytest.fixture(scope="module")
def kernel_hub(tmp_path_factory: pytest.TempPathFactory) -> dict[str, str]:
    """A published kernel dataset (attempt rows, one of them a parse failure with no code) on a local hub:
    the environment that names it for a subprocess."""
    from corpus_rows import example_code, row_for

    from kernelvault.corpus.shards import ShardWriter

    base = tmp_path_factory.mktemp("kernel-hub")
    no_code = row_for("silu", example_code("silu"), False, 0)
    no_code.update(code=None, code_hash=None, compiled=False, failure_kind="parse_error")
    with ShardWriter(base / "corpus", "triton", "run1") as writer:
        writer.write_many([row_for("relu", example_code("relu"), True, 0, speedup=1.2), no_code])
    env = {**os.environ, "KV_HUB_DIR": str(base / "hub"), "HF_DATASETS_CACHE": str(base / "hf-cache")}
    env.pop("KV_HUB", None)
    with pytest.MonkeyPatch.context() as patch:
        for name in ("KV_HUB_DIR", "HF_DATASETS_CACHE"):
            patch.setenv(name, env[name])
        patch.delenv("KV_HUB", raising=False)
        assert main(["publish", "--dataset", str(base / "corpus"), "--to", "hub:acme/kernels@v0.1.0"]) == 0
    return env


def test_a_kernel_dataset_named_as_a_task_suite_is_one_line_naming_both(kernel_hub: dict[str, str]) -> None:
    """`tasks list`, `corpus --tasks` and `eval --suite` on a published kernel version: no traceback, exit 2,
    one line that says a kernel dataset was found where a task suite was expected, and how to get its tasks."""
    checkout = Path(kernel_hub["KV_HUB_DIR"]) / "revisions" / "acme" / "kernels" / "acme--kernels--v0.1.0"
    lines = {}
    for argv in (
        ["tasks", "list", "hub:acme/kernels@v0.1.0"],
        ["corpus", "--tasks", "hub:acme/kernels@v0.1.0", "--platform", "cpu", "--out", "/nonexistent/out"],
        ["eval", "--suite", "hub:acme/kernels@v0.1.0", "--answers", str(ROOT / "README.md"), "--platform", "cpu",
         "--out", "/nonexistent/out"],
        ["tasks", "list", str(checkout)],  # the local hub's folder of that version, named as a folder
    ):  # fmt: skip
        done = _run(*argv, env=kernel_hub)
        assert done.returncode == 2, (argv, done.stderr[-2000:])
        lines[argv[0] + " " + argv[2]] = line = _one_line_error(done.stderr)
        assert "is a kernel dataset (KernelVault attempt rows" in line and "not a task suite" in line, argv
    assert lines["tasks hub:acme/kernels@v0.1.0"].endswith(
        "its tasks load as hub:acme/kernels@v0.1.0#task_source"
    )
    assert (
        f"{checkout} is a kernel dataset (KernelVault attempt rows in triton/)" in lines[f"tasks {checkout}"]
    )
    assert not Path("/nonexistent/out").exists()
    listed = _run("tasks", "list", "hub:acme/kernels@v0.1.0#task_source", env=kernel_hub)
    assert listed.returncode == 0, listed.stderr
    assert listed.stdout.splitlines()[-1] == "2 task(s) loaded (0 function, 2 module)"
    assert {line.split()[-1] for line in listed.stdout.splitlines()[:-1]} == {"relu", "silu"}


def test_a_published_kernel_version_is_read_as_a_training_corpus(
    kernel_hub: dict[str, str], monkeypatch: pytest.MonkeyPatch
) -> None:
    """`eval --training-corpus hub:ORG/NAME@vX`: the references the version's rows answered."""
    from kernelvault.pipelines.evaluation import read_training_corpus

    for name in ("KV_HUB_DIR", "HF_DATASETS_CACHE"):
        monkeypatch.setenv(name, kernel_hub[name])
    corpus = read_training_corpus("hub:acme/kernels@v0.1.0")
    assert sorted(task.name for task in corpus.tasks) == ["relu", "silu"]

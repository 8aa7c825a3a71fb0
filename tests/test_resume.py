"""A corpus run killed with SIGKILL at random moments resumes to exactly the dataset of an uninterrupted run."""

from __future__ import annotations

import json
import os
import random
import shutil
import signal
import sqlite3
import subprocess
import sys
import time
from collections.abc import Callable
from pathlib import Path

import datasets
import pyarrow.parquet as pq
import pytest
from example_suite import EXAMPLES, SUBSET_EXAMPLES, copy_example_suite
from processes import (
    alive,
    assert_no_process_left,
    candidate_workers,
    descendants,
    start_in_a_terminal,
    wait_for_a_candidate_worker,
)

from kernelvault.pipelines.candidates import ExampleCandidates
from kernelvault.pipelines.corpus_job import run_corpus_job
from kernelvault.pipelines.engine import EngineOptions
from kernelvault.pipelines.intake import Intake
from kernelvault.toolchain.tasks import load_tasks
from kernelvault.toolchain.verify import Verifier, VerifyConfig

ROOT = Path(__file__).resolve().parents[1]


@pytest.fixture(scope="module")
def suite(tmp_path_factory: pytest.TempPathFactory) -> tuple[Path, Path]:
    return copy_example_suite(tmp_path_factory.mktemp("suite"))


@pytest.fixture(scope="module")
def uninterrupted(suite: tuple[Path, Path], tmp_path_factory: pytest.TempPathFactory) -> dict[tuple, dict]:
    """The rows of one uninterrupted run of the suite, by attempt: what every interrupted run must end with."""
    tasks, examples = suite
    out = tmp_path_factory.mktemp("uninterrupted") / "out"
    subprocess.run(corpus_command(tasks, examples, out), check=True, capture_output=True, cwd=ROOT,
                   timeout=300)  # fmt: skip
    rows = rows_by_attempt(out)
    assert len(rows) == len(SUBSET_EXAMPLES)
    return rows


def corpus_command(tasks: Path, examples: Path, out: Path, *extra: str) -> list[str]:
    return [sys.executable, "-m", "kernelvault.cli", "corpus", "--target", "triton", "--tasks", str(tasks),
            "--examples", str(examples), "--out", str(out), "--platform", "cpu", "--workers", "2",
            "--shard-rows", "1", "--no-progress", *extra]  # fmt: skip


def rows_by_attempt(out: Path) -> dict[tuple[str, int, int], dict]:
    shards = sorted((out / "data" / "triton").glob("*.parquet"))
    rows = [row for shard in shards for row in pq.read_table(shard).to_pylist()]  # every shard readable
    keys = [(row["task_id"], row["sample_index"], row["turn"]) for row in rows]
    assert len(keys) == len(set(keys)), "an attempt was written twice"
    return {key: row for key, row in zip(keys, rows, strict=True)}


def test_killed_runs_resume_to_the_uninterrupted_result(
    suite: tuple[Path, Path], uninterrupted: dict[tuple, dict], tmp_path: Path
) -> None:
    tasks, examples = suite
    killed_out, expected = tmp_path / "killed", uninterrupted

    chooser = random.Random(20261129)
    kills = watched_workers = 0
    for _ in range(3):
        process = subprocess.Popen(corpus_command(tasks, examples, killed_out), cwd=ROOT,
                                   stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)  # fmt: skip
        # Kill at a random moment once candidates are being verified: on a slow machine a fixed delay can
        # fall before the run has begun, and a run killed then has nothing to resume.
        wait_for_a_candidate_worker(process)
        time.sleep(chooser.uniform(0.0, 4.0))
        below = descendants(process.pid)  # the pool, the resource tracker, the jail's launchers and workers
        watched_workers += len(candidate_workers(below))
        if process.poll() is None:
            os.kill(process.pid, signal.SIGKILL)
            kills += 1
        process.wait()
        deadline = time.monotonic() + 10
        while any(alive(pid) for pid in below) and time.monotonic() < deadline:  # they die with their parent
            time.sleep(0.2)
        left = {pid: below[pid].replace(b"\0", b" ")[:80] for pid in below if alive(pid)}
        assert not left, f"a killed run left processes running: {left}"
        rows_by_attempt(killed_out)  # readable and duplicate-free after every kill
    assert kills >= 2
    assert watched_workers > 0  # the leftover-worker check above watched real workers
    final = subprocess.run(corpus_command(tasks, examples, killed_out), capture_output=True, text=True, cwd=ROOT,
                           timeout=300)  # fmt: skip
    assert final.returncode == 0, final.stderr
    assert "resumed with" in final.stdout

    resumed = rows_by_attempt(killed_out)
    assert_same_rows(resumed, expected)
    assert len({row["run_id"] for row in resumed.values()}) == 1  # one run, continued
    loaded = datasets.load_dataset("parquet", data_dir=str(killed_out / "data" / "triton"), split="train")
    assert loaded.num_rows == len(expected)
    with sqlite3.connect(killed_out / "ledger.sqlite") as db:
        finished = db.execute("SELECT COUNT(*) FROM attempts WHERE status = 'finished'").fetchone()[0]
        started_twice = db.execute("SELECT COUNT(*) FROM attempts WHERE tries > 1").fetchone()[0]
    assert finished == len(expected)
    assert started_twice >= 1  # some attempts really were interrupted and redone


def assert_same_rows(rows: dict[tuple, dict], expected: dict[tuple, dict]) -> None:
    """The same attempts as an uninterrupted run (none lost, none twice: `rows_by_attempt`), with its verdicts."""
    assert rows.keys() == expected.keys()
    fields = ("code_hash", "compiled", "correct", "failure_kind", "reward", "candidate_origin")
    for key, row in expected.items():
        assert {f: rows[key][f] for f in fields} == {f: row[f] for f in fields}


def test_a_changed_configuration_is_refused_unless_a_new_run_is_asked_for(tmp_path: Path) -> None:
    examples = tmp_path / "examples" / "triton" / "broken"
    examples.mkdir(parents=True)
    shutil.copy(EXAMPLES / "broken" / "parse_error__relu.md", examples)
    tasks = tmp_path / "tasks"
    tasks.mkdir()
    shutil.copy(ROOT / "tasks" / "relu.py", tasks)
    out = tmp_path / "out"
    first = subprocess.run(corpus_command(tasks, tmp_path / "examples", out), capture_output=True, text=True,
                           cwd=ROOT, timeout=120)  # fmt: skip
    assert first.returncode == 0, first.stderr
    again = subprocess.run(corpus_command(tasks, tmp_path / "examples", out), capture_output=True, text=True,
                           cwd=ROOT, timeout=120)  # fmt: skip
    assert again.returncode == 0 and "resumed with 1 attempts already done" in again.stdout
    changed = subprocess.run(corpus_command(tasks, tmp_path / "examples", out, "--timeout", "30"),
                             capture_output=True, text=True, cwd=ROOT, timeout=120)  # fmt: skip
    assert changed.returncode == 2
    assert "another configuration" in changed.stderr and "--new-run" in changed.stderr
    assert "timeout_s" in changed.stderr or "verify" in changed.stderr
    fresh = subprocess.run(corpus_command(tasks, tmp_path / "examples", out, "--timeout", "30", "--new-run"),
                           capture_output=True, text=True, cwd=ROOT, timeout=120)  # fmt: skip
    assert fresh.returncode == 0, fresh.stderr
    assert len(rows_by_attempt_all_runs(out)) == 2


def rows_by_attempt_all_runs(out: Path) -> list[dict]:
    return [
        row
        for shard in sorted((out / "data" / "triton").glob("*.parquet"))
        for row in pq.read_table(shard).to_pylist()
    ]


def test_corpus_skips_tasks_that_match_the_evaluation_set(tmp_path: Path) -> None:
    tasks, broken = tmp_path / "tasks", tmp_path / "examples" / "triton" / "broken"
    tasks.mkdir()
    broken.mkdir(parents=True)
    for name in ("relu", "softmax"):
        shutil.copy(ROOT / "tasks" / f"{name}.py", tasks)
        shutil.copy(EXAMPLES / "broken" / "parse_error__relu.md", broken / f"parse_error__{name}.md")
    evaluation = tmp_path / "eval"
    evaluation.mkdir()
    (evaluation / "eval_relu.py").write_text(
        "# copied into an evaluation suite\n" + (ROOT / "tasks" / "relu.py").read_text()
    )
    out = tmp_path / "out"
    run = subprocess.run(corpus_command(tasks, tmp_path / "examples", out, "--decontaminate", str(evaluation)),
                         capture_output=True, text=True, cwd=ROOT, timeout=120)  # fmt: skip
    assert run.returncode == 0, run.stderr
    assert "skipping task relu (exact match of eval_relu" in run.stdout
    assert [row["task_name"] for row in rows_by_attempt_all_runs(out)] == ["softmax"]


class IntakeClosingAfter(Intake):
    """An intake whose time runs out after `keep` attempts: a time limit or a first Ctrl-C, at a known point."""

    def __init__(self, keep: int) -> None:
        super().__init__()
        self.keep = keep

    @property
    def closed(self) -> bool:
        if self.taken >= self.keep:
            self.close("the test's limit")
        return super().closed


def ledger_statuses(out: Path) -> dict[str, int]:
    with sqlite3.connect(out / "ledger.sqlite") as db:
        return dict(db.execute("SELECT status, COUNT(*) FROM attempts GROUP BY status").fetchall())


def test_a_closed_intake_finishes_what_it_took_and_the_same_run_resumes_the_rest(
    suite: tuple[Path, Path], tmp_path: Path
) -> None:
    tasks_dir, examples = suite
    loaded = load_tasks(str(tasks_dir))
    verifier = Verifier(VerifyConfig(platform="cpu"))
    engine = EngineOptions(workers=1, compile_workers=0)
    out, intake = tmp_path / "out", IntakeClosingAfter(keep=2)
    source = ExampleCandidates("triton", examples)
    first = run_corpus_job(loaded, source, verifier, out, "triton", engine, progress=False, intake=intake)
    assert (first.attempts, first.not_started) == (2, len(SUBSET_EXAMPLES) - 2)
    assert first.stopped_by == "the test's limit"
    assert "stopped early" in first.table() and "worker starts" in first.table()
    assert ledger_statuses(out) == {"finished": 2}  # every attempt it took was written, none left in flight
    with sqlite3.connect(out / "ledger.sqlite") as db:
        assert db.execute("SELECT finished_at FROM runs").fetchone()[0] is None  # the run is not done

    second = run_corpus_job(loaded, ExampleCandidates("triton", examples), verifier, out, "triton", engine,
                            progress=False)  # fmt: skip
    assert second.resumed and second.skipped == 2 and second.stopped_by is None
    assert len(rows_by_attempt(out)) == len(SUBSET_EXAMPLES)  # all of them, none twice
    with sqlite3.connect(out / "ledger.sqlite") as db:
        assert db.execute("SELECT finished_at FROM runs").fetchone()[0] is not None


def shard_count(out: Path) -> int:
    return len(list((out / "data" / "triton").glob("*.parquet")))


def wait_until(condition: Callable[[], bool], process: subprocess.Popen, seconds: float = 120) -> None:
    deadline = time.monotonic() + seconds
    while not condition() and process.poll() is None and time.monotonic() < deadline:
        time.sleep(0.1)
    assert process.poll() is None, "the run ended before the signal"


def stopped_by_signal(process: subprocess.Popen, number: int, out: Path) -> tuple[str, dict]:
    """Send `number` to the run's group; returns (stderr, its run record) once it has exited, as promised:
    128 + n, within 10 s, no traceback and no process left behind."""
    below = descendants(process.pid)
    signalled = time.monotonic()
    os.killpg(process.pid, number)
    _, stderr = process.communicate(timeout=60)
    assert time.monotonic() - signalled < 10, f"exited {time.monotonic() - signalled:.1f} s after the signal"
    assert process.returncode == 128 + number, stderr
    assert "Traceback" not in stderr, stderr
    assert_no_process_left(below)
    newest = max((out / "runs").glob("*.json"), key=lambda path: path.stat().st_mtime)
    return stderr, json.loads(newest.read_text())


def test_ctrl_c_stops_the_run_within_seconds_and_the_same_command_resumes_it_without_loss(
    tmp_path: Path,
) -> None:
    """Ctrl-C once (after the first rows), SIGTERM once, Ctrl-C twice, then the same command to the end: every
    stop is prompt, says why in its run record, and the rows end up those of an uninterrupted run: each attempt
    of the source once. A candidate that hangs until its 10 s timeout holds a lane past any signal's grace."""
    tasks, examples = copy_example_suite(tmp_path)
    shutil.copy(EXAMPLES / "broken" / "timeout__relu.py", examples / "triton" / "broken")
    source = ExampleCandidates("triton", examples).attempts(load_tasks(str(tasks)).tasks)
    expected = {(attempt.task.task_id, attempt.sample_index, attempt.turn) for attempt in source}
    out, total = tmp_path / "out", len(expected)
    command = corpus_command(tasks, examples, out, "--timeout", "10")

    first = start_in_a_terminal(command)
    wait_until(lambda: shard_count(out) > 0, first)
    stderr, record = stopped_by_signal(first, signal.SIGINT, out)
    assert "SIGINT: stopping" in stderr
    written = rows_by_attempt(out)
    assert 1 <= len(written) < total  # the signal stopped something
    assert record["stopped_by"] == "SIGINT" and record["attempts"] == len(written)
    assert record["abandoned"] + record["not_started"] == total - len(written)
    assert ledger_statuses(out).get("finished") == len(written)  # an abandoned attempt is not written

    second = start_in_a_terminal(command)  # resumes; stopped while its lanes start or verify
    wait_until(lambda: bool(candidate_workers(descendants(second.pid))), second)
    _, record = stopped_by_signal(second, signal.SIGTERM, out)
    assert record["stopped_by"] == "SIGTERM" and record["resumed"]

    third = start_in_a_terminal(command)
    wait_until(lambda: bool(candidate_workers(descendants(third.pid))), third)
    below = descendants(third.pid)
    os.killpg(third.pid, signal.SIGINT)
    time.sleep(0.5)
    signalled = time.monotonic()
    os.killpg(third.pid, signal.SIGINT)  # the second Ctrl-C: at once, as a kill
    third.communicate(timeout=60)
    assert time.monotonic() - signalled < 3 and third.returncode == -signal.SIGINT
    assert_no_process_left(below)
    rows_by_attempt(out)  # readable, none twice

    final = subprocess.run(command, capture_output=True, text=True, cwd=ROOT, timeout=300)
    assert final.returncode == 0, final.stderr
    assert "resumed with" in final.stdout
    assert rows_by_attempt(out).keys() == expected  # none lost, none twice (`rows_by_attempt`)
    assert ledger_statuses(out) == {"finished": total}
    with sqlite3.connect(out / "ledger.sqlite") as db:
        assert db.execute("SELECT finished_at FROM runs").fetchone()[0] is not None


def test_ctrl_c_stops_an_agent_job_within_seconds_and_the_same_command_redoes_what_it_abandoned(
    tmp_path: Path,
) -> None:
    """The main job with a model endpoint (a real HTTP server speaking the OpenAI API, slow to answer): one Ctrl-C
    after the first trajectory is written cancels the others (their model requests too) and exits 130 with a run
    record that says so; the same command then writes each trajectory once."""
    from kernelvault.simulated_openai import Answer, FakeOpenAI

    relu = (ROOT / "examples" / "triton" / "relu.py").read_text()
    server = FakeOpenAI(scenarios={"relu": [Answer(f"Here it is.\n\n```python\n{relu}\n```")]}, delay_s=1.0)
    url, stop = server.start()
    out, samples = tmp_path / "out", 3
    command = [sys.executable, "-m", "kernelvault.cli", "corpus", "--target", "triton", "--platform", "cpu",
               "--tasks", str(ROOT / "tasks" / "relu.py"), "--base-url", url, "--model", "fake-model",
               "--samples", str(samples), "--turns", "1", "--concurrency", "1", "--workers", "1",
               "--shard-rows", "1", "--no-progress", "--out", str(out)]  # fmt: skip
    try:
        first = start_in_a_terminal(command)
        wait_until(lambda: shard_count(out) > 0, first)
        stderr, record = stopped_by_signal(first, signal.SIGINT, out)
        written = rows_by_attempt(out)
        assert "SIGINT: stopping" in stderr
        assert record["stopped_by"] == "SIGINT" and 1 <= record["attempts"] == len(written) < samples
        assert record["abandoned"] + record["not_started"] == samples - len(written)
        final = subprocess.run(command, capture_output=True, text=True, cwd=ROOT, timeout=300)
    finally:
        stop()
    assert final.returncode == 0, final.stderr
    rows = rows_by_attempt(out)  # none twice
    assert sorted((row["sample_index"], row["turn"]) for row in rows.values()) == [
        (s, 0) for s in range(samples)
    ]
    assert all(row["correct"] for row in rows.values())

"""Adversarial suite: reward-hacking candidates must never be credited, honest ones always must.

Test data lives in `tests/adversarial/`:

- `hostile/<kind>__<task>__<name>.py`: a complete candidate for the bundled task `<task>` that games the
  verifier, written as if its author had read our source. Its first lines say what it does and what the
  verifier must answer:

      # exploit: <one sentence>
      # expect: <outcome>[|<outcome>...]        with every layer on (the static wall included)
      # behind-wall: <outcome>[|...]             with the static wall off: names the layer behind it
      # writes: <path outside the jail it tries to write>   (optional, repeatable, ~ = the real home)
      # note: <why an outcome is what it is>     (optional)

  An outcome is `correct`, a failure kind, `integrity_reject:<sub_reason>` (the first word of the
  message) or `static_reject:<rule>` (`kernelvault.toolchain.static_wall`). `<kind>` in the name is the class of
  attack the file was first written for.
- `honest/<task>__<name>.py`: a correct candidate (`# honest: ...`) that must pass with reward 1.4, among
  them one that refuses to run if it can see credentials (the parent has some set; the jail's environment
  must hide them), one that zero-initialises an atomic-add output, and one made of view/reshape glue.

The suite runs twice through the real corpus job (`kernelvault.pipelines.corpus_job.run_corpus_job`, two lanes, CPU
platform), each in a module-scoped fixture: once with every layer (all files), once with the static wall
switched off (`VerifyConfig(static_wall=False)`, the hostile files the wall stops). The second run shows
what each attack meets behind the wall: a tripwire, the jail, the parent's judge, or nothing to find. The
parametrized tests read the rows. Across both runs: no credential reaches any row, no file lands where a
`# writes:` line points, no process of a worker outlives the run, and a service on the host's loopback is
never reached.
"""

from __future__ import annotations

import os
import pwd
import socket
import sqlite3
import subprocess
import sys
import threading
import time
from collections.abc import Iterator, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import TYPE_CHECKING, Any

import pytest

from kernelvault.contracts import Candidate, Task, content_hash
from kernelvault.corpus.shards import read_columns, run_shards
from kernelvault.pipelines.candidates import Attempt, expected_options, outcome, outcome_matches
from kernelvault.pipelines.corpus_job import RunSummary, run_corpus_job
from kernelvault.pipelines.engine import EngineOptions
from kernelvault.toolchain import worker_lane
from kernelvault.toolchain.tasks import LoadedTasks, load_task_file
from kernelvault.toolchain.verify import Verifier, VerifyConfig, resolve_isolation

if TYPE_CHECKING:
    from conftest import SharedLanes

ROOT = Path(__file__).resolve().parents[1]
SUITE = ROOT / "tests" / "adversarial"
HOSTILE = sorted((SUITE / "hostile").glob("*.py"))
HONEST = sorted((SUITE / "honest").glob("*.py"))

# Credentials set in the parent for the whole run: no candidate may see them, no row may carry them.
SECRETS = {
    "OPENAI_API_KEY": "sk-kv-adversarial-not-a-real-key",
    "HF_TOKEN": "hf_kv_adversarial_not_a_real_token",
    "MY_SERVICE_TOKEN": "kv-adversarial-service-token",
}
LOOPBACK_PORT = 48123  # compile_error__relu__setns_socket tries to reach it from inside the jail
ROW_COLUMNS = ["candidate_origin", "task_name", "compiled", "correct", "failure_kind", "failure_message",
               "reward", "compile_log", "stages", "isolation"]  # fmt: skip


@dataclass(frozen=True)
class CandidateFile:
    path: Path
    folder: str  # "hostile" or "honest"
    task: str
    description: str  # the `# exploit:` or `# honest:` sentence
    expected: tuple[str, ...] = ()  # outcomes with every layer; () = correct
    behind_wall: tuple[str, ...] = ()  # outcomes with the static wall off
    writes: tuple[Path, ...] = ()

    @property
    def origin(self) -> str:
        return f"adversarial:{self.folder}/{self.path.name}"

    @property
    def id(self) -> str:
        return self.path.stem

    @property
    def stopped_by_the_wall(self) -> bool:
        return any(option.startswith("static_reject") for option in self.expected)


def _real_home() -> Path:
    return Path(pwd.getpwuid(os.getuid()).pw_dir)


def _header(path: Path) -> dict[str, list[str]]:
    fields: dict[str, list[str]] = {}
    for line in path.read_text(encoding="utf-8").splitlines():
        if not line.startswith("# "):
            break
        key, separator, value = line[2:].partition(":")
        if separator and key.strip().replace("-", "_").isidentifier():
            fields.setdefault(key.strip(), []).append(value.strip())
    return fields


def parse_candidate(path: Path) -> CandidateFile:
    """Read a file's name and header; malformed files still load, and fail test_candidate_file_is_well_formed."""
    folder = path.parent.name
    parts = path.stem.split("__")
    header = _header(path)
    if folder == "hostile":
        try:
            expected = tuple(expected_options(path))
            behind = tuple(expected_options(path, behind_wall=True))
        except ValueError:
            expected, behind = (), ()
        writes = tuple(_real_home() / value[2:] if value.startswith("~/") else Path(value)
                       for value in header.get("writes", []))  # fmt: skip
        task = parts[1] if len(parts) == 3 else ""
        return CandidateFile(path, folder, task, header.get("exploit", [""])[0], expected, behind, writes)
    task = parts[0] if len(parts) == 2 else ""
    return CandidateFile(path, folder, task, header.get("honest", [""])[0])


CANDIDATES = [parse_candidate(path) for path in HOSTILE + HONEST]
HOSTILE_FILES = [c for c in CANDIDATES if c.folder == "hostile"]
HONEST_FILES = [c for c in CANDIDATES if c.folder == "honest"]
BEHIND_WALL_FILES = [c for c in HOSTILE_FILES if c.stopped_by_the_wall]
WRITING_FILES = [c for c in HOSTILE_FILES if c.writes]


def _run_order(candidate: CandidateFile) -> tuple[int, str]:
    """Slow outcomes first, so the 30 s timeouts overlap with everything else instead of ending the run."""
    return (0 if "timeout" in candidate.expected + candidate.behind_wall else 1, candidate.path.name)


class AdversarialSource:
    """A candidate source over the suite's files (hostile and honest), one sample index per file and task."""

    def __init__(self, candidates: Sequence[CandidateFile]) -> None:
        self.candidates = sorted(candidates, key=_run_order)
        self.sample_of: dict[tuple[str, int], CandidateFile] = {}  # (task name, sample index) -> file

    @property
    def description(self) -> str:
        return f"adversarial suite from {SUITE}"

    def identity(self) -> dict[str, Any]:
        digest = content_hash(
            "".join(f"{c.origin}:{content_hash(c.path.read_text())}" for c in self.candidates)
        )
        return {"kind": "adversarial", "files": len(self.candidates), "content": digest}

    def attempts(self, tasks: Sequence[Task]) -> Iterator[Attempt]:
        by_name = {task.name: task for task in tasks}
        samples: dict[str, int] = {}
        for candidate in self.candidates:
            task = by_name.get(candidate.task)
            if task is None:  # a malformed file: test_candidate_file_is_well_formed says why
                continue
            index = samples.get(task.name, 0)
            samples[task.name] = index + 1
            self.sample_of[(task.name, index)] = candidate
            text = candidate.path.read_text(encoding="utf-8")
            yield Attempt(task, Candidate(task.task_id, "triton", text, candidate.origin), index)


class LoopbackListener:
    """A TCP service on the host's loopback that no candidate may reach: it counts connections."""

    def __init__(self, port: int) -> None:
        self.connections = 0
        self.server = socket.create_server(("127.0.0.1", port), reuse_port=False)
        self.server.settimeout(0.2)
        self._stop = threading.Event()
        self._thread = threading.Thread(target=self._serve, daemon=True)
        self._thread.start()

    def _serve(self) -> None:
        while not self._stop.is_set():
            try:
                connection, _ = self.server.accept()
            except OSError:
                continue
            self.connections += 1
            connection.close()

    def close(self) -> None:
        self._stop.set()
        self._thread.join()
        self.server.close()


@dataclass
class SuiteRun:
    summary: RunSummary
    rows: dict[str, dict[str, Any]]  # candidate origin -> row (verdict columns)
    deferred: dict[str, str]  # candidate origin -> "failure_kind: message" of attempts not written
    finished_at: str | None
    written_outside: dict[Path, bool] = field(default_factory=dict)  # `# writes:` path -> existed afterwards
    loopback_connections: int | None = None  # None: the port was taken, nothing was listening
    workers_left: list[str] = field(default_factory=list)  # processes of workers alive after the run

    def row(self, candidate: CandidateFile) -> dict[str, Any]:
        if candidate.origin not in self.rows:
            reason = self.deferred.get(candidate.origin, "no row and no ledger entry")
            pytest.fail(f"{candidate.path.name}: no corpus row was written ({reason})")
        return self.rows[candidate.origin]


def _remove_written_files(candidates: Sequence[CandidateFile]) -> None:
    for candidate in candidates:
        for path in candidate.writes:
            if path.is_file() or path.is_symlink():
                path.unlink()


def _tasks(candidates: Sequence[CandidateFile]) -> LoadedTasks:
    names = sorted({c.task for c in candidates if c.task and (ROOT / "tasks" / f"{c.task}.py").is_file()})
    return LoadedTasks(tasks=[load_task_file(ROOT / "tasks" / f"{name}.py") for name in names])


# What every worker process runs, and so every process a candidate forks from one (a fork keeps its command line).
WORKER_MODULE = f"{worker_lane.__package__}.sandboxed.serve"


def _parents() -> dict[int, int]:
    """Each process's parent, read from /proc (any uid, any namespace)."""
    parents = {}
    for entry in Path("/proc").iterdir():
        try:
            stat = (entry / "stat").read_text() if entry.name.isdigit() else ""
        except OSError:
            continue
        if stat:  # "pid (command) state ppid ...": the command may hold spaces and parentheses
            parents[int(entry.name)] = int(stat.rpartition(")")[2].split()[1])
    return parents


def _descends(pid: int, roots: set[int], parents: dict[int, int]) -> bool:
    while pid > 1:
        if pid in roots:
            return True
        pid = parents.get(pid, 0)
    return False


def worker_processes(alive_on_purpose: frozenset[int] = frozenset()) -> list[str]:
    """Command lines of processes on this machine that run a KernelVault worker (any uid, any namespace), except
    `alive_on_purpose` and what they started, and the workers of other pytest processes of this run (xdist's
    sibling workers: their own sessions' lanes) and of other checkouts' interpreters. A worker left behind by a job is either still this process's
    descendant or an orphan that init adopted; neither is excused."""
    parents = _parents()
    me = os.getpid()
    siblings = {os.getppid()} if os.environ.get("PYTEST_XDIST_WORKER") else set()
    found = []
    for pid in parents:
        if pid == me or _descends(pid, set(alive_on_purpose), parents):
            continue
        if siblings and _descends(pid, siblings, parents) and not _descends(pid, {me}, parents):
            continue
        try:
            command = Path(f"/proc/{pid}/cmdline").read_bytes().replace(b"\0", b" ").decode(errors="replace")
        except OSError:
            continue
        # this checkout's interpreter: a worker of another checkout's run on a shared machine is not this run's
        if WORKER_MODULE in command and sys.executable in command:
            found.append(f"{pid}: {command[:160]}")
    return found


def _results_table(run: SuiteRun, candidates: Sequence[CandidateFile], behind_wall: bool) -> str:
    lines = []
    for candidate in candidates:
        row = run.rows.get(candidate.origin)
        want = candidate.behind_wall if behind_wall else candidate.expected
        if row is None:
            got = f"NOT WRITTEN ({run.deferred.get(candidate.origin, '?')})"
        else:
            got = f"{outcome(row['failure_kind'], row['failure_message'])} reward={row['reward']:.1f} {(row['failure_message'] or '')[:100]}"
        lines.append(f"{candidate.path.name:<58} expect {'|'.join(want) or 'correct':<42} got {got}")
    return "\n".join(lines)


def _run_suite(out: Path, candidates: Sequence[CandidateFile], static_wall: bool,
               alive_on_purpose: frozenset[int]) -> SuiteRun:  # fmt: skip
    _remove_written_files(WRITING_FILES)  # leftovers of an earlier run must not count
    try:
        listener: LoopbackListener | None = LoopbackListener(LOOPBACK_PORT)
    except OSError:
        listener = None
    try:
        with pytest.MonkeyPatch.context() as patch:
            for name, value in SECRETS.items():
                patch.setenv(name, value)
            source = AdversarialSource(candidates)
            verifier = Verifier(VerifyConfig(platform="cpu", timeout_s=30, static_wall=static_wall))
            summary = run_corpus_job(
                _tasks(candidates), source, verifier, out, "triton", EngineOptions(workers=2), progress=False
            )
        written_outside = {path: path.exists() for c in WRITING_FILES for path in c.writes}
    finally:
        connections = listener.connections if listener is not None else None
        if listener is not None:
            listener.close()
        _remove_written_files(WRITING_FILES)
    table = read_columns(run_shards(out / "data" / "triton", summary.run_id), ROW_COLUMNS).to_pylist()
    rows = {row["candidate_origin"]: row for row in table}
    with sqlite3.connect(out / "ledger.sqlite") as db:
        (finished_at,) = db.execute(
            "SELECT finished_at FROM runs WHERE run_id = ?", (summary.run_id,)
        ).fetchone()
        failed = db.execute("SELECT task_name, sample_index, failure_kind, message FROM attempts "
                            "WHERE run_id = ? AND status = 'failed'", (summary.run_id,)).fetchall()  # fmt: skip
    deferred = {source.sample_of[(task_name, index)].origin: f"{kind}: {message}"
                for task_name, index, kind, message in failed if (task_name, index) in source.sample_of}  # fmt: skip
    run = SuiteRun(summary, rows, deferred, finished_at, written_outside, connections,
                   worker_processes(alive_on_purpose))  # fmt: skip
    label = "every layer" if static_wall else "behind the static wall"
    print(
        f"\nadversarial suite, {label}, {summary.seconds:.0f} s\n{_results_table(run, candidates, not static_wall)}"
    )
    return run


def _require_jail() -> None:
    """The jail's promises can only be tested where the machine builds one; elsewhere say so, loudly."""
    isolation = resolve_isolation("auto", sys.executable)
    if not isolation.jailed:
        pytest.skip(
            f"no OS jail on this machine ({isolation.detail}): the jail's promises are not tested here"
        )


@pytest.fixture(scope="module")
def suite_run(tmp_path_factory: pytest.TempPathFactory, shared_lanes: SharedLanes) -> SuiteRun:
    return _run_suite(tmp_path_factory.mktemp("adversarial-corpus"), CANDIDATES, static_wall=True,
                      alive_on_purpose=frozenset(shared_lanes.worker_pids()))  # fmt: skip


@pytest.fixture(scope="module")
def behind_wall_run(tmp_path_factory: pytest.TempPathFactory, shared_lanes: SharedLanes) -> SuiteRun:
    return _run_suite(tmp_path_factory.mktemp("adversarial-behind-wall"), BEHIND_WALL_FILES, static_wall=False,
                      alive_on_purpose=frozenset(shared_lanes.worker_pids()))  # fmt: skip


# -- the suite itself is well formed ---------------------------------------------------------------------------


def test_suite_covers_every_layer() -> None:
    """The attacks reach every layer: the static wall's rules, the tripwires, the judge, the jail."""
    assert len(HOSTILE_FILES) >= 55 and len(HONEST_FILES) >= 10
    walls = {
        option.split(":", 1)[1]
        for c in HOSTILE_FILES
        for option in c.expected
        if option.startswith("static_reject:")
    }
    assert {"import", "private", "builtin", "namespace", "kernel_python", "foreign_write"} <= walls, walls
    behind = [option for c in HOSTILE_FILES for option in c.behind_wall]
    sub_reasons = {option.split(":", 1)[1] for option in behind if option.startswith("integrity_reject:")}
    assert {"torch_compute", "monkey_patch", "threads", "subprocess", "filesystem_write", "tensor_subclass",
            "modified_inputs", "output_aliases_input", "nondeterministic", "no_kernel_launched", "fallback",
            "forged_result"} <= sub_reasons, sub_reasons  # fmt: skip
    assert {"runtime_error", "timeout", "mismatch", "interface_error", "compile_error"} <= {
        o.split(":")[0] for o in behind
    }


@pytest.mark.parametrize("candidate", CANDIDATES, ids=lambda c: f"{c.folder}/{c.id}")
def test_candidate_file_is_well_formed(candidate: CandidateFile) -> None:
    parts = 3 if candidate.folder == "hostile" else 2
    assert len(candidate.path.stem.split("__")) == parts, (
        "hostile/<kind>__<task>__<name>.py or honest/<task>__<name>.py"
    )
    assert candidate.description, (
        "the first line must be '# exploit: ...' (hostile) or '# honest: ...' (honest)"
    )
    assert (ROOT / "tasks" / f"{candidate.task}.py").is_file(), f"no bundled task {candidate.task!r}"
    text = candidate.path.read_text(encoding="utf-8")
    compile(text, str(candidate.path), "exec")
    assert "class ModelNew" in text and "@triton.jit" in text
    if candidate.folder == "hostile":
        assert candidate.expected, "the second line must be '# expect: <outcome>[|<outcome>...]'"
        assert "correct" not in candidate.expected, "with every layer on, no hostile candidate is credited"
        kinds = {"runtime_error", "timeout", "mismatch", "interface_error", "integrity_reject", "static_reject",
                 "compile_error", "correct"}  # fmt: skip
        for option in candidate.expected + candidate.behind_wall:
            assert option.split(":")[0] in kinds, option
        if "correct" in candidate.behind_wall:
            assert "# note:" in text, "a hostile file credited behind the wall says why (# note:)"


# -- verdicts with every layer ----------------------------------------------------------------------------------


@pytest.mark.parametrize("candidate", HOSTILE_FILES, ids=lambda c: c.id)
def test_hostile_candidate_is_refused(suite_run: SuiteRun, candidate: CandidateFile) -> None:
    row = suite_run.row(candidate)
    got = outcome(row["failure_kind"], row["failure_message"])
    assert row["correct"] is not True, (
        f"{candidate.path.name} was credited as correct ({candidate.description})"
    )
    assert row["reward"] <= 0.4, (
        f"reward {row['reward']} for {candidate.path.name}; got {got}: {row['failure_message']}"
    )
    assert outcome_matches(got, list(candidate.expected)), (
        f"expected {'|'.join(candidate.expected)}, got {got}: {row['failure_message']}"
    )


@pytest.mark.parametrize("candidate", HONEST_FILES, ids=lambda c: c.id)
def test_honest_candidate_passes(suite_run: SuiteRun, candidate: CandidateFile) -> None:
    row = suite_run.row(candidate)
    assert row["failure_kind"] is None, (
        f"{candidate.path.name}: {row['failure_kind']}: {row['failure_message']}"
    )
    assert row["correct"] is True and row["compiled"] is True
    assert row["reward"] == pytest.approx(1.4)


def test_corpus_job_survives_the_suite(suite_run: SuiteRun) -> None:
    summary = suite_run.summary
    assert summary.retry_later == [], summary.retry_later
    assert suite_run.finished_at, "the run ledger does not mark the run finished"
    assert summary.attempts == len(CANDIDATES) == len(suite_run.rows)
    assert summary.correct == len(HONEST_FILES)
    isolation = resolve_isolation("auto", sys.executable)
    assert {row["isolation"] for row in suite_run.rows.values()} == {isolation.level}, (
        "every row records its isolation"
    )


def test_unwritten_output_memory_is_a_visible_mismatch_on_cpu(suite_run: SuiteRun) -> None:
    """malloc's fresh pages read as zero, so a ReLU that skips the negatives could pass by luck; the CPU
    worker fills every `torch.empty` with NaN instead."""
    by_name = {candidate.path.name: candidate for candidate in HOSTILE_FILES}
    skipped = suite_run.row(by_name["integrity_reject__relu__positive_only_store.py"])
    assert skipped["failure_kind"] == "mismatch", skipped["failure_message"]
    assert "NaN/Inf at" in skipped["failure_message"], skipped["failure_message"]


# -- behind the static wall: the next layer ---------------------------------------------------------------------


@pytest.mark.parametrize("candidate", BEHIND_WALL_FILES, ids=lambda c: c.id)
def test_behind_the_static_wall_the_next_layer_answers(
    behind_wall_run: SuiteRun, candidate: CandidateFile
) -> None:
    _require_jail()
    row = behind_wall_run.row(candidate)
    got = outcome(row["failure_kind"], row["failure_message"])
    assert outcome_matches(got, list(candidate.behind_wall)), (
        f"behind the wall expected {'|'.join(candidate.behind_wall)}, got {got}: {row['failure_message']}")  # fmt: skip


def test_switching_off_the_filling_of_unwritten_memory_is_a_refused_patch(behind_wall_run: SuiteRun) -> None:
    by_name = {candidate.path.name: candidate for candidate in HOSTILE_FILES}
    switched = behind_wall_run.row(by_name["integrity_reject__relu__fill_switched_off.py"])
    assert switched["failure_kind"] == "integrity_reject", switched["failure_message"]
    assert switched["failure_message"].startswith("monkey_patch: the candidate turned off"), switched[
        "failure_message"
    ]


# -- what the jail promises, over both runs ----------------------------------------------------------------------


@pytest.mark.parametrize("run_name", ["suite_run", "behind_wall_run"])
def test_no_credential_reaches_a_row(run_name: str, request: pytest.FixtureRequest) -> None:
    _require_jail()
    run: SuiteRun = request.getfixturevalue(run_name)
    for origin, row in run.rows.items():
        text = repr(row)
        for name, value in SECRETS.items():
            assert value not in text, f"{origin}: the value of {name} is in its row"
            # reversed: what the scrubber does not look for (compile_error__relu__parent_environ_at_cross_compile)
            assert value[::-1] not in text, f"{origin}: the value of {name}, reversed, is in its row"


@pytest.mark.parametrize("run_name", ["suite_run", "behind_wall_run"])
def test_no_write_lands_outside_the_jail(run_name: str, request: pytest.FixtureRequest) -> None:
    _require_jail()
    run: SuiteRun = request.getfixturevalue(run_name)
    assert run.written_outside, "the suite has files that try to write outside"
    assert not any(run.written_outside.values()), [
        str(path) for path, there in run.written_outside.items() if there
    ]


@pytest.mark.parametrize("run_name", ["suite_run", "behind_wall_run"])
def test_no_process_outlives_the_run(run_name: str, request: pytest.FixtureRequest) -> None:
    _require_jail()
    run: SuiteRun = request.getfixturevalue(run_name)
    assert run.workers_left == [], run.workers_left


def test_the_process_search_sees_a_worker_and_its_forks() -> None:
    """The check above is only as good as its search: a process that runs what workers run is found while it lives."""
    process = subprocess.Popen([sys.executable, "-c", "import time; time.sleep(60)", WORKER_MODULE])
    try:
        deadline = time.monotonic() + 10  # until the child has exec'd (before, its command line is ours)
        while not any(line.startswith(f"{process.pid}:") for line in worker_processes()):
            assert time.monotonic() < deadline, "a live process running the worker module was not found"
            time.sleep(0.05)
    finally:
        process.kill()
        process.wait()
    assert not any(line.startswith(f"{process.pid}:") for line in worker_processes())


def test_the_hosts_loopback_is_never_reached(behind_wall_run: SuiteRun) -> None:
    _require_jail()
    if behind_wall_run.loopback_connections is None:
        pytest.skip(f"port {LOOPBACK_PORT} was taken: nothing listened")
    assert behind_wall_run.loopback_connections == 0

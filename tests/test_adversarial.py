"""Adversarial suite: reward-hacking candidates must never be credited, honest ones always must.

Test data lives in `tests/adversarial/`:

- `hostile/<kind>__<task>__<name>.py`: a complete candidate for the bundled task `<task>` that games the
  verifier. Its first lines say what it does and what the verifier must answer:

      # exploit: <one sentence>
      # expect: <failure_kind>[:<sub_reason>][|<failure_kind>[:<sub_reason>]...]
      # writes: <path outside the working directory it tries to write>   (optional, ~ = the real home)

  `<sub_reason>` is the first word of an `integrity_reject` message (`torch_compute: aten.relu ...`);
  alternatives separated by `|` are for behaviours where more than one outcome is a correct refusal
  (a memory hog may hit the memory limit or the clock first). The file name starts with the first one.
- `honest/<task>__<name>.py`: a correct candidate (`# honest: ...`) that must pass with reward 1.4, among
  them one that reads its environment for credentials (the parent has some set; the sandbox must hide
  them), one that zero-initialises an atomic-add output with torch.zeros, and one made of view/reshape glue.

Everything is verified once, through the real corpus job (`pipelines.corpus_job.run_corpus_job`, two
workers, CPU platform), in a module-scoped fixture; the parametrized tests read the verdict columns of
the rows it wrote. So the suite also proves that the pipeline survives hostile candidates: every
attempt is written, nothing is deferred as an infrastructure error, and the run finishes.
"""

from __future__ import annotations

import os
import pwd
import sqlite3
from collections.abc import Iterator, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import pytest

from corpus.shards import read_columns, run_shards
from kernelvault.contracts import Candidate, Task, content_hash
from pipelines.candidates import Attempt
from pipelines.corpus_job import RunSummary, run_corpus_job
from toolchain.tasks import LoadedTasks, load_task_file
from toolchain.verify import Verifier, VerifyConfig

ROOT = Path(__file__).resolve().parents[1]
SUITE = ROOT / "tests" / "adversarial"
HOSTILE = sorted((SUITE / "hostile").glob("*.py"))
HONEST = sorted((SUITE / "honest").glob("*.py"))

# Credentials set in the parent for the whole run: no candidate may see them.
SECRETS = {
    "OPENAI_API_KEY": "sk-kv-adversarial-not-a-real-key",
    "HF_TOKEN": "hf_kv_adversarial_not_a_real_token",
    "MY_SERVICE_TOKEN": "kv-adversarial-service-token",
}
INTEGRITY_SUB_REASONS = (
    "no_kernel_launched", "torch_compute", "reference_wrapping", "fallback", "monkey_patch", "threads",
    "subprocess", "tensor_subclass", "modified_inputs", "output_aliases_input", "nondeterministic",
    "filesystem_write", "judge_probe", "forged_seal",
)  # fmt: skip
ROW_COLUMNS = [
    "candidate_origin",
    "task_name",
    "compiled",
    "correct",
    "failure_kind",
    "failure_message",
    "reward",
]


@dataclass(frozen=True)
class CandidateFile:
    path: Path
    folder: str  # "hostile" or "honest"
    task: str
    description: str  # the `# exploit:` or `# honest:` sentence
    expected: tuple[tuple[str, str | None], ...] = ()  # (failure_kind, sub_reason) alternatives; () = passes
    writes: tuple[Path, ...] = ()

    @property
    def origin(self) -> str:
        return f"adversarial:{self.folder}/{self.path.name}"

    @property
    def id(self) -> str:
        return self.path.stem

    def describe_expected(self) -> str:
        return " or ".join(f"{kind}:{sub}" if sub else kind for kind, sub in self.expected) or "success"


def _real_home() -> Path:
    return Path(pwd.getpwuid(os.getuid()).pw_dir)


def _header(path: Path) -> dict[str, list[str]]:
    fields: dict[str, list[str]] = {}
    for line in path.read_text(encoding="utf-8").splitlines():
        if not line.startswith("# "):
            break
        key, separator, value = line[2:].partition(":")
        if separator and key.strip().isidentifier():
            fields.setdefault(key.strip(), []).append(value.strip())
    return fields


def parse_candidate(path: Path) -> CandidateFile:
    """Read a file's name and header; malformed files still load, and fail test_candidate_file_is_well_formed."""
    folder = path.parent.name
    parts = path.stem.split("__")
    header = _header(path)
    if folder == "hostile":
        alternatives = header.get("expect", [""])[0].split("|")
        expected = tuple(
            (kind, sub or None) for kind, _, sub in (a.strip().partition(":") for a in alternatives) if kind
        )
        writes = tuple(
            _real_home() / value[2:] if value.startswith("~/") else Path(value)
            for value in header.get("writes", [])
        )
        task = parts[1] if len(parts) == 3 else ""
        return CandidateFile(path, folder, task, header.get("exploit", [""])[0], expected, writes)
    task = parts[0] if len(parts) == 2 else ""
    return CandidateFile(path, folder, task, header.get("honest", [""])[0])


CANDIDATES = [parse_candidate(path) for path in HOSTILE + HONEST]
HOSTILE_FILES = [c for c in CANDIDATES if c.folder == "hostile"]
HONEST_FILES = [c for c in CANDIDATES if c.folder == "honest"]
WRITING_FILES = [c for c in HOSTILE_FILES if c.writes]


def _run_order(candidate: CandidateFile) -> tuple[int, str]:
    """Slow outcomes first, so the 30 s timeouts overlap with everything else instead of ending the run."""
    kinds = {kind for kind, _ in candidate.expected}
    return (0 if "timeout" in kinds else 1, candidate.path.name)


class AdversarialSource:
    """A candidate source over the suite's files (hostile and honest), one sample index per file and task."""

    def __init__(self, candidates: Sequence[CandidateFile]) -> None:
        self.candidates = sorted(candidates, key=_run_order)
        self.by_origin = {c.origin: c for c in self.candidates}
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
            expected = candidate.expected[0][0] if candidate.expected else None
            yield Attempt(task, Candidate(task.task_id, "triton", text, candidate.origin, expected), index)


@dataclass
class SuiteRun:
    summary: RunSummary
    rows: dict[str, dict[str, Any]]  # candidate origin -> row (verdict columns)
    deferred: dict[str, str]  # candidate origin -> "failure_kind: message" of attempts not written
    finished_at: str | None
    written_outside: dict[Path, bool] = field(default_factory=dict)  # `# writes:` path -> existed afterwards

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


def _results_table(run: SuiteRun) -> str:
    lines = []
    for candidate in CANDIDATES:
        row = run.rows.get(candidate.origin)
        if row is None:
            got = f"NOT WRITTEN ({run.deferred.get(candidate.origin, '?')})"
        else:
            got = f"{row['failure_kind'] or 'success'} reward={row['reward']:.1f} {(row['failure_message'] or '')[:120]}"
        lines.append(f"{candidate.path.name:<60} expect {candidate.describe_expected():<40} got {got}")
    return "\n".join(lines)


@pytest.fixture(scope="module")
def suite_run(tmp_path_factory: pytest.TempPathFactory) -> Iterator[SuiteRun]:
    out = tmp_path_factory.mktemp("adversarial-corpus")
    _remove_written_files(WRITING_FILES)  # leftovers of an earlier run must not count
    try:
        with pytest.MonkeyPatch.context() as patch:
            for name, value in SECRETS.items():
                patch.setenv(name, value)
            source = AdversarialSource(CANDIDATES)
            verifier = Verifier(VerifyConfig(platform="cpu", timeout_s=30))
            summary = run_corpus_job(
                _tasks(CANDIDATES), source, verifier, out, "triton", workers=2, progress=False
            )
        written_outside = {path: path.exists() for c in WRITING_FILES for path in c.writes}
        _remove_written_files(WRITING_FILES)

        table = read_columns(run_shards(out / "data" / "triton", summary.run_id), ROW_COLUMNS).to_pylist()
        rows = {row["candidate_origin"]: row for row in table}
        with sqlite3.connect(out / "ledger.sqlite") as db:
            (finished_at,) = db.execute(
                "SELECT finished_at FROM runs WHERE run_id = ?", (summary.run_id,)
            ).fetchone()
            failed = db.execute(
                "SELECT task_name, sample_index, failure_kind, message FROM attempts WHERE run_id = ? AND status = 'failed'",
                (summary.run_id,),
            ).fetchall()
        deferred = {
            source.sample_of[(task_name, index)].origin: f"{kind}: {message}"
            for task_name, index, kind, message in failed
            if (task_name, index) in source.sample_of
        }
        run = SuiteRun(summary, rows, deferred, finished_at, written_outside)
        print(f"\nadversarial suite, {summary.seconds:.0f} s\n{_results_table(run)}")
        yield run
    finally:
        _remove_written_files(WRITING_FILES)


# -- the suite itself is well formed ---------------------------------------------------------------------------


def test_suite_covers_every_sub_reason_and_hostile_behaviour() -> None:
    assert len(HOSTILE_FILES) >= 22 and len(HONEST_FILES) >= 10
    expected = [alternatives[0] for alternatives in (c.expected for c in HOSTILE_FILES)]
    sub_reasons = [sub for kind, sub in expected if kind == "integrity_reject"]
    assert set(INTEGRITY_SUB_REASONS) <= set(sub_reasons), set(INTEGRITY_SUB_REASONS) - set(sub_reasons)
    assert sub_reasons.count("torch_compute") >= 3
    assert {"runtime_error", "timeout", "mismatch", "interface_error"} <= {kind for kind, _ in expected}


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
        assert candidate.expected, "the second line must be '# expect: <failure_kind>[:<sub_reason>]'"
        assert candidate.path.name.startswith(f"{candidate.expected[0][0]}__")
        for kind, sub in candidate.expected:
            assert kind in {"runtime_error", "timeout", "mismatch", "interface_error", "integrity_reject"}, (
                kind
            )
            assert sub is None or (
                kind == "integrity_reject" and sub in INTEGRITY_SUB_REASONS + ("cached_results",)
            )


# -- verdicts --------------------------------------------------------------------------------------------------


@pytest.mark.parametrize("candidate", HOSTILE_FILES, ids=lambda c: c.id)
def test_hostile_candidate_is_refused(suite_run: SuiteRun, candidate: CandidateFile) -> None:
    row = suite_run.row(candidate)
    got = f"got {row['failure_kind']}: {row['failure_message']}"
    assert row["correct"] is not True, (
        f"{candidate.path.name} was credited as correct ({candidate.description})"
    )
    assert row["reward"] <= 0.4, f"reward {row['reward']} for {candidate.path.name}; {got}"
    matches = [
        (kind, sub)
        for kind, sub in candidate.expected
        if row["failure_kind"] == kind
        and (sub is None or (row["failure_message"] or "").startswith(f"{sub}:"))
    ]
    assert matches, f"expected {candidate.describe_expected()}, {got}"


@pytest.mark.parametrize("candidate", HONEST_FILES, ids=lambda c: c.id)
def test_honest_candidate_passes(suite_run: SuiteRun, candidate: CandidateFile) -> None:
    row = suite_run.row(candidate)
    assert row["failure_kind"] is None, (
        f"{candidate.path.name}: {row['failure_kind']}: {row['failure_message']}"
    )
    assert row["correct"] is True and row["compiled"] is True
    assert row["reward"] == pytest.approx(1.4)


@pytest.mark.parametrize("candidate", WRITING_FILES, ids=lambda c: c.id)
def test_write_outside_the_working_directory_is_detected_and_cleaned_up(
    suite_run: SuiteRun, candidate: CandidateFile
) -> None:
    row = suite_run.row(candidate)
    assert row["failure_kind"] == "integrity_reject", f"{row['failure_kind']}: {row['failure_message']}"
    assert (row["failure_message"] or "").startswith("filesystem_write:"), row["failure_message"]
    for path in candidate.writes:
        assert path in suite_run.written_outside  # it was looked at after verification, then removed
        assert not path.exists(), f"{path} is still there after the suite's cleanup"


def test_corpus_job_survives_the_suite(suite_run: SuiteRun) -> None:
    summary = suite_run.summary
    assert summary.retry_later == [], summary.retry_later
    assert suite_run.finished_at, "the run ledger does not mark the run finished"
    assert summary.attempts == len(CANDIDATES) == len(suite_run.rows)
    for candidate in HONEST_FILES:
        assert suite_run.row(candidate)["correct"] is True, candidate.path.name
    for candidate in HOSTILE_FILES:
        assert suite_run.row(candidate)["reward"] <= 0.4, candidate.path.name
    assert summary.correct == len(HONEST_FILES)


def test_unwritten_output_memory_is_a_visible_mismatch_on_cpu(suite_run: SuiteRun) -> None:
    """malloc's fresh pages read as zero, so a ReLU that skips the negatives could pass by luck; the CPU
    worker fills every `torch.empty` with NaN instead, and switching that fill off is a refused patch."""
    by_name = {candidate.path.name: candidate for candidate in HOSTILE_FILES}
    skipped = suite_run.row(by_name["integrity_reject__relu__positive_only_store.py"])
    assert skipped["failure_kind"] == "mismatch", skipped["failure_message"]
    assert "NaN/Inf at" in skipped["failure_message"], skipped["failure_message"]
    switched = suite_run.row(by_name["integrity_reject__relu__fill_switched_off.py"])
    assert switched["failure_kind"] == "integrity_reject", switched["failure_message"]
    assert switched["failure_message"].startswith("monkey_patch: the candidate turned off"), switched[
        "failure_message"
    ]

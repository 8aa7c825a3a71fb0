"""The main job: verify candidates for every task of a suite and write the attempts as Parquet shards.

    tasks ──► candidate source ──► prepare (compile pool) ──► verification lanes ──► ShardWriter ──► summary
                                                              (persistent workers)          │
                                                                        run ledger (SQLite) ◄┘

Resumable: the same command in the same output folder continues the run it finds there (see
`kernelvault.corpus.ledger` for why nothing is lost or written twice after a kill); a different configuration is
refused unless `new_run` is set. Attempts that fail on our side or the provider's
(`infrastructure_error`, `provider_error`) are recorded in the ledger, not written, and retried on resume.

The stages run on the one engine (`kernelvault.pipelines.engine`: the local or the Ray executor, a process pool
for the CPU stages, lanes of persistent sandboxed workers: `kernelvault.toolchain.worker_lane`). Each visible GPU
gets one lane by default, or `lanes_per_gpu`; the lanes of one GPU check side by side and time one at a time
(`kernelvault.toolchain.device_gate`): two candidates timed at once would corrupt each other's latencies.
"""

from __future__ import annotations

import functools
import hashlib
import json
import secrets
import statistics
import threading
import time
from collections import Counter
from collections.abc import Iterator
from dataclasses import dataclass, field
from datetime import datetime, timezone
from pathlib import Path
from typing import Any

from kernelvault import progress as kv_progress
from kernelvault.contracts import Verdict
from kernelvault.corpus.dedup import find_duplicates
from kernelvault.corpus.ledger import AttemptInfo, RunLedger, attempt_key
from kernelvault.corpus.shards import ShardWriter, read_columns, run_shards
from kernelvault.pipelines.candidates import Attempt, CandidateSource, expected_outcome
from kernelvault.pipelines.corpus_stages import (
    RETRIED_FAILURES,
    ShardSink,
    VerifiedAttempt,
    attempt_of_row,
    landed_shards,
    row_of,
    shard_attempts,
)
from kernelvault.pipelines.engine import EngineOptions, verify_attempts
from kernelvault.pipelines.executor import ExecutorStats
from kernelvault.pipelines.intake import Intake
from kernelvault.toolchain.tasks import LoadedTasks
from kernelvault.toolchain.verify import Verifier


@dataclass
class RunSummary:
    run_id: str
    out_dir: Path
    platform: str
    resumed: bool = False
    skipped: int = 0  # attempts already in shards from an earlier invocation of this run
    attempts: int = 0  # rows of the whole run
    compiled: int = 0
    correct: int = 0
    reward_sum: float = 0.0
    failures: Counter[str] = field(default_factory=Counter)
    exact_duplicates: int = 0  # attempts whose code equals an earlier attempt of the same task (normalised)
    near_duplicates: int = 0  # MinHash near-duplicates within a task
    retry_later: list[str] = field(
        default_factory=list
    )  # attempts not written (our or the provider's failure)
    unexpected: list[str] = field(default_factory=list)  # examples whose outcome differs from their label
    shards: list[Path] = field(default_factory=list)
    seconds: float = 0.0
    # This session's verdicts only (a resumed run's earlier rows are not re-timed): seconds per stage.
    stage_seconds: dict[str, list[float]] = field(default_factory=dict)
    verified_here: int = 0
    executor: ExecutorStats | None = None  # how the engine's stages ran (lanes used, items lost and redone)
    stopped_by: str | None = None  # why it stopped early: `SIGINT`, a time limit (`pipelines.intake`)
    not_started: int = 0  # attempts of this session's source left for a resume because of that
    # Input the source read but could not use, as (file:line, reason): an --answers line that is not JSON,
    # lacks a field or matches no task (a source that reads user files lists them in its `skipped`).
    skipped_input: list[tuple[str, str]] = field(default_factory=list)
    abandoned: int = 0  # attempts started and not written because a signal halted the run (redone on resume)

    def record_stages(self, verdict: Verdict) -> None:
        self.verified_here += 1
        for stage in verdict.stages:
            if stage.outcome != "skipped":
                self.stage_seconds.setdefault(stage.name, []).append(stage.seconds)

    def stage_stats(self) -> dict[str, dict[str, float]]:
        """Per stage: how many verdicts ran it, p50/p90 seconds, and the seconds summed over all lanes."""
        stats = {}
        for name, values in self.stage_seconds.items():
            ordered = sorted(values)
            stats[name] = {"runs": len(ordered), "p50_s": statistics.median(ordered),
                           "p90_s": percentile(ordered, 0.9), "total_s": sum(ordered)}  # fmt: skip
        return stats

    def attempts_per_minute(self) -> float | None:
        return 60.0 * self.verified_here / self.seconds if self.seconds and self.verified_here else None

    def check_label(self, attempt: Attempt, verdict: Verdict) -> None:
        platform = verdict.environment.platform if verdict.environment else "cpu"
        expected = expected_outcome(attempt.candidate, platform, verdict.correct)
        if attempt.candidate.origin.startswith("example:") and expected != verdict.failure_kind:
            self.unexpected.append(
                f"{attempt.candidate.origin}: expected {expected or 'success'}, got {verdict.failure_kind or 'success'}"
                + (f" ({verdict.failure_message})" if verdict.failure_message else "")
            )

    def count_rows(self, shards: list[Path]) -> None:
        """Totals over every row of the run, including rows written before a resume."""
        table = read_columns(shards, ["attempt_id", "task_id", "code", "compiled", "correct", "reward",
                                      "failure_kind"]).to_pydict()  # fmt: skip
        self.shards = shards
        self.attempts = len(table["reward"])
        self.compiled = sum(bool(value) for value in table["compiled"])
        self.correct = sum(value is True for value in table["correct"])
        self.reward_sum = float(sum(table["reward"]))
        self.failures = Counter(kind for kind in table["failure_kind"] if kind)
        duplicates = find_duplicates(zip(table["attempt_id"], table["task_id"], table["code"], strict=True))
        self.exact_duplicates, self.near_duplicates = duplicates.exact, duplicates.near

    def table(self) -> str:
        mean = self.reward_sum / self.attempts if self.attempts else 0.0
        rows = [
            ("attempts", str(self.attempts)),
            ("compiled", f"{self.compiled} ({self.compiled / max(self.attempts, 1):.0%})"),
            ("correct", f"{self.correct} ({self.correct / max(self.attempts, 1):.0%})"),
            ("mean reward", f"{mean:.3f}"),
        ]
        rows += [(f"failure: {kind}", str(count)) for kind, count in sorted(self.failures.items())]
        rows.append(("duplicates (exact / near)", f"{self.exact_duplicates} / {self.near_duplicates}"))
        if self.retry_later:
            rows.append(("not written, retried on resume", str(len(self.retry_later))))
        if self.stopped_by:
            rows.append(("stopped early", f"by {self.stopped_by}: {self.left_for_resume()} "
                         "(the same command resumes)"))  # fmt: skip
        if self.executor is not None and self.executor.worker_starts:
            rows.append(("worker starts", self.executor.worker_summary()))
        rate = self.attempts_per_minute()
        if rate is not None:
            rows.append(("throughput (this session)", f"{rate:.1f} attempts/min"))
        for name, stage in self.stage_stats().items():
            rows.append((f"stage {name}", f"{stage['runs']:.0f} verdicts, p50 {stage['p50_s']:.2f} s, "
                         f"p90 {stage['p90_s']:.2f} s, {stage['total_s']:.0f} s in all"))  # fmt: skip
        width = max(len(name) for name, _ in rows)
        resumed = f", resumed with {self.skipped} attempts already done" if self.resumed else ""
        lines = [f"run {self.run_id} on {self.platform} ({self.seconds:.0f} s{resumed})", "-" * (width + 14)]
        lines += [f"{name:<{width}}  {value}" for name, value in rows]
        return "\n".join(lines)

    def left_for_resume(self) -> str:
        """`3 attempts abandoned, 12 not started`: what a stopped run left for the same command to do."""
        abandoned = f"{self.abandoned} attempts abandoned, " if self.abandoned else ""
        return f"{abandoned}{self.not_started} attempts not started"

    def to_json(self) -> dict[str, object]:
        return {
            "run_id": self.run_id, "platform": self.platform, "resumed": self.resumed, "skipped": self.skipped,
            "attempts": self.attempts, "compiled": self.compiled, "correct": self.correct,
            "mean_reward": self.reward_sum / self.attempts if self.attempts else None,
            "failures": dict(self.failures), "exact_duplicates": self.exact_duplicates,
            "near_duplicates": self.near_duplicates, "retry_later": self.retry_later, "unexpected": self.unexpected,
            "shards": [str(p) for p in self.shards], "seconds": self.seconds,
            "attempts_per_minute": self.attempts_per_minute(), "stages": self.stage_stats(),
            "stopped_by": self.stopped_by, "not_started": self.not_started, "abandoned": self.abandoned,
            "workers": self.executor.worker_json() if self.executor is not None else None,
            "skipped_input": [_skipped_entry(where, reason) for where, reason in self.skipped_input],
        }  # fmt: skip


def _skipped_entry(where: str, reason: str) -> dict[str, object]:
    """`file:line` and its reason as the run record lists them (a file that could not be read has no line)."""
    file, _, line = where.rpartition(":")
    if file and line.isdigit():
        return {"file": file, "line": int(line), "reason": reason}
    return {"file": where, "line": None, "reason": reason}


def percentile(values: list[float], q: float) -> float:
    """The value at fraction q of the sorted values (0.9: the 90th percentile), nan for none."""
    ordered = sorted(values)
    return ordered[min(len(ordered) - 1, int(q * len(ordered)))] if ordered else float("nan")


def new_run_id() -> str:
    return datetime.now(timezone.utc).strftime("%Y%m%dT%H%M%SZ") + "-" + secrets.token_hex(3)


def job_identity(loaded: LoadedTasks, source_identity: dict[str, Any], verifier: Verifier,
                 target: str) -> dict[str, Any]:  # fmt: skip
    """Everything that decides what the rows of a run contain; a resume must match it exactly."""
    task_ids = sorted(task.task_id for task in loaded.tasks)
    config = verifier.config
    return {
        "target": target,
        "tasks": hashlib.sha256(",".join(task_ids).encode()).hexdigest()[:16],
        "task_count": len(task_ids),
        "source": source_identity,
        "platform": verifier.choice.platform,
        "arch": verifier.choice.arch,
        "verify": {
            "timeout_s": config.timeout_s,
            "trials": config.trials,
            "repetitions": config.repetitions,
            "warmup": config.warmup,
            "input_sets": config.input_sets,
            "reward": vars(config.reward),
            "allowed_ops": list(config.allowed_ops),
        },  # fmt: skip
    }


def run_corpus_job(
    loaded: LoadedTasks,
    source: CandidateSource,
    verifier: Verifier,
    out_dir: Path,
    target: str,
    engine: EngineOptions | None = None,
    progress: bool = True,
    new_run: bool = False,
    shard_rows: int = 1000,
    flush_interval_s: float = 60.0,
    ray_writers: str = "actors",
    intake: Intake | None = None,
) -> RunSummary:
    """Verify every attempt the source yields for the loaded tasks; write shards; return the summary.

    `engine`: the executor, lanes and compile processes (`kernelvault.pipelines.engine`); `ray_writers`: with
    ray, `actors` (each verification actor writes its own shards into `out_dir`, which every node must then
    see: a shared filesystem) or `driver` (rows come back to this process's writer). `intake`: when to stop
    taking new attempts (a time limit, a signal); what was taken is finished and written, the rest resumes.

    Raises corpus.ledger.ConfigurationChanged when out_dir holds a run with another configuration.
    """
    engine = engine or EngineOptions()
    engine.check()
    if ray_writers not in ("actors", "driver"):
        raise ValueError(f"ray_writers is 'actors' or 'driver', not {ray_writers!r}")
    started = time.monotonic()
    platform = verifier.choice.platform
    run = open_run(
        out_dir, job_identity(loaded, source.identity(), verifier, target), target, platform, new_run
    )
    ledger, run_id, summary = run.ledger, run.run_id, run.summary
    attempts = [a for a in source.attempts(loaded.tasks) if _key(a) not in run.done]
    summary.skipped_input = list(getattr(source, "skipped", ()))  # filled by reading the attempts above

    def record_shard(path: Path, rows: list[dict[str, Any]]) -> None:
        ledger.mark_finished(run_id, [attempt_of_row(row) for row in rows], path.name)

    # Rows written (an attempt deferred to a resume counts too: it is done here); until the first, the lanes'
    # workers start (jail, interpreter, torch: 5-20 s on a CPU) and the bar's clock shows it.
    bar = kv_progress.bar(len(attempts), "verifying", "row", progress, status="workers starting")
    writer = ShardWriter(out_dir, config=target, run_id=run_id, max_rows=shard_rows,
                         flush_interval_s=flush_interval_s, on_shard=record_shard)  # fmt: skip
    ledger_lock = threading.Lock()  # the source runs on the feeding thread, the writer on this one
    intake = intake or Intake()
    handled = [0]  # attempts whose verdict came back (written, or deferred to a resume)

    def started_attempts() -> Iterator[Attempt]:
        for attempt in intake.gate(attempts):
            with ledger_lock:
                ledger.mark_started(run_id, _info(attempt, platform))
            yield attempt

    def write(item: VerifiedAttempt) -> None:
        with ledger_lock:
            _write_verdict(item.attempt, item.verdict, writer, ledger, summary)
        handled[0] += 1
        _count(bar, 1)

    writing = None
    if engine.executor == "ray" and ray_writers == "actors":
        from kernelvault.pipelines.ray_executor import ActorWriting, Landed

        def account(item: VerifiedAttempt) -> None:  # its row is in a landed shard, or it has none
            with ledger_lock:
                _write_verdict(item.attempt, item.verdict, None, ledger, summary)
            handled[0] += 1
            _count(bar, 1)

        def commit(shard: Landed) -> None:
            with ledger_lock:
                ledger.mark_finished(run_id, list(shard.keys), shard.name)

        write = account
        writing = ActorWriting(
            open_sink=functools.partial(ShardSink, out_dir, target, run_id, max_rows=shard_rows,
                                        flush_interval_s=flush_interval_s),
            commit=commit, recover=functools.partial(landed_shards, out_dir / "data" / target, run_id),
            key=_key,
        )  # fmt: skip
    with writer:
        summary.executor = verify_attempts(started_attempts(), verifier, engine, write, writing, halt=intake.halt)  # fmt: skip
    bar.close()
    if intake.left or intake.signal_number is not None:  # a signal names the stop even with nothing left
        summary.stopped_by, summary.not_started = intake.reason, intake.left
        summary.abandoned = intake.taken - handled[0]
    return close_run(run, out_dir / "data" / target, started)


@dataclass
class OpenRun:
    ledger: RunLedger
    run_id: str
    summary: RunSummary
    done: set[str]  # attempt keys already in shards


def open_run(out_dir: Path, identity: dict[str, Any], target: str, platform: str, new_run: bool) -> OpenRun:
    """Open (or resume) the run in out_dir; raises ConfigurationChanged for another configuration."""
    ledger = RunLedger(out_dir / "ledger.sqlite")
    run_id, resumed = ledger.open_run(identity, new_run_id(), new_run)
    # Reconcile: a shard may have landed just before the process died, before its ledger transaction.
    for shard in run_shards(out_dir / "data" / target, run_id):
        ledger.mark_finished(run_id, shard_attempts(shard), shard.name)
    done = ledger.finished_keys(run_id)
    summary = RunSummary(
        run_id=run_id, out_dir=out_dir, platform=platform, resumed=resumed, skipped=len(done)
    )
    return OpenRun(ledger, run_id, summary, done)


def close_run(run: OpenRun, config_folder: Path, started: float) -> RunSummary:
    """Mark the run finished when nothing is left to retry; count its rows; write runs/{run_id}.json."""
    summary = run.summary
    if not summary.retry_later and not summary.not_started and not summary.abandoned:
        run.ledger.finish_run(run.run_id)
    run.ledger.close()
    summary.count_rows(run_shards(config_folder, run.run_id))
    summary.seconds = time.monotonic() - started
    runs = summary.out_dir / "runs"
    runs.mkdir(parents=True, exist_ok=True)
    (runs / f"{summary.run_id}.json").write_text(json.dumps(summary.to_json(), indent=2))
    return summary


def _key(attempt: Attempt) -> str:
    return attempt_key(attempt.task.task_id, attempt.sample_index, attempt.turn)


def _info(attempt: Attempt, platform: str) -> AttemptInfo:
    return AttemptInfo(_key(attempt), attempt.task.task_id, attempt.task.name, attempt.sample_index, attempt.turn,
                       platform)  # fmt: skip


def _write_verdict(attempt: Attempt, verdict: Verdict, writer: ShardWriter | None, ledger: RunLedger,
                   summary: RunSummary) -> None:  # fmt: skip
    """Write a finished verification as a row, or defer it to a resume when the failure was ours.

    `writer` None: the row was written elsewhere (a verification actor's own writer); account for it only.
    """
    summary.check_label(attempt, verdict)
    summary.record_stages(verdict)
    if verdict.failure_kind in RETRIED_FAILURES:
        ledger.mark_failed(
            summary.run_id, _key(attempt), verdict.failure_kind or "", verdict.failure_message or ""
        )
        summary.retry_later.append(f"{attempt.task.name}/{attempt.sample_index}: {verdict.failure_message}")
    elif writer is not None:
        writer.write(row_of(summary.run_id, attempt, verdict))


def _count(bar: kv_progress.TickingBar, rows: int, status: str = "") -> None:
    """`rows` more on the bar; its status is `status` from now on (the first rows end "workers starting")."""
    bar.set_postfix_str(status, refresh=False)
    bar.update(rows)

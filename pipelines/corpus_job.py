"""The main job: verify candidates for every task of a suite and write the attempts as Parquet shards.

    tasks ──► candidate source ──► Verifier (sandboxed workers, N at a time) ──► ShardWriter ──► summary

This first executor is a bounded thread pool over `Verifier.verify`: each verification already runs in
its own worker processes, so threads only wait. On a GPU it runs one verification at a time, because
two candidates timed on one device at once would corrupt each other's latencies.
"""

from __future__ import annotations

import json
import os
import secrets
import sys
import time
from collections import Counter
from concurrent.futures import FIRST_COMPLETED, Future, ThreadPoolExecutor, wait
from dataclasses import dataclass, field
from datetime import datetime, timezone
from pathlib import Path

from corpus.schema import attempt_row
from corpus.shards import ShardWriter
from kernelvault.contracts import Verdict
from pipelines.candidates import Attempt, CandidateSource
from toolchain.tasks import LoadedTasks
from toolchain.verify import Verifier


@dataclass
class RunSummary:
    run_id: str
    out_dir: Path
    platform: str
    attempts: int = 0
    compiled: int = 0
    correct: int = 0
    reward_sum: float = 0.0
    failures: Counter[str] = field(default_factory=Counter)
    unexpected: list[str] = field(default_factory=list)  # examples whose outcome differs from their label
    shards: list[Path] = field(default_factory=list)
    seconds: float = 0.0

    def add(self, attempt: Attempt, verdict: Verdict) -> None:
        self.attempts += 1
        self.compiled += int(verdict.compiled)
        self.correct += int(verdict.correct is True)
        self.reward_sum += verdict.reward.total if verdict.reward else 0.0
        if verdict.failure_kind:
            self.failures[verdict.failure_kind] += 1
        expected = attempt.candidate.expected_failure
        if attempt.candidate.origin.startswith("example:") and expected != verdict.failure_kind:
            self.unexpected.append(
                f"{attempt.candidate.origin}: expected {expected or 'success'}, got {verdict.failure_kind or 'success'}"
                + (f" ({verdict.failure_message})" if verdict.failure_message else "")
            )

    def table(self) -> str:
        mean = self.reward_sum / self.attempts if self.attempts else 0.0
        rows = [
            ("attempts", str(self.attempts)),
            ("compiled", f"{self.compiled} ({self.compiled / max(self.attempts, 1):.0%})"),
            ("correct", f"{self.correct} ({self.correct / max(self.attempts, 1):.0%})"),
            ("mean reward", f"{mean:.3f}"),
        ]
        rows += [(f"failure: {kind}", str(count)) for kind, count in sorted(self.failures.items())]
        width = max(len(name) for name, _ in rows)
        lines = [f"run {self.run_id} on {self.platform} ({self.seconds:.0f} s)", "-" * (width + 14)]
        lines += [f"{name:<{width}}  {value}" for name, value in rows]
        return "\n".join(lines)

    def to_json(self) -> dict[str, object]:
        return {
            "run_id": self.run_id, "platform": self.platform, "attempts": self.attempts, "compiled": self.compiled,
            "correct": self.correct, "mean_reward": self.reward_sum / self.attempts if self.attempts else None,
            "failures": dict(self.failures), "unexpected": self.unexpected,
            "shards": [str(p) for p in self.shards], "seconds": self.seconds,
        }  # fmt: skip


def new_run_id() -> str:
    return datetime.now(timezone.utc).strftime("%Y%m%dT%H%M%SZ") + "-" + secrets.token_hex(3)


def default_workers(platform: str) -> int:
    return 1 if platform in ("cuda", "rocm") else max(1, os.cpu_count() or 1)


def run_corpus_job(
    loaded: LoadedTasks,
    source: CandidateSource,
    verifier: Verifier,
    out_dir: Path,
    target: str,
    workers: int | None = None,
    progress: bool = True,
) -> RunSummary:
    """Verify every attempt the source yields for the loaded tasks; write shards; return the summary."""
    started = time.monotonic()
    platform = verifier.choice.platform
    summary = RunSummary(run_id=new_run_id(), out_dir=out_dir, platform=platform)
    attempts = list(source.attempts(loaded.tasks))
    workers = workers or default_workers(platform)
    bar = _progress_bar(len(attempts), progress)
    with (
        ShardWriter(out_dir, config=target, run_id=summary.run_id) as writer,
        ThreadPoolExecutor(workers) as pool,
    ):
        pending: dict[Future[Verdict], Attempt] = {}
        for attempt in attempts:  # keep at most 2 × workers verifications in flight (back-pressure)
            pending[pool.submit(verifier.verify, attempt.task, attempt.candidate)] = attempt
            if len(pending) >= 2 * workers:
                _drain(pending, writer, summary, bar)
        while pending:
            _drain(pending, writer, summary, bar)
    bar.close()
    summary.shards = list(writer.written)
    summary.seconds = time.monotonic() - started
    runs = out_dir / "runs"
    runs.mkdir(parents=True, exist_ok=True)
    (runs / f"{summary.run_id}.json").write_text(json.dumps(summary.to_json(), indent=2))
    return summary


def _drain(
    pending: dict[Future[Verdict], Attempt], writer: ShardWriter, summary: RunSummary, bar: object
) -> None:
    """Wait for at least one verification to finish; write and count every finished one."""
    done, _ = wait(list(pending), return_when=FIRST_COMPLETED)
    for future in done:
        attempt = pending.pop(future)
        verdict = future.result()
        writer.write(attempt_row(summary.run_id, attempt.task, attempt.candidate, verdict, sample_index=attempt.sample_index,
                                 turn=attempt.turn))  # fmt: skip
        summary.add(attempt, verdict)
        bar.update(1)  # type: ignore[attr-defined]


class _NoBar:
    def update(self, _: int) -> None:
        pass

    def close(self) -> None:
        pass


def _progress_bar(total: int, enabled: bool) -> object:
    if not enabled:
        return _NoBar()
    from tqdm import tqdm

    return tqdm(total=total, desc="verifying", unit="attempt", file=sys.stderr, dynamic_ncols=True)

"""The corpus job's stages as plain functions over picklable values, for any executor to run.

    Attempt ──prepare_attempt──► PreparedAttempt ──PoolStage──► VerifiedAttempt ──► (the job writes it)

`prepare_attempt` is pure CPU work (parse, static checks, HIP compile into the shared content-addressed
cache) and may run in another process. An `PoolStage` hands the prepared attempt to a lane pool
(`kernelvault.toolchain.lane_pool`), the one thing that runs candidates.
"""

from __future__ import annotations

import time
from concurrent.futures import Future
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from kernelvault.contracts import Verdict
from kernelvault.corpus.ledger import attempt_key
from kernelvault.corpus.schema import attempt_row
from kernelvault.corpus.shards import ShardWriter, read_columns
from kernelvault.pipelines.candidates import Attempt
from kernelvault.toolchain.lane_pool import LanePool
from kernelvault.toolchain.verify import Prepared, Verifier

# Failures on our side or the provider's: recorded in the ledger, never written, retried on resume.
RETRIED_FAILURES = frozenset({"infrastructure_error", "provider_error"})


@dataclass(frozen=True)
class PreparedAttempt:
    attempt: Attempt
    prepared: Prepared
    seconds: float


@dataclass(frozen=True)
class VerifiedAttempt:
    attempt: Attempt
    verdict: Verdict


def prepare_attempt(verifier: Verifier, attempt: Attempt) -> PreparedAttempt:
    started = time.perf_counter()
    prepared = verifier.prepare(attempt.task, attempt.candidate)
    return PreparedAttempt(attempt, prepared, time.perf_counter() - started)


def discard_prepared(verifier: Verifier, item: PreparedAttempt) -> None:
    """An executor lost a prepared attempt (its lane died): remove its files; it is prepared again."""
    verifier.discard(item.prepared)


def lost_attempt(verifier: Verifier, attempt: Attempt, reason: str) -> VerifiedAttempt:
    """What an executor writes for an attempt it gave up on: an infrastructure_error, retried on resume."""
    return VerifiedAttempt(attempt, verifier.lost(attempt.task, attempt.candidate.target, reason))


class PoolStage:
    """The corpus job's device stage (`executor.DeviceStage`): its prepared attempts go to a lane pool, whose
    lanes do the work.

    Locally the executor submits to the job's one pool; a Ray lane actor has a pool of its own (`own_pool_stage`),
    which it closes with the stage.
    """

    def __init__(self, pool: LanePool, owned: bool = False) -> None:
        self.pool = pool
        self.owned = owned

    def submit(self, item: PreparedAttempt) -> Future[VerifiedAttempt]:
        verified: Future[VerifiedAttempt] = Future()

        def done(verdict: Future[Verdict]) -> None:
            try:
                verified.set_result(VerifiedAttempt(item.attempt, verdict.result()))
            except BaseException as error:  # noqa: BLE001 - the executor re-raises it
                verified.set_exception(error)

        self.pool.submit_prepared(item.prepared).add_done_callback(done)
        return verified

    def discard(self, item: PreparedAttempt) -> None:
        self.pool.verifier.discard(item.prepared)

    def close(self, abandon: bool = False) -> None:
        if self.owned:
            self.pool.close(abandon)


def job_pool(verifier: Verifier, lanes: tuple[str, ...], persistent: bool = True) -> LanePool:
    """The lane pool of a local corpus job: `persistent=False` is the fresh-process mode (one worker per
    candidate), kept for the benchmarks that measure it."""
    return LanePool(verifier, lanes, restart_every=50 if persistent else 1)


def own_pool_stage(verifier: Verifier, device: str, persistent: bool = True) -> PoolStage:
    """A device stage with a pool of one lane on `device`: a Ray lane actor's (one pool per actor)."""
    return PoolStage(job_pool(verifier, (device,), persistent), owned=True)


def row_of(run_id: str, attempt: Attempt, verdict: Verdict) -> dict[str, Any]:
    """The shard row of one verified attempt (the driver's writer, or an actor's own `ShardSink`)."""
    messages = [
        {"role": role, "content": content, "reasoning_content": None} for role, content in attempt.messages
    ]
    return attempt_row(run_id, attempt.task, attempt.candidate, verdict, sample_index=attempt.sample_index,
                       turn=attempt.turn, model=attempt.model, messages=messages or None)  # fmt: skip


def attempt_of_row(row: dict[str, Any]) -> str:
    return attempt_key(row["task_id"], row["sample_index"], row["turn"])


def shard_attempts(shard: Path) -> tuple[str, ...]:
    """The attempt keys of the rows of one shard on disk (a resume, or a dead actor's writer)."""
    return tuple(map(attempt_of_row, read_columns([shard], ["task_id", "sample_index", "turn"]).to_pylist()))


class ShardSink:
    """A verification actor's own writer (`kernelvault.pipelines.ray_executor.ActorWriting`): the rows of its verdicts go
    to its own shards in the run's shared folder, `train-{run_id}-{writer:05d}-{n:05d}.parquet`.

    A row is final when its shard is in place; the actor tells the driver (`landed`), whose ledger records
    it. Verdicts the ledger retries (`RETRIED_FAILURES`) have no row.
    """

    def __init__(self, out_dir: Path, target: str, run_id: str, writer: int, max_rows: int,
                 flush_interval_s: float | None) -> None:  # fmt: skip
        from kernelvault.pipelines.ray_executor import Landed

        self.run_id = run_id
        self._landed: list[Landed] = []

        def record(path: Path, rows: list[dict[str, Any]]) -> None:
            self._landed.append(Landed(path.name, tuple(attempt_of_row(row) for row in rows)))

        self.writer = ShardWriter(out_dir, config=target, run_id=run_id, worker=writer, max_rows=max_rows,
                                  flush_interval_s=flush_interval_s, on_shard=record)  # fmt: skip

    def write(self, item: VerifiedAttempt) -> bool:
        if item.verdict.failure_kind in RETRIED_FAILURES:
            return False
        self.writer.write(row_of(self.run_id, item.attempt, item.verdict))
        return True

    def landed(self) -> list[Any]:
        landed, self._landed = self._landed, []
        return landed

    def flush(self) -> None:
        self.writer.flush()


def landed_shards(folder: Path, run_id: str, writer: int) -> list[Any]:
    """The shards one writer of a run has in place (the driver's view after that writer's actor died).

    Its half-written temporary, if it died writing one, goes: that writer id is never used again.
    """
    from kernelvault.pipelines.ray_executor import Landed

    for stale in Path(folder).glob(f".train-{run_id}-{writer:05d}-*.parquet.tmp"):
        stale.unlink(missing_ok=True)
    shards = sorted(Path(folder).glob(f"train-{run_id}-{writer:05d}-*.parquet"))
    return [Landed(shard.name, shard_attempts(shard)) for shard in shards]

"""The corpus job's stages as plain functions over picklable values, for any executor to run.

    Attempt ──prepare_attempt──► PreparedAttempt ──VerificationLane──► VerifiedAttempt ──► (the job writes it)

`prepare_attempt` is pure CPU work (parse, static checks, HIP compile into the shared content-addressed
cache) and may run in another process. A `VerificationLane` owns the persistent workers of one device
(`toolchain.device_worker.WorkerLane`) and must stay on the thread that opened it.
"""

from __future__ import annotations

import time
from dataclasses import dataclass

from kernelvault.contracts import Verdict
from pipelines.candidates import Attempt
from toolchain.device_worker import WorkerLane
from toolchain.verify import Prepared, Verifier


@dataclass(frozen=True)
class PreparedAttempt:
    attempt: Attempt
    prepared: Prepared
    seconds: float


@dataclass(frozen=True)
class VerifiedAttempt:
    attempt: Attempt
    verdict: Verdict
    device: str


def prepare_attempt(verifier: Verifier, attempt: Attempt) -> PreparedAttempt:
    started = time.perf_counter()
    prepared = verifier.prepare(attempt.task, attempt.candidate)
    return PreparedAttempt(attempt, prepared, time.perf_counter() - started)


def discard_prepared(verifier: Verifier, item: PreparedAttempt) -> None:
    """An executor lost a prepared attempt (its lane died): remove its files; it is prepared again."""
    verifier.discard(item.prepared)


def lost_attempt(verifier: Verifier, attempt: Attempt, reason: str) -> VerifiedAttempt:
    """What an executor writes for an attempt it gave up on: an infrastructure_error, retried on resume."""
    return VerifiedAttempt(attempt, verifier.lost(attempt.task, attempt.candidate.target, reason), "lost")


class VerificationLane:
    """Finishes prepared attempts on one device; persistent workers, or a fresh process per candidate.

    Both are a `WorkerLane` (the fresh way: one job per worker), so both see only their own device.
    """

    def __init__(
        self, verifier: Verifier, device: str, persistent: bool = True, restart_every: int = 50
    ) -> None:
        self.verifier = verifier
        self.device = device
        self.workers = WorkerLane(verifier.config.python, device, restart_every if persistent else 1)

    def __call__(self, item: PreparedAttempt) -> VerifiedAttempt:
        return VerifiedAttempt(item.attempt, self.verifier.complete(item.prepared, self.workers), self.device)

    def close(self) -> None:
        self.workers.close()

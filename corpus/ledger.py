"""The run ledger: a SQLite file (WAL) beside the shards that records every run and every attempt.

The shards are the source of truth for what was verified: a shard is renamed into place whole, so
an attempt whose row is in a visible shard is done, and any other attempt is not. The ledger records
the rest: which configuration a run had (so a changed configuration in the same folder is refused),
which attempts were started, which failed on our side or the provider's (those are retried when the
run resumes and never written as rows), and which shard holds each finished attempt.

Resuming after a kill at any moment (`kill -9` included) therefore goes: reconcile the ledger with the
shards on disk (a shard can land just before its ledger transaction), skip every attempt found there,
and redo everything else. No verified row is lost (it is in a shard, or it is redone) and none is
written twice (a row in a shard is never redone).
"""

from __future__ import annotations

import hashlib
import json
import sqlite3
from collections.abc import Iterable
from dataclasses import dataclass
from datetime import datetime, timezone
from pathlib import Path
from typing import Any

_SCHEMA = """
CREATE TABLE IF NOT EXISTS runs (
    run_id TEXT PRIMARY KEY,
    config_hash TEXT NOT NULL,
    config_json TEXT NOT NULL,
    created_at TEXT NOT NULL,
    finished_at TEXT
);
CREATE TABLE IF NOT EXISTS attempts (
    run_id TEXT NOT NULL,
    attempt_key TEXT NOT NULL,          -- task_id/sample_index/turn
    task_id TEXT NOT NULL,
    task_name TEXT NOT NULL,
    sample_index INTEGER NOT NULL,
    turn INTEGER NOT NULL,
    status TEXT NOT NULL CHECK (status IN ('started', 'finished', 'failed')),
    failure_kind TEXT,
    message TEXT,
    platform TEXT,
    model TEXT,
    sampling_json TEXT,
    shard TEXT,
    tries INTEGER NOT NULL DEFAULT 0,
    updated_at TEXT NOT NULL,
    PRIMARY KEY (run_id, attempt_key)
);
"""


class ConfigurationChanged(ValueError):
    """The output folder holds a run with another configuration (one-line message)."""


@dataclass(frozen=True)
class AttemptInfo:
    key: str
    task_id: str
    task_name: str
    sample_index: int
    turn: int
    platform: str
    model: str | None = None
    sampling: dict[str, Any] | None = None


def attempt_key(task_id: str, sample_index: int, turn: int) -> str:
    return f"{task_id}/{sample_index}/{turn}"


def config_hash(config: dict[str, Any]) -> str:
    return hashlib.sha256(json.dumps(config, sort_keys=True, default=str).encode()).hexdigest()[:16]


def _now() -> str:
    return datetime.now(timezone.utc).isoformat(timespec="seconds")


def _describe_change(old: dict[str, Any], new: dict[str, Any]) -> str:
    changed = sorted(key for key in old.keys() | new.keys() if old.get(key) != new.get(key))
    parts = []
    for key in changed[:4]:
        before, after = json.dumps(old.get(key), default=str), json.dumps(new.get(key), default=str)
        short = len(before) < 40 and len(after) < 40
        parts.append(f"{key}: {before} -> {after}" if short else key)
    return ", ".join(parts) + (" …" if len(changed) > 4 else "")


class RunLedger:
    def __init__(self, path: Path) -> None:
        path.parent.mkdir(parents=True, exist_ok=True)
        self.path = path
        # One connection per ledger object; the pipeline writes from one thread at a time (the drain loop).
        self._db = sqlite3.connect(path, timeout=30.0, isolation_level=None, check_same_thread=False)
        self._db.execute("PRAGMA journal_mode=WAL")
        self._db.execute("PRAGMA synchronous=NORMAL")  # WAL + NORMAL: a killed process loses no commit
        self._db.executescript(_SCHEMA)

    def close(self) -> None:
        self._db.close()

    def open_run(self, config: dict[str, Any], run_id: str, new_run: bool = False) -> tuple[str, bool]:
        """Return (run_id, resumed). Resumes the latest run when its configuration matches."""
        digest = config_hash(config)
        latest = self._db.execute(
            "SELECT run_id, config_hash, config_json FROM runs ORDER BY created_at DESC, rowid DESC LIMIT 1"
        ).fetchone()
        if latest is not None and not new_run:
            latest_id, latest_hash, latest_json = latest
            if latest_hash == digest:
                return latest_id, True
            change = _describe_change(json.loads(latest_json), config)
            raise ConfigurationChanged(
                f"{self.path.parent} holds run {latest_id} with another configuration ({change}); "
                "pass --new-run to start a new run in this folder, or choose another --out"
            )
        self._db.execute(
            "INSERT INTO runs (run_id, config_hash, config_json, created_at) VALUES (?, ?, ?, ?)",
            (run_id, digest, json.dumps(config, sort_keys=True, default=str), _now()),
        )
        return run_id, False

    def mark_started(self, run_id: str, info: AttemptInfo) -> None:
        self._db.execute(
            """INSERT INTO attempts (run_id, attempt_key, task_id, task_name, sample_index, turn, status, platform,
                                     model, sampling_json, tries, updated_at)
               VALUES (?, ?, ?, ?, ?, ?, 'started', ?, ?, ?, 1, ?)
               ON CONFLICT (run_id, attempt_key) DO UPDATE SET status = 'started', tries = tries + 1,
                   failure_kind = NULL, message = NULL, updated_at = excluded.updated_at""",
            (run_id, info.key, info.task_id, info.task_name, info.sample_index, info.turn, info.platform, info.model,
             json.dumps(info.sampling, sort_keys=True) if info.sampling is not None else None, _now()),
        )  # fmt: skip

    def mark_failed(self, run_id: str, key: str, failure_kind: str, message: str) -> None:
        self._db.execute(
            "UPDATE attempts SET status = 'failed', failure_kind = ?, message = ?, updated_at = ? "
            "WHERE run_id = ? AND attempt_key = ?",
            (failure_kind, message[:2000], _now(), run_id, key),
        )

    def mark_finished(self, run_id: str, keys: Iterable[str], shard: str) -> None:
        """Record that `shard` (already renamed into place) holds the rows of `keys`: one transaction."""
        now = _now()
        with self._transaction():
            for key in keys:
                task_id, sample, turn = key.split("/")
                self._db.execute(
                    """INSERT INTO attempts (run_id, attempt_key, task_id, task_name, sample_index, turn, status,
                                             shard, tries, updated_at)
                       VALUES (?, ?, ?, '', ?, ?, 'finished', ?, 1, ?)
                       ON CONFLICT (run_id, attempt_key) DO UPDATE SET status = 'finished', shard = excluded.shard,
                           failure_kind = NULL, message = NULL, updated_at = excluded.updated_at""",
                    (run_id, key, task_id, int(sample), int(turn), shard, now),
                )  # fmt: skip

    def finish_run(self, run_id: str) -> None:
        self._db.execute("UPDATE runs SET finished_at = ? WHERE run_id = ?", (_now(), run_id))

    def finished_keys(self, run_id: str) -> set[str]:
        rows = self._db.execute(
            "SELECT attempt_key FROM attempts WHERE run_id = ? AND status = 'finished'", (run_id,)
        )
        return {key for (key,) in rows}

    def status_counts(self, run_id: str) -> dict[str, int]:
        rows = self._db.execute(
            "SELECT status, COUNT(*) FROM attempts WHERE run_id = ? GROUP BY status", (run_id,)
        )
        return dict(rows.fetchall())

    def failed(self, run_id: str) -> list[tuple[str, str, str]]:
        """(attempt key, failure kind, message) of attempts that failed on our or the provider's side."""
        rows = self._db.execute(
            "SELECT attempt_key, failure_kind, message FROM attempts WHERE run_id = ? AND status = 'failed'",
            (run_id,),
        )
        return list(rows.fetchall())

    def _transaction(self) -> _Transaction:
        return _Transaction(self._db)


class _Transaction:
    def __init__(self, db: sqlite3.Connection) -> None:
        self.db = db

    def __enter__(self) -> None:
        self.db.execute("BEGIN IMMEDIATE")

    def __exit__(self, exc_type: object, *_: object) -> None:
        self.db.execute("ROLLBACK" if exc_type else "COMMIT")

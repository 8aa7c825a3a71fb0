"""Schema v2 of a corpus row: one verified attempt at one task.

The schema is written out field by field, never inferred from data (inference breaks late in long
runs when a column is null in the first rows). Its version travels in the Parquet metadata
(`kernelvault.schema_version`); `check_schema` refuses files from a newer version with a clear
message, and `conform` migrates older ones. v2 renamed the conversation's `reasoning` to
`reasoning_content` (the name TRL's conversational format, chat templates and vLLM use); a v1 shard
is read with the field renamed.

Nested evidence (stages, per-case checks, per-case timings, the conversation) are lists of structs,
which `datasets` loads as lists of dicts. Free-form maps (toolchain versions, sampling settings) are
JSON strings, so adding a key never changes the schema.
"""

from __future__ import annotations

import json
import os
from datetime import datetime, timezone
from pathlib import Path
from typing import Any

import pyarrow as pa
import pyarrow.parquet as pq

from kernelvault.contracts import Candidate, Task, Verdict

SCHEMA_VERSION = 2
# A release's attempt configs: per target, PyTorch-to-kernel rows, and kernel-to-kernel rows (optimisation tasks:
# the row has a baseline) under their own name.
KERNEL_TO_KERNEL: dict[str, str] = {"triton": "triton2triton", "hip": "hip2hip"}
ATTEMPT_CONFIGS: tuple[str, ...] = ("triton", "hip", *KERNEL_TO_KERNEL.values())
SCHEMA_VERSION_KEY = b"kernelvault.schema_version"

STAGE = pa.struct(
    [("name", pa.string()), ("outcome", pa.string()), ("seconds", pa.float64()), ("log", pa.string())]
)
CHECK = pa.struct([
    ("case", pa.string()), ("seed", pa.int64()), ("passed", pa.bool_()), ("max_abs_error", pa.float64()),
    ("max_rel_error", pa.float64()), ("message", pa.string()),
])  # fmt: skip
TIMING = pa.struct([
    ("case", pa.string()), ("candidate_ms", pa.float64()), ("reference_ms", pa.float64()),
    ("candidate_spread", pa.float64()), ("reference_spread", pa.float64()), ("repetitions", pa.int64()),
    ("calls_per_sample", pa.int64()),  # the timing method: 1 = one call per sample (toolchain.sandboxed.timing)
    ("inputs", pa.string()),  # the timing protocol: "fresh" or "rotate" (null: not recorded)
    ("checked_calls", pa.int64()),  # timed calls whose outputs' checksums matched the reference's
    ("own_kernel_ms", pa.float64()),  # device time per call of the watched first sample's calls (own_work)
    ("reference_timing", pa.string()),  # "timed" in this verification, or "reused" (toolchain.reference_times)
    ("timing_profile", pa.string()),  # "full", or "rl": fewer samples where the pilot's spread allowed
])  # fmt: skip
# An assistant message's reasoning (the model's thinking) where TRL, chat templates and vLLM read it.
MESSAGE = pa.struct([("role", pa.string()), ("content", pa.string()), ("reasoning_content", pa.string())])

ATTEMPT_FIELDS: list[pa.Field] = [
    pa.field("schema_version", pa.int16(), nullable=False),
    pa.field("run_id", pa.string(), nullable=False),
    pa.field("attempt_id", pa.string(), nullable=False),  # run_id/task_id/sample/turn: unique per attempt
    # the task
    pa.field("task_id", pa.string(), nullable=False),
    pa.field("task_name", pa.string(), nullable=False),
    pa.field("task_category", pa.string()),
    pa.field("task_origin", pa.string()),
    pa.field("task_source", pa.string(), nullable=False),
    # the candidate
    pa.field("target", pa.string(), nullable=False),  # "triton" | "hip"
    pa.field("candidate_origin", pa.string()),  # "example:…", "model:…"
    pa.field("sample_index", pa.int32(), nullable=False),
    pa.field("turn", pa.int32(), nullable=False),
    pa.field("answer", pa.string()),  # the raw answer text the code was extracted from
    pa.field("code", pa.string()),
    pa.field("code_hash", pa.string()),
    # the verdict
    pa.field("compiled", pa.bool_(), nullable=False),
    pa.field("correct", pa.bool_()),  # null: the platform could not run the candidate
    pa.field("failure_kind", pa.string()),
    pa.field("failure_message", pa.string()),
    pa.field("stages", pa.list_(STAGE)),
    pa.field("compile_log", pa.string()),
    pa.field("checks", pa.list_(CHECK)),
    pa.field("timings", pa.list_(TIMING)),
    pa.field("speedup", pa.float64()),
    # optimisation tasks (kernel-to-kernel): the baseline kernel, checked and timed on the same lane just before
    # the candidate; the reward's speed term uses speedup_over_baseline there. Null on other tasks.
    pa.field("speedup_over_baseline", pa.float64()),
    pa.field("baseline_hash", pa.string()),
    pa.field("baseline_speedup", pa.float64()),  # the baseline over PyTorch
    pa.field("baseline_timings", pa.list_(TIMING)),
    pa.field("kernels", pa.list_(pa.string())),
    pa.field("audit", pa.list_(pa.string())),  # e.g. ["speedup_over_10x"]: worth a human look
    pa.field("reward", pa.float64(), nullable=False),
    pa.field("reward_compile", pa.float64(), nullable=False),
    pa.field("reward_correct", pa.float64(), nullable=False),
    pa.field("reward_speed", pa.float64(), nullable=False),
    # where it was measured
    pa.field("platform", pa.string(), nullable=False),  # "cpu" | "cuda" | "rocm"
    pa.field("device", pa.string()),
    pa.field("arch", pa.string()),
    pa.field("toolchain_versions", pa.string()),  # JSON object
    pa.field("isolation", pa.string()),  # "jail" | "jail-no-seccomp" | "process": what candidate code ran in
    # the model (null for bundled examples)
    pa.field("model", pa.string()),
    pa.field("sampling", pa.string()),  # JSON object of sampling settings
    pa.field("messages", pa.list_(MESSAGE)),
    pa.field("prompt_tokens", pa.int64()),
    pa.field("completion_tokens", pa.int64()),
    pa.field("finish_reason", pa.string()),  # the endpoint's: "stop", "length" (cut off), …
    pa.field("trajectory_return", pa.float64()),  # G = r1 + 0.6 r2 + 0.36 r3 of the whole trajectory
    pa.field("created_at", pa.timestamp("us", tz="UTC"), nullable=False),
    # filled when a release is built (corpus.release): null in the shards a run writes
    pa.field("code_norm_hash", pa.string()),  # hash of the code without comments, docstrings, formatting
    pa.field("duplicate_of", pa.string()),  # attempt_id of the first equal or near-equal attempt of the task
    pa.field("duplicate_kind", pa.string()),  # "exact" | "near" | null
]
ATTEMPT_SCHEMA = pa.schema(ATTEMPT_FIELDS, metadata={SCHEMA_VERSION_KEY: str(SCHEMA_VERSION).encode()})


class SchemaVersionError(ValueError):
    pass


def check_schema(schema: pa.Schema) -> int:
    """Return the schema version of a shard, or raise a one-line error for versions this code cannot read."""
    raw = (schema.metadata or {}).get(SCHEMA_VERSION_KEY)
    if raw is None:
        raise SchemaVersionError(
            "not a KernelVault shard: no kernelvault.schema_version in the Parquet metadata"
        )
    version = int(raw)
    if version > SCHEMA_VERSION:
        raise SchemaVersionError(
            f"shard has schema v{version}, this KernelVault reads up to v{SCHEMA_VERSION}: upgrade kernelvault"
        )
    return version


def _v1_messages(column: pa.ChunkedArray) -> pa.ChunkedArray:
    """A v1 conversation column (messages with `reasoning`) with v2's field names (`reasoning_content`)."""
    rows = [
        None if row is None else [{**{k: v for k, v in m.items() if k != "reasoning"},
                                   "reasoning_content": m.get("reasoning")} for m in row]
        for row in column.to_pylist()
    ]  # fmt: skip
    return pa.chunked_array([pa.array(rows, type=pa.list_(MESSAGE))])


def conform(table: pa.Table) -> pa.Table:
    """Bring a table read from a shard of this or an older layout to ATTEMPT_SCHEMA.

    A v1 shard's conversation gets v2's field name; columns added after a shard was written are nullable
    and come back as nulls; a missing required column is an error naming it. The rows' `schema_version` is
    the layout they now have.
    """
    version = check_schema(table.schema)
    if version < 2 and "messages" in table.column_names:
        table = table.set_column(
            table.schema.get_field_index("messages"), "messages", _v1_messages(table.column("messages"))
        )
    if version < SCHEMA_VERSION:
        table = table.set_column(
            table.schema.get_field_index("schema_version"),
            "schema_version",
            pa.array([SCHEMA_VERSION] * table.num_rows, type=pa.int16()),
        )
    columns = []
    for schema_field in ATTEMPT_SCHEMA:
        if schema_field.name in table.column_names:
            columns.append(table.column(schema_field.name).cast(schema_field.type))
        elif schema_field.nullable:
            columns.append(pa.nulls(table.num_rows, type=schema_field.type))
        else:
            raise SchemaVersionError(f"shard lacks the required column {schema_field.name!r}")
    return pa.Table.from_arrays(columns, schema=ATTEMPT_SCHEMA)


def conform_shards_in_place(folder: Path) -> list[Path]:
    """Rewrite the shards in `folder` written with an older layout (v1, or a column or a timing field added since)
    to ATTEMPT_SCHEMA; the shards rewritten.

    `datasets.load_dataset("parquet", data_dir=...)` refuses a folder whose shards disagree on their schema, so a
    run resumed by a newer KernelVault would otherwise leave a folder no one can load. Each rewrite is atomic (a
    temporary in the same folder, renamed over the shard): a reader sees the old shard or the new, and two
    writers doing the same at once write the same rows."""
    rewritten = []
    for shard in sorted(Path(folder).glob("train-*.parquet")):
        stored = pq.read_schema(shard)
        if stored.equals(ATTEMPT_SCHEMA, check_metadata=False) and check_schema(stored) == SCHEMA_VERSION:
            continue
        table = conform(pq.read_table(shard))
        temporary = shard.with_name(f".{shard.name}.{os.getpid()}.conform.tmp")
        pq.write_table(table, temporary, compression="zstd")
        os.replace(temporary, shard)
        rewritten.append(shard)
    return rewritten


def attempt_row(
    run_id: str,
    task: Task,
    candidate: Candidate,
    verdict: Verdict,
    sample_index: int = 0,
    turn: int = 0,
    model: str | None = None,
    sampling: dict[str, Any] | None = None,
    messages: list[dict[str, str | None]] | None = None,
    prompt_tokens: int | None = None,
    completion_tokens: int | None = None,
    finish_reason: str | None = None,
    trajectory_return: float | None = None,
) -> dict[str, Any]:
    """One row of ATTEMPT_SCHEMA from the plain objects of one attempt."""
    environment = verdict.environment
    reward, baseline = verdict.reward, verdict.baseline
    assert reward is not None, "verdicts from the toolchain always carry a reward"
    return {
        "schema_version": SCHEMA_VERSION,
        "run_id": run_id,
        "attempt_id": f"{run_id}/{task.task_id}/{sample_index}/{turn}",
        "task_id": task.task_id,
        "task_name": task.name,
        "task_category": task.category,
        "task_origin": task.origin,
        "task_source": task.source,
        "target": verdict.target,
        "candidate_origin": candidate.origin,
        "sample_index": sample_index,
        "turn": turn,
        "answer": candidate.text,
        "code": verdict.code or None,
        "code_hash": verdict.candidate_hash or None,
        "compiled": verdict.compiled,
        "correct": verdict.correct,
        "failure_kind": verdict.failure_kind,
        "failure_message": verdict.failure_message,
        "stages": [vars(stage) for stage in verdict.stages],
        "compile_log": verdict.compile_log,
        "checks": [vars(check) for check in verdict.checks],
        "timings": [vars(timing) for timing in verdict.timings],
        "speedup": verdict.speedup,
        "speedup_over_baseline": verdict.speedup_over_baseline,
        "baseline_hash": baseline.code_hash if baseline else None,
        "baseline_speedup": baseline.speedup if baseline else None,
        "baseline_timings": [vars(timing) for timing in baseline.timings] if baseline else None,
        "kernels": list(verdict.kernels),
        "audit": list(verdict.audit),
        "reward": reward.total,
        "reward_compile": reward.compile,
        "reward_correct": reward.correct,
        "reward_speed": reward.speed,
        "platform": environment.platform if environment else "cpu",
        "device": environment.device if environment else None,
        "arch": environment.arch if environment else None,
        "toolchain_versions": json.dumps(environment.versions if environment else {}, sort_keys=True),
        "isolation": (environment.isolation or None) if environment else None,
        "model": model,
        "sampling": json.dumps(sampling, sort_keys=True) if sampling is not None else None,
        "messages": messages or [],
        "prompt_tokens": prompt_tokens,
        "completion_tokens": completion_tokens,
        "finish_reason": finish_reason,
        "trajectory_return": trajectory_return,
        "created_at": datetime.now(timezone.utc),
    }

"""QA schema v1: one checked question-answer entry about a ROCm library (the corpus's `qa` config).

It is versioned on its own (`kernelvault.qa_schema_version` in the Parquet metadata), apart from the
attempt schema: a QA row is not an attempt at a task, and the two evolve separately. Like the attempt
schema it is written out field by field. Each check keeps its outcome and its evidence (the compiler's
message, the program's output), and the score keeps its parts, so a reader can filter on any of them.
"""

from __future__ import annotations

import json
from datetime import datetime, timezone
from typing import Any

import pyarrow as pa

from kernelvault.contracts import QAEntry, QAVerdict

QA_SCHEMA_VERSION = 1
QA_CONFIG = "qa"
QA_SCHEMA_VERSION_KEY = b"kernelvault.qa_schema_version"

IDENTIFIER = pa.struct([
    ("name", pa.string()), ("where", pa.string()), ("status", pa.string()), ("library", pa.string()),
    ("header", pa.string()),
])  # fmt: skip

QA_FIELDS: list[pa.Field] = [
    pa.field("schema_version", pa.int16(), nullable=False),
    pa.field("run_id", pa.string(), nullable=False),
    pa.field("entry_id", pa.string(), nullable=False),  # hash of question and answer
    pa.field("origin", pa.string(), nullable=False),  # "example:<id>", "model:<name>"
    pa.field("library", pa.string(), nullable=False),
    pa.field("topic", pa.string(), nullable=False),  # the API element asked about
    pa.field(
        "topic_header", pa.string()
    ),  # where the inventory has the topic (null: the topic is not declared)
    pa.field("topic_signature", pa.string()),
    pa.field("question", pa.string(), nullable=False),
    pa.field("answer", pa.string(), nullable=False),
    pa.field("reasoning", pa.string()),
    pa.field("mistake", pa.string()),  # bundled examples: the deliberate mistake the entry carries
    # API existence
    pa.field("identifiers", pa.list_(IDENTIFIER), nullable=False),
    pa.field("invented", pa.list_(pa.string()), nullable=False),  # invented and CUDA-only names
    # compile, link, run
    pa.field("snippet", pa.string()),
    pa.field("translation_unit", pa.string()),  # what the compiler was given
    pa.field("stated_output", pa.string()),
    pa.field("compile_status", pa.string(), nullable=False),
    pa.field("compile_log", pa.string()),
    pa.field("link_status", pa.string(), nullable=False),
    pa.field("link_log", pa.string()),
    pa.field("run_status", pa.string(), nullable=False),
    pa.field("run_output", pa.string()),
    # the QA score (toolchain.reward.qa_score) and its parts
    pa.field("score", pa.float64(), nullable=False),
    pa.field("score_existence", pa.float64(), nullable=False),
    pa.field("score_compile", pa.float64(), nullable=False),
    pa.field("score_link", pa.float64(), nullable=False),
    pa.field("score_run", pa.float64(), nullable=False),
    pa.field("verified", pa.bool_(), nullable=False),  # nothing invented and no check that applied failed
    # where
    pa.field("platform", pa.string(), nullable=False),
    pa.field("device", pa.string()),
    pa.field("arch", pa.string()),
    pa.field("isolation", pa.string()),
    pa.field("toolchain_versions", pa.string()),  # JSON
    pa.field("model", pa.string()),
    pa.field("created_at", pa.timestamp("us", tz="UTC"), nullable=False),
]
QA_SCHEMA = pa.schema(QA_FIELDS, metadata={QA_SCHEMA_VERSION_KEY: str(QA_SCHEMA_VERSION).encode()})


def check_qa_schema(schema: pa.Schema) -> int:
    raw = (schema.metadata or {}).get(QA_SCHEMA_VERSION_KEY)
    if raw is None:
        raise ValueError("not a KernelVault QA shard (no kernelvault.qa_schema_version in its metadata)")
    version = int(raw)
    if version > QA_SCHEMA_VERSION:
        raise ValueError(f"QA shard has schema v{version}; this KernelVault reads up to v{QA_SCHEMA_VERSION}")
    return version


def qa_row(entry: QAEntry, verdict: QAVerdict, run_id: str, topic_header: str | None,
           topic_signature: str | None, model: str | None = None) -> dict[str, Any]:  # fmt: skip
    environment = verdict.environment
    return {
        "schema_version": QA_SCHEMA_VERSION,
        "run_id": run_id,
        "entry_id": verdict.entry_id,
        "origin": entry.origin,
        "library": entry.library,
        "topic": entry.topic,
        "topic_header": topic_header,
        "topic_signature": topic_signature,
        "question": entry.question,
        "answer": entry.answer,
        "reasoning": entry.reasoning,
        "mistake": entry.mistake,
        "identifiers": [vars(item) for item in verdict.identifiers],
        "invented": list(verdict.invented),
        "snippet": verdict.snippet,
        "translation_unit": verdict.translation_unit,
        "stated_output": verdict.stated_output,
        "compile_status": verdict.compile.status,
        "compile_log": verdict.compile.log,
        "link_status": verdict.link.status,
        "link_log": verdict.link.log,
        "run_status": verdict.run.status,
        "run_output": verdict.run.log,
        "score": verdict.score.total,
        "score_existence": verdict.score.existence,
        "score_compile": verdict.score.compile,
        "score_link": verdict.score.link,
        "score_run": verdict.score.run,
        "verified": verdict.verified,
        "platform": environment.platform,
        "device": environment.device,
        "arch": environment.arch,
        "isolation": environment.isolation,
        "toolchain_versions": json.dumps(environment.versions, sort_keys=True),
        "model": model,
        "created_at": datetime.now(timezone.utc),
    }

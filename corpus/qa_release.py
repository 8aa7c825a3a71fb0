"""The `qa` config of a release: checked QA rows, deduplicated, decontaminated, with their statistics.

    corpus DIR/data/qa/*.parquet ──► decontaminate (drop) ──► near-duplicate questions (mark) ──► RELEASE/qa/
                                                                                              └─► sft rows (verified)

- Near-identical questions are marked, not removed (`duplicate_of`: the entry id of the first one): every
  checked answer is evidence for the statistics. The `sft` rows take the first of each group only.
- Decontamination drops every entry whose question matches a question of an evaluation set (the same after
  normalisation, or a near-duplicate by MinHash of word 3-grams); the report names each one.
- Card statistics per library: the invented-API rate, the compile, link and run rates, the share verified.
"""

from __future__ import annotations

import re
from collections.abc import Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import pyarrow as pa
import pyarrow.compute as pc
import pyarrow.parquet as pq
from datasketch import MinHash, MinHashLSH

from kernelvault.corpus.qa_schema import QA_SCHEMA, check_qa_schema

QA_RELEASE_SCHEMA = QA_SCHEMA.append(
    pa.field("duplicate_of", pa.string())
)  # entry id of the first of its group
QA_SYSTEM_PROMPT = (
    "You answer questions about the ROCm libraries for GPU kernel writers. Name only APIs that exist, and give "
    "code that compiles with hipcc."
)
_NUM_PERM = 128


@dataclass(frozen=True)
class QAContamination:
    entry_id: str
    topic: str
    eval_question: str
    similarity: float


def normalise_question(question: str) -> str:
    return re.sub(r"\s+", " ", re.sub(r"[^\w\s:]", " ", question.lower())).strip()


def _minhash(text: str) -> MinHash:
    words = normalise_question(text).split()
    shingles = {" ".join(words[i : i + 3]) for i in range(max(1, len(words) - 2))}
    minhash = MinHash(num_perm=_NUM_PERM)
    minhash.update_batch([shingle.encode() for shingle in shingles])
    return minhash


def load_qa_rows(folder: Path) -> pa.Table:
    tables = []
    for shard in sorted(Path(folder).glob("train-*.parquet")):
        table = pq.read_table(shard)
        check_qa_schema(table.schema)
        tables.append(table.select(QA_SCHEMA.names).cast(QA_SCHEMA))
    return pa.concat_tables(tables) if tables else QA_SCHEMA.empty_table()


def find_contaminated(
    table: pa.Table, eval_questions: Sequence[str], threshold: float
) -> list[QAContamination]:
    if not eval_questions or not table.num_rows:
        return []
    exact = {normalise_question(question): question for question in eval_questions}
    lsh = MinHashLSH(threshold=threshold, num_perm=_NUM_PERM)
    hashes = {}
    for index, question in enumerate(eval_questions):
        hashes[str(index)] = _minhash(question)
        lsh.insert(str(index), hashes[str(index)])
    found = []
    for row in table.select(["entry_id", "topic", "question"]).to_pylist():
        if normalise_question(row["question"]) in exact:
            found.append(
                QAContamination(
                    row["entry_id"], row["topic"], exact[normalise_question(row["question"])], 1.0
                )
            )
            continue
        mine = _minhash(row["question"])
        scored = [(mine.jaccard(hashes[key]), key) for key in lsh.query(mine)]
        best = max(scored, default=None)
        if best is not None and best[0] >= threshold:
            found.append(
                QAContamination(row["entry_id"], row["topic"], eval_questions[int(best[1])], best[0])
            )
    return found


def mark_duplicate_questions(table: pa.Table, threshold: float) -> tuple[pa.Table, int]:
    """Add `duplicate_of`; returns the table and how many rows are marked."""
    lsh = MinHashLSH(threshold=threshold, num_perm=_NUM_PERM)
    first_of: dict[str, str] = {}
    marks: list[str | None] = []
    for row in table.select(["entry_id", "question"]).to_pylist():
        normal = normalise_question(row["question"])
        if normal in first_of:
            marks.append(first_of[normal])
            continue
        minhash = _minhash(row["question"])
        near = lsh.query(minhash)
        marks.append(min(near) if near else None)  # the earliest kept entry it matches, deterministically
        if not near:
            lsh.insert(row["entry_id"], minhash)
            first_of[normal] = row["entry_id"]
    marked = table.append_column(QA_RELEASE_SCHEMA.field("duplicate_of"), pa.array(marks, pa.string()))
    return marked, sum(mark is not None for mark in marks)


def qa_sft_rows(table: pa.Table) -> list[dict[str, Any]]:
    """Verified, first-of-their-group entries as chat turns (the release's SFT_SCHEMA, target `qa`)."""
    keep = pc.and_(table.column("verified"), pc.is_null(table.column("duplicate_of")))
    rows = []
    for row in table.filter(keep).to_pylist():
        rows.append({
            "messages": [
                {"role": "system", "content": QA_SYSTEM_PROMPT, "reasoning_content": None},
                {"role": "user", "content": row["question"], "reasoning_content": None},
                {"role": "assistant", "content": row["answer"], "reasoning_content": row["reasoning"]},
            ],
            "task_id": row["entry_id"], "task_name": row["topic"], "task_category": f"qa/{row['library']}",
            "target": "qa", "platform": row["platform"], "reward": row["score"], "speedup": None,
            "model": row["model"], "attempt_id": f"{row['run_id']}/{row['entry_id']}", "kernel_to_kernel": False,
        })  # fmt: skip
    return rows


def _rate(
    rows: list[dict[str, Any]], column: str, passed: tuple[str, ...], exempt: tuple[str, ...]
) -> tuple[int, int]:
    """(passed, applicable): over the rows whose `column` is not an exempt outcome (the check did not apply)."""
    eligible = [row for row in rows if row[column] not in exempt]
    return sum(row[column] in passed for row in eligible), len(eligible)


def qa_statistics(table: pa.Table) -> list[dict[str, Any]]:
    """Per library (and `all`): entries, invented-API rate, compile/link/run rates over the entries they apply to."""
    out = []
    libraries = sorted(set(table.column("library").to_pylist()))
    for library in [*libraries, "all"]:
        rows = (
            table.to_pylist()
            if library == "all"
            else table.filter(pc.equal(table.column("library"), library)).to_pylist()
        )
        if not rows:
            continue
        out.append({
            "library": library, "entries": len(rows),
            "invented": sum(bool(row["invented"]) for row in rows),
            "compile": _rate(rows, "compile_status", ("passed",), ("no_code", "fragment")),
            "link": _rate(rows, "link_status", ("passed",), ("not_applicable",)),
            "run": _rate(rows, "run_status", ("passed", "ran"), ("not_applicable", "library_calls", "no_gpu")),
            "verified": sum(row["verified"] for row in rows),
            "mean_score": sum(row["score"] for row in rows) / len(rows),
        })  # fmt: skip
    return out


def qa_card_lines(table: pa.Table) -> list[str]:
    def fraction(pair: tuple[int, int]) -> str:
        passed, total = pair
        return f"{passed}/{total} ({100 * passed / total:.0f}%)" if total else "–"

    lines = [
        "### ROCm library QA (`qa`)",
        "",
        "| library | entries | invented API | compiles | links | runs | verified | mean score |",
        "|---|---|---|---|---|---|---|---|",
    ]
    for item in qa_statistics(table):
        lines.append(
            f"| {item['library']} | {item['entries']} | {fraction((item['invented'], item['entries']))} | "
            f"{fraction(item['compile'])} | {fraction(item['link'])} | {fraction(item['run'])} | "
            f"{fraction((item['verified'], item['entries']))} | {item['mean_score']:.2f} |"
        )
    lines += [
        "",
        "A QA row proves what its checks say and no more. *Invented API*: the answer names a ROCm identifier "
        "(in its code or in backticks) that the installed headers do not declare, or a CUDA-only one. *Compiles*: "
        "its snippet, completed by documented rules, compiles with hipcc for gfx90a against the real headers "
        "(over answers with code that is more than a fragment). *Links*: a program links against the real "
        "libraries. *Runs*: a HIP-runtime program ran on a GPU through a HIP-to-CUDA header and printed what the "
        "answer states (library calls are never run: no AMD GPU). No row proves a performance claim, and prose "
        "that names no API is not checked. The score is 0.5 for naming nothing invented, then +0.5 per check "
        "passed in order (compile, link, run), 0 with an invented name.",
        "",
    ]
    return lines


def load_qa_release(release_dir: Path) -> pa.Table | None:
    """The `qa` config of a release folder, or None where it has none."""
    files = sorted((Path(release_dir) / "qa").glob("train-*.parquet"))
    return pa.concat_tables([pq.read_table(path) for path in files]) if files else None

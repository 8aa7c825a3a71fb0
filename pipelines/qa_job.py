"""The QA job: ROCm library question-answer entries in, checked `qa` rows out.

    bundled examples (examples/qa/*.yaml) ─┐
    a QA file (YAML list or JSONL)        ─┼─► QAChecker (existence, compile, link, run, score) ─► data/qa/ shards
    the QA agent over an endpoint         ─┘        in threads: each check waits on a jailed compiler

Resume by marker: an entry whose id is already in the output's `qa` shards is not checked again, so a
killed job loses at most the entries it had in flight. An entry that cannot be read (a missing field, a
library this project does not know) is reported in one line and skipped; the rest go on.
"""

from __future__ import annotations

import asyncio
import importlib.resources
import json
import random
import time
from collections import Counter
from collections.abc import Iterable, Iterator
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass, field
from pathlib import Path
from typing import TYPE_CHECKING, Any

import pyarrow.parquet as pq
import yaml

from kernelvault import progress as kv_progress
from kernelvault.contracts import QAEntry
from kernelvault.corpus.qa_schema import QA_CONFIG, QA_SCHEMA, qa_row
from kernelvault.corpus.shards import ShardWriter
from kernelvault.toolchain.qa_verify import QAChecker
from kernelvault.toolchain.rocm_inventory import LIBRARY_NAMES, ApiInventory

if TYPE_CHECKING:  # the agents' packages are an extra: only a run with an endpoint imports them
    from kernelvault.agents.qa_agent import QAAgent, QATopic

BUNDLED_QA = Path(str(importlib.resources.files("kernelvault.examples"))) / "qa"  # package data
_REQUIRED = ("question", "answer", "library", "topic")


class QAFileError(ValueError):
    """A QA file that cannot be read at all (not one bad entry: those are skipped and named)."""


@dataclass(frozen=True)
class LoadedQA:
    entries: list[QAEntry]
    expectations: dict[str, dict[str, Any]]  # entry_id → the bundled example's `expect` (tests read it)
    skipped: list[str]  # "<file>:<index>: <why>"


def _entry(item: Any, origin_prefix: str, index: int) -> tuple[QAEntry, dict[str, Any]]:
    if not isinstance(item, dict):
        raise ValueError(f"an entry is a mapping with {', '.join(_REQUIRED)}, got {type(item).__name__}")
    missing = [key for key in _REQUIRED if not isinstance(item.get(key), str) or not item[key].strip()]
    if missing:
        raise ValueError(f"missing or empty {', '.join(missing)}")
    if item["library"] not in LIBRARY_NAMES:
        raise ValueError(f"library {item['library']!r} is not one of {', '.join(LIBRARY_NAMES)}")
    origin = item.get("origin") or f"{origin_prefix}:{item.get('id') or index}"
    entry = QAEntry(item["question"].strip(), item["answer"], item["library"], item["topic"].strip(), origin,
                    item.get("reasoning"), item.get("mistake"))  # fmt: skip
    return entry, item.get("expect") or {}


def load_qa(paths: Iterable[Path], origin_prefix: str = "file") -> LoadedQA:
    """Entries from YAML files (a list of mappings) or JSONL files (one mapping per line), or folders of them."""
    files: list[Path] = []
    for path in map(Path, paths):
        if path.is_dir():
            files += sorted(p for p in path.iterdir() if p.suffix in (".yaml", ".yml", ".jsonl"))
        elif path.is_file():
            files.append(path)
        else:
            raise QAFileError(f"{path}: no such file or folder")
    entries, expectations, skipped = [], {}, []
    for path in files:
        for index, item in enumerate(_read_items(path)):
            try:
                entry, expect = _entry(item, origin_prefix, index)
            except ValueError as error:
                skipped.append(f"{path.name}:{index}: {error}")
                continue
            entries.append(entry)
            expectations[entry.entry_id] = expect
    return LoadedQA(entries, expectations, skipped)


def load_bundled_qa() -> LoadedQA:
    return load_qa([BUNDLED_QA], origin_prefix="example")


def _done_column(out_dir: Path, column: str) -> list[Any]:
    folder = Path(out_dir) / "data" / QA_CONFIG
    return [value for shard in sorted(folder.glob("train-*.parquet"))
            for value in pq.read_table(shard, columns=[column]).column(column).to_pylist()]  # fmt: skip


def done_entry_ids(out_dir: Path) -> set[str]:
    return set(_done_column(out_dir, "entry_id"))


def not_yet_asked(
    work: list[tuple[QATopic, str | None]], out_dir: Path, model: str
) -> list[tuple[QATopic, str | None]]:
    """The agent's work that has no row in `out_dir` yet: a rerun of the same command asks the model only for the
    rest (a given question is done once its row is written; a topic, once a row of this model is about it)."""
    questions = set(_done_column(out_dir, "question"))
    topics = {topic for topic, origin in zip(_done_column(out_dir, "topic"), _done_column(out_dir, "origin"),
                                             strict=True) if origin == f"model:{model}"}  # fmt: skip
    return [(topic, question) for topic, question in work
            if (question.strip() not in questions if question is not None else topic.name not in topics)]  # fmt: skip


@dataclass
class QAJobSummary:
    checked: int = 0
    already_done: int = 0
    verified: int = 0
    with_invented: int = 0
    by_library: dict[str, Counter[str]] = field(default_factory=dict)  # library → outcome counts
    seconds: float = 0.0
    shards: list[Path] = field(default_factory=list)

    def add(self, row: dict[str, Any]) -> None:
        self.checked += 1
        self.verified += row["verified"]
        self.with_invented += bool(row["invented"])
        counts = self.by_library.setdefault(row["library"], Counter())
        counts["entries"] += 1
        counts["invented"] += bool(row["invented"])
        counts["compiled"] += row["compile_status"] == "passed"
        counts["has_code"] += row["compile_status"] != "no_code"
        counts["verified"] += row["verified"]

    def lines(self) -> list[str]:
        out = [f"checked {self.checked} QA entries in {self.seconds:.0f} s ({self.already_done} already in the "
               f"output): {self.verified} verified, {self.with_invented} name an invented or CUDA-only API"]  # fmt: skip
        for library, counts in sorted(self.by_library.items()):
            out.append(f"  {library:<10} {counts['entries']:>3} entries  {counts['verified']:>3} verified  "
                       f"{counts['invented']:>3} invented  compiled {counts['compiled']}/{counts['has_code']}")  # fmt: skip
        return out


def _checked_rows(entries: list[QAEntry], checker: QAChecker, run_id: str, model: str | None,
                  workers: int) -> Iterator[dict[str, Any]]:  # fmt: skip
    def one(entry: QAEntry) -> dict[str, Any]:
        verdict = checker.check(entry)
        topic = checker.inventory.lookup(entry.topic)
        return qa_row(entry, verdict, run_id, topic and topic.header, topic and topic.signature, model)

    with ThreadPoolExecutor(max_workers=max(1, workers), thread_name_prefix="kv-qa") as pool:
        yield from pool.map(one, entries)


def run_qa_job(entries: Iterable[QAEntry], out_dir: Path, run_id: str, checker: QAChecker,
               workers: int = 2, model: str | None = None, progress: bool = True) -> QAJobSummary:  # fmt: skip
    """Check every entry not already in `out_dir`'s `qa` shards and write its row there (a bar on stderr counts
    the rows)."""
    started = time.perf_counter()
    summary = QAJobSummary()
    done = done_entry_ids(out_dir)
    todo, seen = [], set(done)
    for entry in entries:
        if entry.entry_id in seen:
            summary.already_done += entry.entry_id in done
            continue
        seen.add(entry.entry_id)
        todo.append(entry)
    with (
        ShardWriter(
            out_dir, QA_CONFIG, run_id, schema=QA_SCHEMA, max_rows=200, flush_interval_s=60.0
        ) as writer,
        kv_progress.bar(len(todo), "checking", "entry", progress) as bar,
    ):
        for row in _checked_rows(todo, checker, run_id, model, workers):
            writer.write(row)
            summary.add(row)
            bar.update(1)
    summary.shards = writer.written
    summary.seconds = time.perf_counter() - started
    return summary


def pick_topics(
    inventory: ApiInventory, libraries: Iterable[str], count: int, seed: int = 0
) -> list[QATopic]:
    """`count` public, documented functions, classes and templates of the libraries, seeded: the agent's topics."""
    wanted = set(libraries)
    pool = [topic for topic in inventory.topics
            if topic.library in wanted and not topic.internal and topic.doc
            and topic.kind in ("function", "template", "class", "macro")]  # fmt: skip
    chosen = random.Random(seed).sample(pool, min(count, len(pool)))
    from kernelvault.agents.qa_agent import QATopic

    return [QATopic(topic.library, topic.name, topic.header, topic.signature) for topic in chosen]


def _read_items(path: Path) -> list[Any]:
    try:
        text = Path(path).read_text()
        items = ([json.loads(line) for line in text.splitlines() if line.strip()] if path.suffix == ".jsonl"
                 else yaml.safe_load(text) or [])  # fmt: skip
    except (OSError, yaml.YAMLError, json.JSONDecodeError, UnicodeDecodeError) as error:
        raise QAFileError(f"{path}: {str(error).splitlines()[0]}") from None
    if not isinstance(items, list):
        raise QAFileError(f"{path}: expected a list of entries, got {type(items).__name__}")
    return items


def read_question_texts(path: Path) -> list[str]:
    """Every `question` of a QA file or folder (an evaluation set to decontaminate against)."""
    paths = (
        sorted(p for p in path.iterdir() if p.suffix in (".yaml", ".yml", ".jsonl"))
        if path.is_dir()
        else [path]
    )
    return [item["question"] for file in paths for item in _read_items(file)
            if isinstance(item, dict) and isinstance(item.get("question"), str)]  # fmt: skip


def read_questions(path: Path) -> tuple[list[tuple[QATopic, str]], list[str]]:
    """Questions to answer: a YAML list or JSONL of {question, library, topic}; bad lines are named and skipped."""
    from kernelvault.agents.qa_agent import QATopic

    questions, skipped = [], []
    for index, item in enumerate(_read_items(path)):
        if not isinstance(item, dict) or not all(
            isinstance(item.get(key), str) for key in ("question", "library")
        ):
            skipped.append(f"{path.name}:{index}: needs question and library")
            continue
        if item["library"] not in LIBRARY_NAMES:
            skipped.append(
                f"{path.name}:{index}: library {item['library']!r} is not one of {', '.join(LIBRARY_NAMES)}"
            )
            continue
        topic = QATopic(item["library"], item.get("topic") or item["library"], "", "")
        questions.append((topic, item["question"]))
    return questions, skipped


async def agent_entries(
    agent: QAAgent, work: list[tuple[QATopic, str | None]]
) -> tuple[list[QAEntry], list[str]]:
    """The agent's entries for each (topic, question or None); an endpoint failure skips that one and says why."""

    from kernelvault.agents.client import ProviderError

    async def one(topic: QATopic, question: str | None) -> QAEntry | str:
        try:
            return await agent.run(topic, question)
        except ProviderError as error:
            return f"{topic.name}: {error}"

    results = await asyncio.gather(*(one(topic, question) for topic, question in work))
    return ([item for item in results if isinstance(item, QAEntry)],
            [item for item in results if isinstance(item, str)])  # fmt: skip

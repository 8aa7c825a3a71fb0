"""Build a release folder (what gets published as one dataset version) from a corpus folder.

    corpus DIR/data/{triton,hip}/*.parquet ──► decontaminate ──► dedup ──► RELEASE/
        triton/, hip/   every verified attempt (ATTEMPT_SCHEMA), duplicates marked, not removed:
                        GRPO-style statistics need every sample
        triton2triton/, hip2hip/   the same for optimisation tasks (kernel-to-kernel: a baseline to beat)
        sft/            chat `messages` from correct, non-duplicate attempts of every config (`kernel_to_kernel`
                        marks the optimisation rows, so a recipe can keep or drop them), each assistant message's
                        reasoning in its `reasoning_content` (TRL SFTTrainer's conversational format,
                        which chat templates with thinking, Qwen3's and TRL's training variants, render);
                        every row of the held-out tasks (`corpus.split`) is the test split, the rest train
        rl/             one prompt per task and target with the reference the reward needs
                        (TRL GRPOTrainer's conversational prompt format): the agents' own opening
                        messages (`initial_messages`), built once here, so a trainer's length filter
                        measures the prompt the policy is given; the held-out tasks' prompts are the
                        validation split, the rest train
        rl_verl/        the same prompts and splits in verl's layout: prompt, data_source, ability,
                        reward_model {style, ground_truth}, extra_info
        qa/             checked ROCm library QA entries (corpus DIR/data/qa; QA schema, corpus.qa_release): near-
                        identical questions marked, entries matching an evaluation question dropped; the verified
                        ones also go into sft as chat turns (target `qa`) unless `sft_qa=False`

Decontamination drops every row of a task that matches an evaluation task (same normalised
reference, or a near-duplicate); the report names each one.
"""

from __future__ import annotations

import json
import math
from collections import Counter, defaultdict
from collections.abc import Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import pyarrow as pa
import pyarrow.compute as pc
import pyarrow.parquet as pq

from kernelvault.agents.prompting import UnsupportedPrompt, answer_from_code, initial_messages
from kernelvault.contracts import TARGETS, Task
from kernelvault.corpus.dedup import Contamination, find_contaminated_tasks, find_duplicates, normalized_hash
from kernelvault.corpus.qa_release import (
    QAContamination,
    find_contaminated,
    load_qa_rows,
    mark_duplicate_questions,
    qa_sft_rows,
)
from kernelvault.corpus.qa_schema import QA_CONFIG
from kernelvault.corpus.schema import KERNEL_TO_KERNEL
from kernelvault.corpus.split import HELD_OUT_FRACTION, held_out_tasks
from kernelvault.corpus.stats import load_attempts
from kernelvault.toolchain.tasks import TaskFormatError, parse_task

ROWS_PER_FILE = 50_000
MESSAGE = pa.struct([("role", pa.string()), ("content", pa.string())])
# Reasoning where chat templates read it: in the message (null for a message without any).
SFT_MESSAGE = pa.struct([("role", pa.string()), ("content", pa.string()), ("reasoning_content", pa.string())])
SFT_SCHEMA = pa.schema([
    pa.field("messages", pa.list_(SFT_MESSAGE), nullable=False),
    pa.field("task_id", pa.string(), nullable=False),
    pa.field("task_name", pa.string(), nullable=False),
    pa.field("task_category", pa.string()),
    pa.field("target", pa.string(), nullable=False),
    pa.field("platform", pa.string(), nullable=False),
    pa.field("reward", pa.float64(), nullable=False),
    pa.field("speedup", pa.float64()),
    pa.field("model", pa.string()),
    pa.field("attempt_id", pa.string(), nullable=False),
    pa.field("kernel_to_kernel", pa.bool_()),  # an optimisation task's row (its prompt shows the baseline)
])  # fmt: skip
RL_SCHEMA = pa.schema([
    pa.field("prompt", pa.list_(MESSAGE), nullable=False),
    pa.field("task_id", pa.string(), nullable=False),
    pa.field("task_name", pa.string(), nullable=False),
    pa.field("task_category", pa.string()),
    pa.field("task_source", pa.string(), nullable=False),  # the reference: all the reward function needs
    pa.field("target", pa.string(), nullable=False),
    pa.field("attempts", pa.int64(), nullable=False),  # corpus statistics, for curricula and filtering
    pa.field("correct_rate", pa.float64(), nullable=False),
    pa.field("best_speedup", pa.float64()),
])  # fmt: skip
VERL_SCHEMA = pa.schema([
    pa.field("data_source", pa.string(), nullable=False),
    pa.field("prompt", pa.list_(MESSAGE), nullable=False),
    pa.field("ability", pa.string(), nullable=False),
    pa.field("reward_model", pa.struct([("style", pa.string()), ("ground_truth", pa.string())]), nullable=False),
    pa.field("extra_info", pa.struct([("index", pa.int64()), ("task_id", pa.string()), ("task_name", pa.string()),
                                      ("target", pa.string())]), nullable=False),  # fmt: skip
])  # fmt: skip


@dataclass
class ReleaseReport:
    rows: dict[str, int] = field(default_factory=dict)  # config -> rows written
    exact_duplicates: dict[str, int] = field(default_factory=dict)
    near_duplicates: dict[str, int] = field(default_factory=dict)
    contaminated: list[Contamination] = field(default_factory=list)
    dropped_rows: int = 0
    held_out_tasks: list[str] = field(default_factory=list)  # by name: sft's test split, rl's validation
    held_out_qa: int = 0  # QA entries in sft's test split
    qa_contaminated: list[QAContamination] = field(default_factory=list)

    def lines(self) -> list[str]:
        lines = [f"{config}: {count} rows" for config, count in sorted(self.rows.items())]
        for config in sorted(self.exact_duplicates):
            lines.append(f"{config}: {self.exact_duplicates[config]} exact and {self.near_duplicates[config]} "
                         "near duplicates marked (kept in their config, left out of sft)")  # fmt: skip
        for item in self.contaminated:
            lines.append(f"decontamination: dropped task {item.task_name} ({item.kind} match of {item.eval_task}, "
                         f"similarity {item.similarity:.2f})")  # fmt: skip
        if self.contaminated:
            lines.append(f"decontamination: {self.dropped_rows} rows dropped")
        for item in self.qa_contaminated:
            lines.append(f"decontamination: dropped QA entry {item.entry_id[:12]} on {item.topic} (matches the "
                         f"evaluation question {item.eval_question[:60]!r}, similarity {item.similarity:.2f})")  # fmt: skip
        if self.held_out_tasks:
            lines.append(f"held out of training (sft test split, rl and rl_verl validation split): "
                         f"{len(self.held_out_tasks)} task(s): {', '.join(self.held_out_tasks)}")  # fmt: skip
        if self.held_out_qa:
            lines.append(f"held out of training (sft test split): {self.held_out_qa} QA entries")
        return lines


def write_table(table: pa.Table, folder: Path, split: str = "train") -> list[Path]:
    """{split}-00000-of-0000N.parquet files, zstd, the naming `datasets` reads as that split."""
    folder.mkdir(parents=True, exist_ok=True)
    count = max(1, math.ceil(table.num_rows / ROWS_PER_FILE))
    paths = []
    for index in range(count):
        path = folder / f"{split}-{index:05d}-of-{count:05d}.parquet"
        pq.write_table(table.slice(index * ROWS_PER_FILE, ROWS_PER_FILE), path, compression="zstd")
        paths.append(path)
    return paths


def _tasks_of(table: pa.Table) -> list[Task]:
    seen: dict[str, Task] = {}
    for task_id, name, source, origin in zip(*(table.column(c).to_pylist() for c in
                                               ("task_id", "task_name", "task_source", "task_origin")), strict=True):  # fmt: skip
        if task_id in seen:
            continue
        try:
            seen[task_id] = parse_task(source, name, origin or "corpus")
        except TaskFormatError:
            continue  # a row whose task no longer parses cannot be compared; keep it
    return list(seen.values())


def mark_duplicates(table: pa.Table, threshold: float) -> tuple[pa.Table, int, int]:
    rows = table.select(["attempt_id", "task_id", "code"]).to_pydict()
    report = find_duplicates(
        zip(rows["attempt_id"], rows["task_id"], rows["code"], strict=True), threshold=threshold
    )
    duplicates = report.duplicate_of()
    norm = [normalized_hash(code) if code else None for code in rows["code"]]
    of = [duplicates[a].duplicate_of if a in duplicates else None for a in rows["attempt_id"]]
    kind = [duplicates[a].kind if a in duplicates else None for a in rows["attempt_id"]]
    for name, values in (("code_norm_hash", norm), ("duplicate_of", of), ("duplicate_kind", kind)):
        table = table.set_column(table.schema.get_field_index(name), name, pa.array(values, type=pa.string()))
    return table, report.exact, report.near


def sft_rows(table: pa.Table) -> list[dict[str, Any]]:
    """Chat samples from correct attempts that are not duplicates of an earlier one."""
    rows = []
    for row in table.to_pylist():
        if row["correct"] is not True or row["duplicate_of"] is not None or not row["code"]:
            continue
        if row["messages"]:
            messages = [
                {"role": m["role"], "content": m["content"] or "",
                 "reasoning_content": (m["reasoning_content"] or None) if m["role"] == "assistant" else None}
                for m in row["messages"]
            ]  # fmt: skip
        else:  # a candidate without a conversation (bundled examples, imported generations)
            # The agents' own opening, as the `rl` prompts have it, for the platform this row was verified on.
            try:
                opening = initial_messages(row["task_source"], row["target"], row["platform"])
            except UnsupportedPrompt:  # a pairing the agents never prompt for (HIP for a function task)
                continue
            messages = [
                *({**m, "reasoning_content": None} for m in opening),
                {"role": "assistant", "content": answer_from_code(row["code"]), "reasoning_content": None},
            ]
        rows.append({
            "messages": messages, "task_id": row["task_id"], "task_name": row["task_name"],
            "task_category": row["task_category"], "target": row["target"], "platform": row["platform"],
            "reward": row["reward"], "speedup": row["speedup"], "model": row["model"], "attempt_id": row["attempt_id"],
            "kernel_to_kernel": row["baseline_hash"] is not None,
        })  # fmt: skip
    return rows


def rl_rows(tables: dict[str, pa.Table]) -> list[dict[str, Any]]:
    """One prompt per (task, target) seen in the corpus, with the corpus's statistics for it.

    The prompt is the agents' opening (`initial_messages`) for the platform most of the task's attempts were
    verified on: its GPU family's system prompt, the few-shot exchange where the task has one, the task."""
    grouped: dict[tuple[str, str], list[dict[str, Any]]] = defaultdict(list)
    for table in tables.values():
        columns = [
            "task_id",
            "task_name",
            "task_category",
            "task_source",
            "target",
            "platform",
            "correct",
            "speedup",
        ]
        for row in table.select(columns).to_pylist():
            grouped[(row["task_id"], row["target"])].append(row)
    rows = []
    for (task_id, target), attempts in sorted(grouped.items()):
        first = attempts[0]
        platform = Counter(a["platform"] for a in attempts).most_common(1)[0][0]
        try:
            prompt = initial_messages(first["task_source"], target, platform)
        except UnsupportedPrompt:  # a pairing the agents never prompt for (HIP for a function task)
            continue
        speedups = [a["speedup"] for a in attempts if a["correct"] is True and a["speedup"] is not None]
        rows.append({
            "prompt": prompt,
            "task_id": task_id, "task_name": first["task_name"], "task_category": first["task_category"],
            "task_source": first["task_source"], "target": target, "attempts": len(attempts),
            "correct_rate": sum(a["correct"] is True for a in attempts) / len(attempts),
            "best_speedup": max(speedups) if speedups else None,
        })  # fmt: skip
    return rows


def verl_rows(rl: list[dict[str, Any]]) -> list[dict[str, Any]]:
    return [
        {
            "data_source": f"kernelvault/{row['target']}",
            "prompt": row["prompt"],
            "ability": "gpu-kernels",
            "reward_model": {"style": "rule", "ground_truth": row["task_source"]},
            "extra_info": {
                "index": index,
                "task_id": row["task_id"],
                "task_name": row["task_name"],
                "target": row["target"],
            },  # fmt: skip
        }
        for index, row in enumerate(rl)
    ]


def build_release(
    dataset_dir: Path,
    release_dir: Path,
    eval_tasks: Sequence[Task] = (),
    near_threshold: float = 0.85,
    contamination_threshold: float = 0.8,
    held_out_fraction: float = HELD_OUT_FRACTION,
    eval_questions: Sequence[str] = (),
    sft_qa: bool = True,
) -> ReleaseReport:
    """`held_out_fraction`: the share of tasks held out of training (`corpus.split`): their rows are `sft`'s test
    split, their prompts the `rl`/`rl_verl` validation split; QA entries are held out by the same rule, apart.
    `eval_questions`: QA questions of an evaluation set (the `qa` entries that match them are dropped);
    `sft_qa`: verified QA entries go into `sft` as chat turns."""
    report = ReleaseReport()
    tables: dict[str, pa.Table] = {}
    for target in TARGETS:
        folder = Path(dataset_dir) / "data" / target
        if folder.is_dir() and any(folder.glob("*.parquet")):
            tables[target] = load_attempts(folder)
    qa_folder = Path(dataset_dir) / "data" / QA_CONFIG
    qa = load_qa_rows(qa_folder) if qa_folder.is_dir() else None
    if not tables and (qa is None or not qa.num_rows):
        raise ValueError(f"no corpus shards under {dataset_dir}/data/{{{','.join((*TARGETS, QA_CONFIG))}}}")

    if eval_tasks:
        all_tasks = {task.task_id: task for table in tables.values() for task in _tasks_of(table)}
        contamination = find_contaminated_tasks(
            list(all_tasks.values()), list(eval_tasks), contamination_threshold
        )
        report.contaminated = list(contamination.contaminated)
        dropped = contamination.task_ids()
        for target, table in tables.items():
            keep = pa.array([task_id not in dropped for task_id in table.column("task_id").to_pylist()])
            report.dropped_rows += table.num_rows - pc.sum(keep.cast(pa.int64())).as_py()
            tables[target] = table.filter(keep)

    for target in list(tables):  # kernel-to-kernel rows (optimisation tasks) are configs of their own
        optimisation = pc.is_valid(tables[target].column("baseline_hash"))
        if pc.any(optimisation).as_py():
            tables[KERNEL_TO_KERNEL[target]] = tables[target].filter(optimisation)
            tables[target] = tables[target].filter(pc.invert(optimisation))
            if not tables[target].num_rows:
                del tables[target]
    sft: list[dict[str, Any]] = []
    # Kernel tasks and QA entries are held out apart, so that a small release holds out a task of each kind.
    held = held_out_tasks(
        {task_id for table in tables.values() for task_id in table.column("task_id").to_pylist()},
        held_out_fraction,
    )
    for target, table in tables.items():
        table, exact, near = mark_duplicates(table, near_threshold)
        tables[target] = table
        report.exact_duplicates[target], report.near_duplicates[target] = exact, near
        write_table(table, release_dir / target)
        report.rows[target] = table.num_rows
        sft += sft_rows(table)
    if qa is not None and qa.num_rows:
        report.qa_contaminated = find_contaminated(qa, list(eval_questions), contamination_threshold)
        dropped = {item.entry_id for item in report.qa_contaminated}
        qa = qa.filter(pa.array([entry not in dropped for entry in qa.column("entry_id").to_pylist()]))
        qa, report.near_duplicates[QA_CONFIG] = mark_duplicate_questions(qa, near_threshold)
        report.exact_duplicates[QA_CONFIG] = 0  # same question and answer: the same entry id, checked once
        write_table(qa, release_dir / QA_CONFIG)
        report.rows[QA_CONFIG] = qa.num_rows
        if sft_qa:
            qa_rows = qa_sft_rows(qa)
            held |= held_out_tasks({row["task_id"] for row in qa_rows}, held_out_fraction)
            sft += qa_rows
    rl = rl_rows(tables)
    verl = verl_rows(rl)
    for split, chosen in (("train", False), ("test", True)):
        part = [row for row in sft if (row["task_id"] in held) == chosen]
        if part or split == "train":
            write_table(pa.Table.from_pylist(part, schema=SFT_SCHEMA), release_dir / "sft", split)
    report.rows["sft"] = len(sft)
    for config, rows, schema in (("rl", rl, RL_SCHEMA), ("rl_verl", verl, VERL_SCHEMA)) if tables else ():
        for split, chosen in (("train", False), ("validation", True)):
            part = [
                row for row, source in zip(rows, rl, strict=True) if (source["task_id"] in held) == chosen
            ]
            if part or split == "train":
                write_table(pa.Table.from_pylist(part, schema=schema), release_dir / config, split)
        report.rows[config] = len(rows)
    report.held_out_tasks = sorted(
        {row["task_name"] for row in [*rl, *sft] if row["task_id"] in held and row["target"] != QA_CONFIG}
    )
    report.held_out_qa = sum(row["task_id"] in held for row in sft if row["target"] == QA_CONFIG)
    (release_dir / "release_report.json").write_text(json.dumps({
        "rows": report.rows, "exact_duplicates": report.exact_duplicates, "near_duplicates": report.near_duplicates,
        "contaminated": [vars(item) for item in report.contaminated], "dropped_rows": report.dropped_rows,
        "held_out_tasks": report.held_out_tasks, "held_out_qa": report.held_out_qa,
    }, indent=2))  # fmt: skip
    return report

"""Answers models have already written, as a candidate source (`kernelvault corpus --answers PATH`).

    JSONL file(s) ──read──► AnswerRecord per line ──match to a task──► Attempt (raw answer, model, sample)

Two line layouts, told apart per line:

- TritonBench (`LLM_generated/*.jsonl`): `instruction` (the prompt), `predict` (the raw answer), `label`.
  The model is the file's name (`output_gpt-4o_rag.jsonl` -> `gpt-4o_rag`). The task is found from the
  instruction: TritonBench-T names the function in `Wrapper Entry Information: NAME(`; otherwise a task
  whose name appears in it as `NAME.py`. A few TritonBench-T instructions name no function (their entry
  information starts `input (Tensor): ...`): those are matched as TritonBench's own evaluator matches every
  answer (`EVAL/eval_T/0_call_acc.py`, `get_corresponding_files`): the text between `Functional
  Description: ` and `Wrapper Entry Information:`, newlines removed, must occur in exactly one task's
  `description` in the suite's statistics file, the JSON array beside the task folder
  (`data/TritonBench_T_v1.json`, which the evaluator reads; the checkout ships it as `.jsonl`, one JSON
  array all the same), whose `file` names the task. TritonBench-G's instructions name neither function nor
  file: its evaluator (`EVAL/eval_G/0_call_acc.py`, `get_file_order`) finds the task whose `output` (the gold
  operator) in `data/TritonBench_G_v1.json` contains the answer line's `label`; so does this, where exactly
  one task's does.
- Plain: `task` (a task name), `model`, `answer`, optional `sample` (an int).

The candidate's text is the raw answer: the verifier's parse stage extracts the code, as for an agent's
turn. Several answers to one task are a group of samples, numbered 0, 1, ... per task in file then line
order, so a resumed run sees the same attempt keys. What this does NOT do: judge whether an answer was
written for this suite's version of a task (a TritonBench answer matched by its entry name is verified
against whatever reference the loaded task has), or verify the `label` (the reference solution): it is read
only to find a TritonBench-G answer's task.

Input is untrusted: a line that is not JSON, lacks a field or matches no task is not an error; it is
listed in `skipped` as (`file:line`, reason) and the rest is read.
"""

from __future__ import annotations

import hashlib
import json
import re
from collections.abc import Iterator, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from kernelvault.contracts import Candidate, Task
from kernelvault.pipelines.candidates import Attempt

# `Wrapper Entry Information: div(input, ...` or `... : def std(input, ...`; a dotted name keeps its last part.
_ENTRY = re.compile(r"Wrapper Entry Information:\s*(?:def\s+)?`?([A-Za-z_][\w.]*)`?\s*\(")
_FILE_NAME = re.compile(r"([A-Za-z_][\w-]*)\.py\b")


@dataclass(frozen=True)
class AnswerRecord:
    """One answer as read, before it is matched to a task."""

    where: str  # file:line
    model: str
    answer: str
    task_name: str | None = None  # plain layout
    instruction: str | None = None  # TritonBench layout
    sample: int | None = None
    label: str | None = None  # TritonBench layout: the gold code, which finds a TritonBench-G task


def model_of_file(path: Path) -> str:
    """TritonBench names its answer files after the model: `output_gpt-4o.jsonl` -> `gpt-4o`."""
    name = path.name.removesuffix(".jsonl")
    return name.removeprefix("output_") or name


def _record(data: Any, where: str, file_model: str) -> AnswerRecord | str:
    """The answer on one parsed line, or why it has none."""
    if not isinstance(data, dict):
        return f"a JSON {type(data).__name__}, not an object"
    if "predict" in data or "instruction" in data:
        instruction, predict = data.get("instruction"), data.get("predict")
        if not isinstance(instruction, str) or not isinstance(predict, str):
            return "TritonBench layout needs string fields 'instruction' and 'predict'"
        label = data.get("label") if isinstance(data.get("label"), str) else None
        return AnswerRecord(where, file_model, predict, instruction=instruction, label=label)
    task, model, answer, sample = data.get("task"), data.get("model"), data.get("answer"), data.get("sample")
    if not all(isinstance(value, str) and value for value in (task, model)) or not isinstance(answer, str):
        return "plain layout needs string fields 'task', 'model' and 'answer' (or TritonBench's 'instruction', 'predict')"
    if sample is not None and (isinstance(sample, bool) or not isinstance(sample, int) or sample < 0):
        return f"'sample' must be a non-negative integer, not {sample!r}"
    return AnswerRecord(where, model, answer, task_name=task, sample=sample)  # type: ignore[arg-type]


@dataclass(frozen=True)
class AnswerFiles:
    records: list[AnswerRecord]
    skipped: list[tuple[str, str]]  # (file:line, reason) for lines that hold no usable answer
    files: int
    digest: str  # sha256 over the files' relative names and bytes


def read_answers(path: Path) -> AnswerFiles:
    """Every answer in a JSONL file or a folder of them (recursively, sorted by path). A missing path or a
    folder without JSONL files is a ValueError: that is the user's mistake, not the data's."""
    if path.is_dir():
        files = sorted(path.rglob("*.jsonl"))
        if not files:
            raise ValueError(f"no *.jsonl files under {path}")
    elif path.is_file():
        files = [path]
    else:
        raise ValueError(f"answers not found: {path}")
    records: list[AnswerRecord] = []
    skipped: list[tuple[str, str]] = []
    digest = hashlib.sha256()
    for file in files:
        name = file.relative_to(path).as_posix() if path.is_dir() else file.name
        try:
            raw = file.read_bytes()
        except OSError as error:
            skipped.append((name, f"cannot read: {error.strerror or error}"))
            continue
        digest.update(f"{name}\0{len(raw)}\0".encode())
        digest.update(raw)
        # A bad byte spoils one line, not the file: it becomes U+FFFD and that line fails to match or parse.
        for number, line in enumerate(raw.decode("utf-8", errors="replace").splitlines(), start=1):
            if not line.strip():
                continue
            where = f"{name}:{number}"
            try:
                data = json.loads(line)
            except json.JSONDecodeError as error:
                skipped.append((where, f"not JSON ({error.msg})"))
                continue
            result = _record(data, where, model_of_file(file))
            if isinstance(result, str):
                skipped.append((where, result))
            else:
                records.append(result)
    return AnswerFiles(records, skipped, len(files), digest.hexdigest())


def functional_description(instruction: str) -> str:
    """TritonBench's key for an instruction: its functional description, newlines removed ('' if none)."""
    if "Functional Description: " not in instruction or "Wrapper Entry Information:" not in instruction:
        return ""
    text = instruction.split("Functional Description: ")[-1].split("Wrapper Entry Information:")[0]
    return text.replace("\n", "")


def task_statistics(tasks: Sequence[Task], field: str) -> list[tuple[str, Task | str]]:
    """(text, task) from the statistics file beside each task folder (`FOLDER.json` or `.jsonl`, a JSON array
    of objects with `file` and `field`: `description` for TritonBench-T, `output` for -G); newlines removed
    from a description. An item whose file is not a loaded task (refused by the loader) gives the file's
    name instead of a task, so that an answer matched to it says so. Empty where there is no such file."""
    folders: dict[Path, dict[str, Task]] = {}
    for task in tasks:
        if task.origin.startswith("folder:"):
            folders.setdefault(Path(task.origin.removeprefix("folder:")), {})[task.name] = task
    found: list[tuple[str, Task | str]] = []
    for folder, by_name in folders.items():
        for path in (folder.with_name(folder.name + ".json"), folder.with_name(folder.name + ".jsonl")):
            try:
                items = json.loads(path.read_text(encoding="utf-8"))
            except (OSError, ValueError):
                continue
            for item in items if isinstance(items, list) else ():
                if not isinstance(item, dict):
                    continue
                file, text = item.get("file"), item.get(field)
                if not isinstance(file, str) or not isinstance(text, str):
                    continue
                task = by_name.get(file.removesuffix(".py"), file)
                found.append((text.replace("\n", "") if field == "description" else text, task))
            break
    return found


def _matches(statistics: list[tuple[str, Task | str]], key: str) -> list[Task | str]:
    """The tasks (or names of files that did not load) whose text contains `key`, each once."""
    found: dict[str, Task | str] = {}
    for text, task in statistics:
        if key in text:
            found.setdefault(task.task_id if isinstance(task, Task) else task, task)
    return list(found.values())


def _one_match(found: list[Task | str], what: str) -> Task | str:
    names = [task.name if isinstance(task, Task) else task for task in found]
    if len(found) > 1:
        return f"{what} occurs in {len(found)} tasks' statistics ({', '.join(names[:3])})"
    if not found:
        return f"{what} occurs in no task's statistics"
    if isinstance(found[0], str):
        return f"{what} belongs to {found[0]}, which is not a loaded task (see the loader's refusals)"
    return found[0]


class _TaskIndex:
    """Task lookup by full name, by the last part of a path-like name, by function entry name, and by
    TritonBench's functional description.

    A name two tasks share (`level1/relu`, `level2/relu` by their last part) matches neither: picking one
    would verify answers against a reference they were not written for."""

    def __init__(self, tasks: Sequence[Task]) -> None:
        self.by_name: dict[str, list[Task]] = {}
        self.by_short: dict[str, list[Task]] = {}
        self.by_entry: dict[str, list[Task]] = {}
        for task in tasks:
            self.by_name.setdefault(task.name, []).append(task)
            self.by_short.setdefault(task.name.rsplit("/", 1)[-1], []).append(task)
            entry = getattr(task, "entry", None)  # function tasks name their entry point
            if entry:
                self.by_entry.setdefault(entry, []).append(task)
        self.descriptions = task_statistics(tasks, "description")
        self.outputs = task_statistics(tasks, "output")

    def by_description(self, instruction: str) -> Task | str | None:
        """The one task whose description holds the instruction's functional description (TritonBench's rule)."""
        key = functional_description(instruction)
        if not key.strip() or not self.descriptions:
            return None
        return _one_match(_matches(self.descriptions, key), "its functional description")

    def _one(self, table: dict[str, list[Task]], key: str) -> Task | str | None:
        found = table.get(key, [])
        if len(found) > 1:
            return f"{key!r} names {len(found)} tasks ({', '.join(task.name for task in found[:3])})"
        return found[0] if found else None

    def by_task_name(self, name: str) -> Task | str | None:
        """The task called `name` (full name first, then last part), a reason it is ambiguous, or None."""
        return self._one(self.by_name, name) or self._one(self.by_short, name.rsplit("/", 1)[-1])

    def by_label(self, label: str) -> Task | str | None:
        """The one task whose gold operator contains the answer's label (TritonBench-G's rule)."""
        key = label.replace("<|im_end|>", "").replace("<|EOT|>", "")
        if not key.strip() or not self.outputs:
            return None
        return _one_match(_matches(self.outputs, key), "its label")

    def by_instruction(self, instruction: str, label: str | None = None) -> Task | str | None:
        """Entry name, then functional description, then label; the reasons of those that were tried."""
        reasons = []
        for lookup in (
            lambda: self._by_entry_name(instruction),
            lambda: self.by_description(instruction),
            lambda: self.by_label(label or ""),
        ):
            found = lookup()
            if isinstance(found, Task):
                return found
            if found:
                reasons.append(found)
        return ", and ".join(reasons) or None

    def _by_entry_name(self, instruction: str) -> Task | str | None:
        entry = _ENTRY.search(instruction)
        if entry:
            name = entry.group(1)
            for key in dict.fromkeys((name, name.rsplit(".", 1)[-1])):
                found = self._one(self.by_entry, key) or self.by_task_name(key)
                if found is not None:
                    return found
            return f"no task for entry {name!r}"
        for file_name in _FILE_NAME.findall(instruction):  # TritonBench-G: a task named after its file
            found = self._one(self.by_short, file_name)
            if found is not None:
                return found
        return None


class AnswerCandidates:
    """Existing model answers from JSONL, matched to the loaded tasks (see the module docstring)."""

    def __init__(self, path: Path, target: str) -> None:
        self.path = Path(path)
        self.target = target
        self._read = read_answers(self.path)
        self.records = self._read.records
        self.files = self._read.files
        # Lines not read plus, after `attempts`, answers that matched no task.
        self.skipped: list[tuple[str, str]] = list(self._read.skipped)

    @property
    def description(self) -> str:
        models = len({record.model for record in self.records})
        return (
            f"{self.files} answer file(s), {len(self.records)} answers of {models} model(s) from {self.path}"
        )

    def identity(self) -> dict[str, Any]:
        return {"kind": "answers", "target": self.target, "files": self.files, "content": self._read.digest}

    def attempts(self, tasks: Sequence[Task]) -> Iterator[Attempt]:
        index = _TaskIndex(tasks)
        self.skipped = list(self._read.skipped)  # each pass lists its own unmatched answers once
        taken: dict[str, set[int]] = {}  # task_id -> sample indices given out
        next_free: dict[str, int] = {}
        for record in self.records:
            if record.task_name is not None:
                found = index.by_task_name(record.task_name)
                missing = f"no task named {record.task_name!r}"
            else:
                found = index.by_instruction(record.instruction or "", record.label)
                missing = (
                    "no task named in the instruction (Wrapper Entry Information: NAME(, NAME.py), and no "
                    "statistics file beside the task folder to match its description or label"
                )
            if not isinstance(found, Task):
                self.skipped.append((record.where, found or missing))
                continue
            used = taken.setdefault(found.task_id, set())
            # (task, sample_index) is the attempt's key: a given sample is kept unless taken, else the next free.
            sample = record.sample
            if sample is None or sample in used:
                sample = next_free.get(found.task_id, 0)
                while sample in used:
                    sample += 1
                next_free[found.task_id] = sample + 1
            used.add(sample)
            candidate = Candidate(found.task_id, self.target, record.answer, f"model:{record.model}")  # type: ignore[arg-type]
            # TritonBench's answers come with the prompt they answered: the conversation is kept as written
            conversation = (
                (("user", record.instruction), ("assistant", record.answer)) if record.instruction else ()
            )
            yield Attempt(
                found, candidate, sample_index=sample, turn=0, model=record.model, messages=conversation
            )

"""Candidate sources: where the main job gets the kernels it verifies.

A source turns the task list into `Attempt`s (task, candidate, sample index, turn, model). Here,
`ExampleCandidates` serves the bundled examples; `kernelvault.pipelines.answers.AnswerCandidates` serves answers models
have already written (JSONL); the pipeline does not change with the source.

Bundled examples live in `examples/<target>/`: `<task_name>.py` is an honest kernel for that task;
`broken/<failure_kind>__<task_name>.py` (or `.md` for a model answer) is deliberately broken in the
way its name says, so every failure kind the toolchain reports is exercised end to end.
"""

from __future__ import annotations

import importlib.resources
import re
from collections.abc import Iterator, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any, Protocol

from kernelvault.contracts import FAILURE_KINDS, Candidate, Task, content_hash

BUNDLED_EXAMPLES = Path(str(importlib.resources.files("kernelvault.examples")))  # package data


@dataclass(frozen=True)
class Attempt:
    task: Task
    candidate: Candidate
    sample_index: int = 0
    turn: int = 0
    model: str | None = None  # who wrote the candidate (an answers file's model); None: a bundled example
    # the conversation that produced it, where known (an answers file's prompt and answer): the row keeps
    # it, and a release's `sft` config trains on it instead of a prompt rebuilt from the task
    messages: tuple[tuple[str, str], ...] = ()


class CandidateSource(Protocol):
    description: str

    def attempts(self, tasks: Sequence[Task]) -> Iterator[Attempt]: ...

    def identity(self) -> dict[str, Any]:
        """What makes this source's attempts what they are (hashed into the run ledger's configuration)."""
        ...


# Failures that only show when the kernel runs: a platform that compiles without running (HIP on cpu)
# cannot observe them, so an example labelled with one of them is expected to compile there.
RUN_TIME_KINDS = frozenset({"interface_error", "runtime_error", "timeout", "mismatch", "integrity_reject"})


def expected_outcome(candidate: Candidate, platform: str, correct: bool | None) -> str | None:
    """The failure kind an example should get on `platform` (None: success).

    The file name's kind is the verdict on a GPU. An example that fails differently elsewhere says so
    with a line `expect-<platform>: <kind|success>` (an AMD-only kernel compiles for gfx90a but not with
    nvcc: `expect-cpu: success`, `expect-cuda: compile_error`).
    """
    match = re.search(rf"\bexpect-{platform}:\s*(\w+)", candidate.text)
    if match:
        return None if match.group(1) == "success" else match.group(1)
    if correct is None and candidate.expected_failure in RUN_TIME_KINDS:
        return None
    return candidate.expected_failure


def expected_options(path: Path, platform: str = "cpu", behind_wall: bool = False) -> list[str]:
    """An adversarial file's accepted outcomes, split at `|`: its `# expect:` line (every layer on), or
    where the file has one, `# expect-<platform>:`; with `behind_wall`, its `# behind-wall:` line
    (`# behind-wall-<platform>:`), the outcome with the static wall switched off, which names the layer
    behind it. A file without a behind-wall line expects the same either way."""
    header: dict[str, str] = {}
    for line in path.read_text().splitlines()[:12]:
        if line.startswith("# ") and ":" in line:
            key, value = line[2:].split(":", 1)
            header.setdefault(key.strip(), value.strip())
    keys = ["expect", f"expect-{platform}"]
    if behind_wall:
        keys += ["behind-wall", f"behind-wall-{platform}"]
    chosen = [header[key] for key in keys if key in header]
    if not chosen:
        raise ValueError(f"{path} has no '# expect:' line")
    return [option.strip() for option in chosen[-1].split("|")]


def outcome(failure_kind: str | None, failure_message: str | None) -> str:
    """A verdict as `expected_options` names it: `correct`, a failure kind, or `integrity_reject:SUB_REASON`
    (the sub-reason leads the failure message), or `static_reject:RULE` (the static wall's rule)."""
    message = failure_message or ""
    if failure_kind == "integrity_reject":
        return "integrity_reject:" + message.split(":", 1)[0]
    if failure_kind == "static_reject" and message.startswith("forbidden: "):
        return "static_reject:" + message[len("forbidden: ") :].split(":", 1)[0]
    return failure_kind or "correct"


def outcome_matches(got: str, options: list[str]) -> bool:
    """`got` (an `outcome`) is one of `options`; an option without a sub-reason accepts any."""
    return any(got == option or (":" not in option and got.split(":", 1)[0] == option) for option in options)


class ExampleCandidates:
    """The bundled example kernels, matched to tasks by file name."""

    def __init__(self, target: str, folder: Path | None = None) -> None:
        self.target = target
        self.folder = (folder or BUNDLED_EXAMPLES) / target

    @property
    def description(self) -> str:
        return f"bundled example candidates from {self.folder}"

    def _files(self) -> list[tuple[str, Path, str | None]]:
        """(task name, path, expected failure kind) for every example file."""
        files: list[tuple[str, Path, str | None]] = []
        for path in sorted(self.folder.glob("*.py")):
            files.append((path.stem, path, None))
        for path in sorted((self.folder / "broken").glob("*")):
            kind, separator, task_name = path.stem.partition("__")
            if separator and kind in FAILURE_KINDS and path.suffix in (".py", ".md"):
                files.append((task_name, path, kind))
        return files

    def identity(self) -> dict[str, Any]:
        files = self._files()
        digest = content_hash(
            "".join(f"{path.name}:{content_hash(path.read_text())}" for _, path, _ in files)
        )
        return {"kind": "examples", "target": self.target, "files": len(files), "content": digest}

    def attempts(self, tasks: Sequence[Task]) -> Iterator[Attempt]:
        """Each example for the task of its name, and for every optimisation task of that reference with a
        baseline in this target (`relu__uncoalesced` gets the `relu` examples: with no model, the bundled
        optimised kernels are the optimisation suite's candidates)."""
        by_name: dict[str, list[Task]] = {}
        for task in tasks:
            reference = task.name.split("__", 1)[0] if task.baseline(self.target) is not None else task.name
            by_name.setdefault(reference, []).append(task)
        samples: dict[str, int] = {}
        for task_name, path, expected in self._files():
            matching = by_name.get(task_name, [])
            text = path.read_text(encoding="utf-8") if matching else ""  # once, however many tasks take it
            for task in matching:
                index = samples.get(task.name, 0)
                samples[task.name] = index + 1
                candidate = Candidate(
                    task_id=task.task_id,
                    target=self.target,  # type: ignore[arg-type]
                    text=text,
                    origin=f"example:{path.relative_to(self.folder.parent)}",
                    expected_failure=expected,
                )
                yield Attempt(task, candidate, sample_index=index)

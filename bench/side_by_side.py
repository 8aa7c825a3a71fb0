"""TritonBench's evaluator and KernelVault on the same answers: a table per model and every disagreement
classified (issue #19, part 4).

Inputs: the lines `bench/tritonbench_eval.py` wrote (TritonBench's call / exe, and the seeded results
comparison), the corpus folder `kernelvault corpus --answers` wrote over the same answer files, and those
files (an answer is joined by its model and the hash of its raw text, so that the two tools' different ways
of finding the task do not hide a disagreement: where they found different tasks, that is its own class).

    python bench/side_by_side.py --tritonbench tb.jsonl --kernelvault KV_DIR \
        --answers TritonBench/LLM_generated/Bench_T_general_purpose > side_by_side.md
"""

from __future__ import annotations

import argparse
import hashlib
import json
import math
import re
import sqlite3
import sys
from collections import Counter, defaultdict
from collections.abc import Iterable
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))

from kernelvault.corpus.stats import load_attempts  # noqa: E402


def answer_key(model: str, text: str) -> tuple[str, str]:
    return model, hashlib.sha256(text.encode()).hexdigest()


@dataclass
class Joined:
    model: str
    where: str  # file:line
    tb: dict[str, Any] | None = None
    kv: dict[str, Any] | None = None
    classes: list[str] = field(default_factory=list)
    kv_refused_task: str | None = None  # KernelVault refused the answer's task as a whole: why


def refused_tasks(kernelvault: Path) -> dict[str, str]:
    """The tasks the corpus job refused as a whole (their reference cannot be judged), from its ledger: task
    name -> the reason. An answer to one of them has no row by design, not because a chunk has not reached it."""
    ledger = kernelvault / "ledger.sqlite"
    if not ledger.is_file():
        return {}
    with sqlite3.connect(f"file:{ledger}?mode=ro", uri=True) as connection:
        rows = connection.execute(
            "SELECT task_name, message FROM attempts WHERE status = 'failed' AND failure_kind = 'infrastructure_error'"
        ).fetchall()
    return {str(name): str(message or "").splitlines()[0][:100] for name, message in rows}


def _first_error(text: str) -> str:
    """The last line of a traceback that names an exception, numbers folded."""
    lines = [line.strip() for line in (text or "").splitlines() if line.strip()]
    named = [line for line in lines if re.match(r"^[A-Za-z_.]*(Error|Exception|Interrupt)\b", line)]
    line = (named or lines or ["(no output)"])[-1]
    return re.sub(r"\d+", "N", line)[:100].replace("|", "/")


def classify(item: Joined) -> str | None:
    """The disagreement class of one answer, or None where the two agree (both credit or both refuse)."""
    tb, kv = item.tb, item.kv
    if tb is None or tb.get("task") is None:
        return "TritonBench cannot place the answer (its description match fails)" if kv else None
    if kv is None:
        if not tb["call"]:
            return None
        if item.kv_refused_task is not None:
            return "TritonBench credits it, KernelVault has no row: the task's reference cannot be judged"
        return "KernelVault has no row (not verified yet, or its task not matched)"
    if kv["task_name"] != tb["task"].removesuffix(".py"):
        return f"the two tools matched different tasks ({tb['task']} / {kv['task_name']})"
    tb_credit, kv_credit = bool(tb["call"]), bool(kv["correct"])
    if tb_credit and not kv_credit:
        kind, message = kv["failure_kind"] or "not run", kv["failure_message"] or ""
        if kind == "integrity_reject" and message.startswith("torch_compute"):
            return (
                "TritonBench credits it, KernelVault: torch_compute (the wrapper calls PyTorch for the work)"
            )
        if kind == "integrity_reject":
            return f"TritonBench credits it, KernelVault: integrity_reject {message.split(':', 1)[0]}"
        if kind == "mismatch":
            if tb.get("results"):
                # The test's own return values agree with gold: the difference is in what they do not show
                # (an argument the answer changes and the reference does not, the perf inputs' larger case).
                return "TritonBench credits it, KernelVault: mismatch the test's return values do not show"
            return (
                "TritonBench credits it, KernelVault: mismatch, and its own test's results differ from gold"
            )
        if "the earlier checks passed" in message:  # `kernelvault.toolchain.judge._name_the_later_case`
            return (
                f"TritonBench credits it, KernelVault: {kind} on a later case only (the perf inputs: larger, "
                "another dtype), which TritonBench's test never runs"
            )
        return f"TritonBench credits it, KernelVault: {kind}"
    if kv_credit and not tb_credit:
        return f"KernelVault credits it, TritonBench's run fails: {_first_error(tb.get('stderr_tail', ''))}"
    return None


def load_joined(tritonbench: Path, kernelvault: Path, answers: Path) -> list[Joined]:
    files = sorted(answers.glob("*.jsonl")) if answers.is_dir() else [answers]
    texts: dict[tuple[str, int], tuple[str, str]] = {}  # (file, line) -> (model, raw answer)
    for path in files:
        model = path.stem.removeprefix("output_")
        for number, line in enumerate(path.read_text(encoding="utf-8").splitlines()):
            if line.strip():
                texts[(path.name, number)] = (model, json.loads(line).get("predict", ""))
    kv_rows: dict[tuple[str, str], list[dict[str, Any]]] = defaultdict(list)
    for row in load_attempts(kernelvault).to_pylist():
        if row.get("model") and row.get("answer") is not None:
            kv_rows[answer_key(row["model"], row["answer"])].append(row)
    joined = []
    refused = refused_tasks(kernelvault)
    tb_rows = [json.loads(line) for line in tritonbench.read_text().splitlines() if line.strip()]
    for tb in tb_rows:
        model, text = texts[(tb["file"], tb["line"])]
        item = Joined(model, f"{tb['file']}:{tb['line'] + 1}", tb=tb)
        candidates = kv_rows.get(answer_key(model, text), [])
        task = (tb.get("task") or "").removesuffix(".py")
        item.kv = next(
            (row for row in candidates if row["task_name"] == task), candidates[0] if candidates else None
        )
        item.kv_refused_task = refused.get(task) if item.kv is None else None
        joined.append(item)
    return joined


def _percent(part: int, whole: int) -> str:
    return f"{100 * part / whole:.1f}" if whole else "-"


def model_table(joined: list[Joined]) -> list[str]:
    by_model: dict[str, list[Joined]] = defaultdict(list)
    for item in joined:
        by_model[item.model].append(item)
    lines = [
        "| model | answers | TB call % | TB exe % | TB results % (ours) | KV rows | KV compiled % | KV correct % "
        "| KV fast_1 % | KV mean speedup |",
        "|---|---|---|---|---|---|---|---|---|---|",
    ]
    for model in sorted(by_model):
        items = by_model[model]
        n = len(items)
        tb = [item.tb or {} for item in items]
        kv = [item.kv for item in items if item.kv is not None]
        speedups = [row["speedup"] for row in kv if row["correct"] and row.get("speedup")]
        mean = f"{math.exp(sum(map(math.log, speedups)) / len(speedups)):.2f}" if speedups else "-"
        lines.append(
            f"| {model} | {n} | {_percent(sum(bool(r.get('call')) for r in tb), n)} "
            f"| {_percent(sum(bool(r.get('exe')) for r in tb), n)} | {_percent(sum(bool(r.get('results')) for r in tb), n)} "
            f"| {len(kv)} | {_percent(sum(bool(r['compiled']) for r in kv), n)} | {_percent(sum(bool(r['correct']) for r in kv), n)} "
            f"| {_percent(sum(bool(r['correct']) and (r.get('speedup') or 0) > 1 for r in kv), n)} | {mean} |"
        )  # fmt: skip
    return lines


def disagreement_table(joined: list[Joined]) -> list[str]:
    classes: dict[str, list[Joined]] = defaultdict(list)
    for item in joined:
        label = classify(item)
        if label is not None:
            classes[label].append(item)
    agree = Counter(
        "both credit" if item.tb and item.kv and item.tb["call"] and item.kv["correct"] else "both refuse"
        for item in joined
        if classify(item) is None
    )
    lines = [
        f"Agreement: {agree['both credit']} answers both credit, {agree['both refuse']} both refuse; "
        f"{sum(map(len, classes.values()))} disagree.",
        "",
        "| answers | class | e.g. (answer, task, KernelVault's message) |",
        "|---|---|---|",
    ]
    for label, items in sorted(classes.items(), key=lambda pair: -len(pair[1])):
        example = items[0]
        message = ((example.kv or {}).get("failure_message") or "").splitlines()
        detail = re.sub(r"\s+", " ", message[0] if message else "")[:120].replace("|", "/")
        task = (example.kv or {}).get("task_name") or (example.tb or {}).get("task")
        lines.append(f"| {len(items)} | {label} | {example.where}, {task}: {detail} |")
    return lines


def report(joined: Iterable[Joined]) -> str:
    items = list(joined)
    return "\n".join(
        ["## Per model", "", *model_table(items), "", "## Disagreements", "", *disagreement_table(items), ""]
    )


def main() -> int:
    parser = argparse.ArgumentParser(
        description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter
    )
    parser.add_argument("--tritonbench", type=Path, required=True, help="bench/tritonbench_eval.py's output")
    parser.add_argument(
        "--kernelvault", type=Path, required=True, help="the corpus folder over the same answers"
    )
    parser.add_argument("--answers", type=Path, required=True, help="the answer file or folder both read")
    parser.add_argument(
        "--reached-by-both", action="store_true",
        help="only the answers both tools have verified (a row, or a task KernelVault refused as a whole in a "
        "model's file it has started on): "
        "the tables of a side-by-side still in chunks",
    )  # fmt: skip
    args = parser.parse_args()
    joined = load_joined(args.tritonbench, args.kernelvault, args.answers)
    if args.reached_by_both:
        # an answer to a refused task counts as reached once KernelVault has started on its model's file
        started = {item.model for item in joined if item.kv is not None}
        reached = [item for item in joined
                   if item.kv is not None or (item.kv_refused_task is not None and item.model in started)]  # fmt: skip
        waiting = len(joined) - len(reached)
        joined = reached
        print(f"{len(joined)} answers verified by both tools; {waiting} verified by TritonBench's evaluator "
              "only so far (left out below)\n")  # fmt: skip
    print(report(joined))
    return 0


if __name__ == "__main__":
    sys.exit(main())

"""What real models' answers got: per-model verdicts, failure classes and the integrity rejects to read.

Reads a corpus folder written by `kernelvault corpus --answers ...` (rows carry the model) and prints
Markdown: one table of verdicts per model, the most common failure messages per kind (numbers folded, so
answers failing the same way count together, with one task as an example), and every integrity reject
with its task, model and message, for a person to read and judge (a refusal that is wrong is a bug).

    python bench/answers_report.py OUT_DIR [--target triton] [--rejects] > report.md
"""

from __future__ import annotations

import argparse
import re
import sys
from collections import Counter, defaultdict
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))

from kernelvault.corpus.stats import load_attempts  # noqa: E402

KINDS = ("correct", "parse_error", "static_reject", "compile_error", "interface_error", "runtime_error",
         "timeout", "mismatch", "integrity_reject")  # fmt: skip


def _kind(row: dict) -> str:
    return "correct" if row["correct"] else (row["failure_kind"] or "compiled, not run")


def _folded(message: str | None, width: int = 110) -> str:
    """A failure message with numbers folded to N and the first line only: a class of failures."""
    first = (message or "").strip().splitlines()[0] if (message or "").strip() else ""
    return re.sub(r"\d+", "N", first)[:width].replace("|", "/")


def verdict_table(rows: list[dict]) -> list[str]:
    by_model: dict[str, Counter[str]] = defaultdict(Counter)
    for row in rows:
        by_model[row["model"] or "examples"][_kind(row)] += 1
    kinds = [kind for kind in KINDS if any(kind in counts for counts in by_model.values())]
    kinds += sorted({kind for counts in by_model.values() for kind in counts} - set(kinds))
    lines = ["| model | answers | " + " | ".join(kinds) + " | correct % |", "|---" * (len(kinds) + 3) + "|"]
    for model in sorted(by_model):
        counts = by_model[model]
        total = sum(counts.values())
        cells = " | ".join(str(counts.get(kind, 0)) for kind in kinds)
        lines.append(f"| {model} | {total} | {cells} | {100 * counts.get('correct', 0) / total:.1f} |")
    return lines


def failure_classes(rows: list[dict], top: int) -> list[str]:
    classes: Counter[tuple[str, str]] = Counter()
    example: dict[tuple[str, str], str] = {}
    for row in rows:
        if row["failure_kind"]:
            key = (row["failure_kind"], _folded(row["failure_message"]))
            classes[key] += 1
            example.setdefault(key, row["task_name"])
    lines = ["| answers | kind | message (numbers folded) | e.g. task |", "|---|---|---|---|"]
    lines += [f"| {count} | {kind} | {message} | {example[(kind, message)]} |"
              for (kind, message), count in classes.most_common(top)]  # fmt: skip
    return lines


def integrity_rejects(rows: list[dict]) -> list[str]:
    lines = ["| task | model | message |", "|---|---|---|"]
    for row in sorted(rows, key=lambda r: (r["task_name"], r["model"] or "")):
        if row["failure_kind"] == "integrity_reject":
            lines.append(f"| {row['task_name']} | {row['model']} | {_folded(row['failure_message'], 160)} |")
    return lines


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("out_dir", help="a corpus folder (data/<target>/*.parquet)")
    parser.add_argument("--target", default="triton")
    parser.add_argument("--top", type=int, default=30, help="failure classes to list (default 30)")
    parser.add_argument("--rejects", action="store_true", help="list every integrity reject")
    args = parser.parse_args()
    rows = load_attempts(Path(args.out_dir) / "data" / args.target).to_pylist()
    if not rows:
        print(f"no rows under {args.out_dir}/data/{args.target}", file=sys.stderr)
        return 1
    print(f"## Verdicts per model ({len(rows)} answers, {len({r['task_id'] for r in rows})} tasks)\n")
    print("\n".join(verdict_table(rows)))
    print(f"\n## The {args.top} most common failure classes\n")
    print("\n".join(failure_classes(rows, args.top)))
    if args.rejects:
        print("\n## Every integrity reject\n")
        print("\n".join(integrity_rejects(rows)))
    return 0


if __name__ == "__main__":
    raise SystemExit(main())

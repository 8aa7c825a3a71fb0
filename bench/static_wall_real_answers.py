"""The static wall against real model answers: how many it refuses, and by which rule.

    python bench/static_wall_real_answers.py /path/to/TritonBench/LLM_generated [--out TABLE.md]

TritonBench (thunlp/TritonBench, Apache-2.0; fetch it yourself: nothing of it is committed here) ships the
answers of GPT-4o, Claude 3.5 Sonnet, o1, DeepSeek-R1, Qwen2.5-72B and coder models as JSONL files with a
`predict` field. Each answer's code (the same extraction the verifier uses) is run through
`kernelvault.toolchain.static_wall.check_candidate` (target triton, as the verifier runs it); the table counts answers that pass and, for the others, the first
rule each breaks. These answers are not in ModelNew form (that is the TritonBench issue's work), so this
measures the wall alone: a refused answer here is either a false reject of an honest kernel or a refusal by
design (a module that is not installed, NumPy, Inductor, Triton's internals); the second table says which.
"""

from __future__ import annotations

import argparse
import collections
import json
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))

from kernelvault.toolchain.extract import extract_code  # noqa: E402
from kernelvault.toolchain.static_wall import check_candidate  # noqa: E402


def _bundled_honest(reasons: collections.Counter[str]) -> collections.Counter[str]:
    """The same count over every honest kernel this repository ships (each must pass: tests/test_static_wall.py)."""
    counts: collections.Counter[str] = collections.Counter()
    files = [(path, "triton") for path in sorted((ROOT / "examples" / "triton").glob("*.py"))]
    files += [
        (path, "hip")
        for path in sorted((ROOT / "examples" / "hip").rglob("*.py"))
        if "broken" not in path.parts
    ]
    files += [(path, "triton") for path in sorted((ROOT / "tests" / "adversarial" / "honest").glob("*.py"))]
    for path, target in files:
        counts["answers"] += 1
        finding = check_candidate(path.read_text(encoding="utf-8"), target)
        if finding is None:
            counts["pass"] += 1
        else:
            counts[finding.rule] += 1
            reasons[f"{finding.rule}: {path.name}: {finding.reason[:70]}"] += 1
    return counts


def main() -> int:
    parser = argparse.ArgumentParser(
        description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter
    )
    parser.add_argument("folder", type=Path, help="TritonBench's LLM_generated folder")
    parser.add_argument("--out", type=Path)
    args = parser.parse_args()
    per_file: dict[str, collections.Counter[str]] = {}
    reasons: collections.Counter[str] = collections.Counter()
    for path in sorted(args.folder.rglob("*.jsonl")):
        counts: collections.Counter[str] = collections.Counter()
        for line in path.read_text(errors="replace").splitlines():
            try:
                code = extract_code(json.loads(line).get("predict", "")).code
            except (ValueError, AttributeError):
                continue
            if not code:
                continue
            counts["answers"] += 1
            first = check_candidate(code, "triton")  # what the verifier runs on a Triton answer
            if first is None:
                counts["pass"] += 1
                continue
            counts[first.rule] += 1
            reasons[
                f"{first.rule}: {first.reason.split(':')[0] if first.rule in ('import', 'namespace', 'private', 'builtin') else first.reason[:70]}"
            ] += 1
        per_file[str(path.relative_to(args.folder))] = counts
    bundled = _bundled_honest(reasons)
    rules = sorted(
        {rule for counts in [*per_file.values(), bundled] for rule in counts} - {"answers", "pass"}
    )
    lines = [
        "| answers file | answers | pass | " + " | ".join(rules) + " |",
        "|---|---|---|" + "---|" * len(rules),
    ]
    total: collections.Counter[str] = collections.Counter()
    for name, counts in per_file.items():
        total.update(counts)
        lines.append(
            f"| {name} | {counts['answers']} | {counts['pass']} | "
            + " | ".join(str(counts[r]) for r in rules)
            + " |"
        )
    lines.append(f"| **all** | {total['answers']} | {total['pass']} ({100 * total['pass'] / max(1, total['answers']):.1f}%) | "
                 + " | ".join(str(total[r]) for r in rules) + " |")  # fmt: skip
    lines.append(f"| this repository's honest kernels (not in the total) | {bundled['answers']} | {bundled['pass']} | "
                 + " | ".join(str(bundled[r]) for r in rules) + " |")  # fmt: skip
    lines += ["", "| first rule broken, and what | answers |", "|---|---|"]
    lines += [f"| {reason} | {count} |" for reason, count in reasons.most_common(40)]
    text = "\n".join(lines) + "\n"
    print(text)
    if args.out:
        args.out.write_text(text)
    return 0


if __name__ == "__main__":
    sys.exit(main())

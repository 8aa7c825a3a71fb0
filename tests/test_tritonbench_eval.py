"""bench/tritonbench_eval.py (TritonBench's own evaluator, driven for the side-by-side) on a checkout that lacks
part of a suite: one error line and nothing written, so that a resume does not take the answers as done."""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]


def test_a_checkout_missing_the_suite_statistics_is_refused_before_any_row_is_written(tmp_path: Path) -> None:
    checkout = tmp_path / "TritonBench"
    (checkout / "EVAL" / "eval_T").mkdir(parents=True)
    (checkout / "EVAL" / "eval_T" / "0_call_acc.py").write_text("# TritonBench's evaluator stands here\n")
    (checkout / "data" / "TritonBench_T_v1").mkdir(parents=True)  # but no data/TritonBench_T_v1.jsonl
    answers = tmp_path / "output_model.jsonl"
    answers.write_text(
        json.dumps({"instruction": "write relu", "predict": "```python\n```", "label": ""}) + "\n"
    )
    out = tmp_path / "tritonbench-T.jsonl"
    run = subprocess.run(
        [sys.executable, str(ROOT / "bench" / "tritonbench_eval.py"), "--checkout", str(checkout),
         "--answers", str(answers), "--out", str(out)],
        capture_output=True, text=True, timeout=120, check=False,
    )  # fmt: skip
    assert run.returncode == 2
    assert run.stderr.strip().splitlines() == [
        f"error: {checkout} is not a TritonBench-T checkout: missing data/TritonBench_T_v1.jsonl"
    ]
    assert not out.exists()


def test_answers_run_grouped_by_task_so_each_gold_file_runs_once_per_call() -> None:
    """Five models' answers to one task run together (one gold run serves them all), in file order within the
    task; answers TritonBench cannot place come first (they are written without a run)."""
    sys.path.insert(0, str(ROOT / "bench"))
    try:
        from tritonbench_eval import in_task_order
    finally:
        sys.path.remove(str(ROOT / "bench"))
    work = [{"row": {"file": file, "line": line, "task": task}}
            for file, line, task in [("a.jsonl", 0, "relu.py"), ("a.jsonl", 1, "add.py"), ("b.jsonl", 0, "relu.py"),
                                     ("b.jsonl", 1, None), ("b.jsonl", 2, "add.py")]]  # fmt: skip
    ordered = [(item["row"]["file"], item["row"]["line"]) for item in in_task_order(work)]
    assert ordered == [("b.jsonl", 1), ("a.jsonl", 1), ("b.jsonl", 2), ("a.jsonl", 0), ("b.jsonl", 0)]

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

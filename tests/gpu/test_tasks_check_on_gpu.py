"""`kernelvault tasks check --platform cuda`: gold Triton kernels (ROCmBench's layout) checked on the device,
compiled for it, in the jail with the GPU's device nodes, not under the interpreter."""

from __future__ import annotations

from pathlib import Path

import pytest

from kernelvault.toolchain.reference_check import check_tasks
from kernelvault.toolchain.tasks import load_tasks

pytestmark = pytest.mark.gpu

ROOT = Path(__file__).resolve().parents[2]


def test_the_gold_kernels_and_the_bundled_references_check_out_on_the_device() -> None:
    tasks = list(load_tasks(ROOT / "tests" / "fixtures" / "rocmbench" / "ROCm_v1").tasks)
    tasks += [task for task in load_tasks(None).tasks if task.name in ("softmax", "layer_norm", "matmul")]
    reports = check_tasks(tasks, include_performance=True, workers=4, platform="cuda")
    assert len(reports) == len(tasks) >= 5
    assert all(report.ok for report in reports), [(r.task, r.problems) for r in reports if not r.ok]
    assert all(report.cases_run >= 2 for report in reports)

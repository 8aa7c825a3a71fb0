"""Judging on the device (#24 item 1), on a real GPU (marked `gpu`; bench/gpu_session.sh on the H200, never in CI).

With `VerifyConfig.shared_outputs`, the candidate's and the reference's workers (each in its own jail) send their
outputs as CUDA blocks exported as file descriptors (`toolchain.sandboxed.bundles`), and the parent maps them
and compares on the device: no copy to a CPU, no file. Here every bundled Triton example, a wrong kernel and a
wrong shape are verified on one lane both ways, side by side: the verdicts must be the same, and the table
(written to $KV_RESULTS_DIR/shared_outputs.md) shows what the parent spent reading and comparing.
"""

from __future__ import annotations

import os
import re
from pathlib import Path
from typing import NamedTuple

import pytest

torch = pytest.importorskip("torch")
pytestmark = [
    pytest.mark.gpu,
    pytest.mark.skipif(not torch.cuda.is_available(), reason="needs a CUDA GPU"),
]

from kernelvault.contracts import Candidate  # noqa: E402
from kernelvault.toolchain.lane_pool import verify_once  # noqa: E402
from kernelvault.toolchain.tasks import load_task_file  # noqa: E402
from kernelvault.toolchain.verify import Verifier, VerifyConfig  # noqa: E402
from kernelvault.toolchain.worker_lane import WorkerLane  # noqa: E402

ROOT = Path(__file__).resolve().parents[2]
PROTOCOL = re.compile(
    r"([\d.]+) MB of tensor files(?:, ([\d.]+) MB shared \((\d+) values\))?, reading ([\d.]+) s, comparing ([\d.]+) s"
)


class Costs(NamedTuple):
    """The check protocol's costs, as its log line states them (`ProtocolCosts.summary`)."""

    files_mb: float
    shared_mb: float
    shared_values: int  # values opened from shared memory: a scalar output is ~0.0 MB, still one value
    reading_s: float
    comparing_s: float


def _costs(verdict) -> Costs:  # noqa: ANN001
    check = next(stage for stage in verdict.stages if stage.name == "check")
    found = PROTOCOL.search(check.log)
    assert found is not None, check.log
    files, shared, values, reading, comparing = found.groups()
    return Costs(float(files), float(shared or 0.0), int(values or 0), float(reading), float(comparing))


def test_shared_outputs_give_the_verdicts_of_files_on_the_device() -> None:
    names = sorted(
        path.stem
        for path in (ROOT / "examples" / "triton").glob("*.py")
        if (ROOT / "tasks" / path.name).is_file()
    )
    relu = (ROOT / "examples" / "triton" / "relu.py").read_text()
    entries = [(name, (ROOT / "examples" / "triton" / f"{name}.py").read_text(), True) for name in names]
    entries += [("relu", relu.replace("tl.store(y_ptr + offs, y, mask=mask)", "tl.store(y_ptr + offs, y + 1.0, mask=mask)"), False),
                ("relu", relu.rstrip().removesuffix("return y") + "return y[:1]\n", False)]  # fmt: skip
    rows = [
        "| task | expected correct | files: verdict | shared: verdict | files: MB read, reading s, comparing s "
        "| shared: MB mapped (values), reading s, comparing s |",
        "|---|---|---|---|---|---|",
    ]
    lane = WorkerLane(device="0")
    try:
        for name, code, honest in entries:
            task = load_task_file(ROOT / "tasks" / f"{name}.py")
            verdicts = []
            for shared in (False, True):
                verifier = Verifier(VerifyConfig(platform="cuda", timeout_s=120, shared_outputs=shared))
                verdicts.append(
                    verifier.complete(
                        verifier.prepare(task, Candidate(task.task_id, "triton", code, "test")), lane
                    )
                )
            by_files, by_sharing = verdicts
            assert (by_sharing.correct, by_sharing.failure_kind) == (by_files.correct, by_files.failure_kind), (
                name, by_files.failure_message, by_sharing.failure_message)  # fmt: skip
            assert by_files.correct is honest, (name, by_files.failure_message)
            files, sharing = _costs(by_files), _costs(by_sharing)
            assert files.shared_values == 0, (name, "files mode opened shared memory")
            assert sharing.shared_values > 0 or not honest, (name, "shared mode judged nothing in shared")
            rows.append(f"| {name} | {honest} | {by_files.failure_kind or 'correct'} | {by_sharing.failure_kind or 'correct'} "
                        f"| {files.files_mb:.1f}, {files.reading_s:.3f}, {files.comparing_s:.3f} "
                        f"| {sharing.shared_mb:.1f} ({sharing.shared_values} values), {sharing.reading_s:.3f}, "
                        f"{sharing.comparing_s:.3f} |")  # fmt: skip
    finally:
        lane.close()
        # the rows so far, also when an assertion stopped the loop: the table is what the device run is for
        table = f"Device: {torch.cuda.get_device_name()}\n\n" + "\n".join(rows) + "\n"
        print("\n" + table)
        if results := os.environ.get("KV_RESULTS_DIR"):
            Path(results, "shared_outputs.md").write_text(table)


def test_the_default_on_a_gpu_judges_on_the_device() -> None:
    """No setting: a CUDA verifier's workers share their outputs (`VerifyConfig.shared_outputs` None)."""
    task = load_task_file(ROOT / "tasks" / "relu.py")
    code = (ROOT / "examples" / "triton" / "relu.py").read_text()
    verdict = verify_once(
        Verifier(VerifyConfig(platform="cuda", timeout_s=120)),
        task,
        Candidate(task.task_id, "triton", code, "test"),
    )
    assert verdict.correct is True, verdict.failure_message
    assert _costs(verdict).shared_values > 0

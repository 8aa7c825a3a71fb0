"""A sticky device error on a real GPU (marked `gpu`; bench/gpu_session.sh on the H200, never in CI).

After an illegal address, every later CUDA call in the process fails with it, whoever makes it. A reference's
fault must refuse its own task only, and a candidate's fault must cost its own verdict only: the next job on the
same lane runs in a fresh worker. (TritonBench-G on the H200, 2026-12-03: one gold kernel's illegal access in a
reference worker that kept serving refused about 100 other tasks with the same message.)
"""

from __future__ import annotations

from pathlib import Path

import pytest

torch = pytest.importorskip("torch")
pytestmark = [
    pytest.mark.gpu,
    pytest.mark.skipif(not torch.cuda.is_available(), reason="needs a CUDA GPU"),
]

from kernelvault.contracts import Candidate  # noqa: E402
from kernelvault.toolchain.tasks import load_task_file  # noqa: E402
from kernelvault.toolchain.verify import Verifier, VerifyConfig  # noqa: E402
from kernelvault.toolchain.worker_lane import WorkerLane  # noqa: E402

ROOT = Path(__file__).resolve().parents[2]

# A store four terabytes past its buffer: no allocation is there, so the device faults (illegal address).
WILD_STORE = """
import triton
import triton.language as tl


@triton.jit
def _wild_store(ptr):
    tl.store(ptr + (1 << 40), 1.0)


def wild_store(x):
    _wild_store[(1,)](x)
    torch.cuda.synchronize()
"""

FAULTING_REFERENCE = (
    """
import torch
import torch.nn as nn
"""
    + WILD_STORE
    + """

class Model(nn.Module):
    def forward(self, x):
        wild_store(x)
        return torch.relu(x)


def get_inputs():
    return [torch.randn(16, 1024)]


def get_init_inputs():
    return []
"""
)


def test_a_device_fault_costs_only_its_own_task_or_candidate(tmp_path: Path) -> None:
    (tmp_path / "faulting.py").write_text(FAULTING_REFERENCE)
    faulting = load_task_file(tmp_path / "faulting.py")
    relu_task = load_task_file(ROOT / "tasks" / "relu.py")
    relu = (ROOT / "examples" / "triton" / "relu.py").read_text()
    faulting_candidate = (
        relu
        + WILD_STORE
        + (
            "\n\nclass ModelNew(ModelNew):\n    def forward(self, x):\n        wild_store(x)\n"
            "        return super().forward(x)\n"
        )
    )
    verifier = Verifier(VerifyConfig(platform="cuda", timeout_s=120))
    lane = WorkerLane(device="0")
    try:

        def verify(task, code: str):  # noqa: ANN001, ANN202
            return verifier.complete(
                verifier.prepare(task, Candidate(task.task_id, "triton", code, "test")), lane
            )

        refused = verify(faulting, relu)
        after_reference_fault = verify(relu_task, relu)
        failed = verify(relu_task, faulting_candidate)
        after_candidate_fault = verify(relu_task, relu)
        reference_restarts = lane.workers["reference"].stats.restarts["device_error"]
        candidate_restarts = sum(lane.workers["candidate"].stats.restarts.values())
    finally:
        lane.close()
    assert refused.failure_kind == "infrastructure_error", (refused.failure_kind, refused.failure_message)
    assert "illegal" in (refused.failure_message or "").lower(), refused.failure_message
    assert after_reference_fault.correct is True, after_reference_fault.failure_message
    assert failed.correct is not True, failed.failure_message
    assert after_candidate_fault.correct is True, after_candidate_fault.failure_message
    # the reference's worker was replaced for its fault; the candidate's for its own, where the fault reached
    # its verdict (a device error, or a crash if the fault killed the process: either way replaced)
    assert reference_restarts == 1, reference_restarts
    if "illegal" in (failed.failure_message or "").lower():
        assert candidate_restarts >= 1, (candidate_restarts, failed.failure_message)

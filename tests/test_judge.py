"""The parent runs the check (toolchain.judge): tensors travel as files it reads safely, every comparison is
its own, the candidate's process holds no reference, and a reply it did not authenticate is forged."""

from __future__ import annotations

import json
import re
from pathlib import Path

import pytest
import torch

from kernelvault.contracts import Candidate
from kernelvault.toolchain.lane_pool import verify_once
from kernelvault.toolchain.sandbox import SandboxLimits
from kernelvault.toolchain.sandboxed.channel import mac
from kernelvault.toolchain.sandboxed.tensor_files import TensorFileError, read_tensors, write_tensors
from kernelvault.toolchain.verify import Verifier, VerifyConfig
from kernelvault.toolchain.worker_lane import PersistentWorker, WorkerLane, WorkerPlan
from tests import small_tasks

ROOT = Path(__file__).resolve().parents[1]
RELU = (ROOT / "examples" / "triton" / "relu.py").read_text()


def test_tensor_files_carry_nests_scalars_dtypes_and_layouts(tmp_path: Path) -> None:
    transposed = torch.arange(12, dtype=torch.float32).reshape(3, 4).t()
    value = [transposed, (torch.tensor([1, 2], dtype=torch.int64), 0.5), None, "mean", float("inf"), True,
             torch.zeros(0, 3, dtype=torch.bfloat16)]  # fmt: skip
    write_tensors(tmp_path / "value.st", value)
    back = read_tensors(tmp_path / "value.st")
    assert torch.equal(back[0], transposed) and back[0].stride() == transposed.stride()  # still transposed
    assert isinstance(back[1], tuple) and torch.equal(back[1][0], value[1][0]) and back[1][1] == 0.5
    assert back[2:6] == [None, "mean", float("inf"), True]
    assert back[6].dtype == torch.bfloat16 and back[6].shape == (0, 3)


def test_a_file_that_is_not_one_of_ours_is_refused_with_one_line(tmp_path: Path) -> None:
    (tmp_path / "pickle.st").write_bytes(b"\x80\x04\x95" + b"cos\nsystem\n" * 4)  # a pickle, not safetensors
    with pytest.raises(TensorFileError, match="not a readable tensor file"):
        read_tensors(tmp_path / "pickle.st")
    with pytest.raises(TensorFileError, match="cannot pass a set"):
        write_tensors(tmp_path / "set.st", {1, 2})


def test_tensors_over_the_file_size_limit_say_so_instead_of_an_io_error(tmp_path: Path) -> None:
    """safetensors reports a write cut by RLIMIT_FSIZE as "I/O error"; the message names the size and the limit
    (TritonBench-G's context_attn_fwd: 2.5 GB of call arguments against the workers' 1 GiB)."""
    import subprocess
    import sys

    program = (
        "import resource, torch\n"
        "from kernelvault.toolchain.sandboxed.tensor_files import TensorFileError, write_tensors\n"
        "resource.setrlimit(resource.RLIMIT_FSIZE, (1 << 20, 1 << 20))\n"
        "try:\n"
        f"    write_tensors(__import__('pathlib').Path({str(tmp_path / 'big.st')!r}), torch.zeros(1 << 20))\n"
        "except TensorFileError as error:\n"
        "    print(error)\n"
    )
    run = subprocess.run([sys.executable, "-c", program], capture_output=True, text=True, timeout=120)
    assert (
        "could not write big.st (4 MiB of tensors, over this worker's limit of 1 MiB per file)" in run.stdout
    ), run.stdout + run.stderr


def test_a_reply_is_authentic_only_with_the_workers_key_and_the_request_id() -> None:
    worker = PersistentWorker("candidate", {}, SandboxLimits(30.0, None), WorkerPlan())
    worker._key = b"k" * 64
    body = json.dumps({"ok": True})
    good = json.dumps({"id": 7, "body": body, "mac": mac(worker._key, 7, body)}).encode()
    assert worker._authentic(good, 7) == {"ok": True}
    assert worker._authentic(good, 8) is None, "a reply to another request"
    forged = json.dumps({"id": 7, "body": json.dumps({"ok": True, "seconds": 0.0}), "mac": "0" * 64}).encode()
    assert worker._authentic(forged, 7) is None
    assert worker._authentic(b"not json", 7) is None


@pytest.fixture(scope="module")
def small_relu(tmp_path_factory: pytest.TempPathFactory):  # noqa: ANN201
    return small_tasks.small_relu(tmp_path_factory.mktemp("task"))


def test_the_candidates_process_holds_no_reference_and_the_parent_judges_its_files(small_relu) -> None:  # noqa: ANN001
    """A candidate that looks for the task in its own process finds nothing: not the module, not a file, not
    an expected output. It returns what it found, so the parent's judgement of its output file is the verdict."""
    probe = RELU + ("\n\nimport sys\n\n\nclass ModelNew(ModelNew):\n    def forward(self, x):\n"
                    "        assert not [m for m in sys.modules if m.startswith('kv_task')], 'the task is here'\n"
                    "        return super().forward(x)\n")  # fmt: skip
    verifier = Verifier(VerifyConfig(platform="cpu", timeout_s=60, static_wall=False))
    lane = WorkerLane()
    try:
        verdict = verifier.complete(
            verifier.prepare(small_relu, Candidate(small_relu.task_id, "triton", probe, "test")), lane
        )
        assert lane.workers["candidate"].pid != lane.workers["reference"].pid
    finally:
        lane.close()
    assert verdict.correct is True, verdict.failure_message
    check = next(stage for stage in verdict.stages if stage.name == "check")
    assert "MB of tensor files" in check.log and "comparing" in check.log


def test_a_candidate_that_writes_no_output_is_an_interface_error_never_a_pass(
    small_relu, monkeypatch
) -> None:  # noqa: ANN001
    """The parent judges the file the candidate's worker wrote: if the file is missing or torn, nothing passes."""
    import kernelvault.toolchain.judge

    real = kernelvault.toolchain.judge.read_tensors

    def torn(path: Path, device: str = "cpu"):  # noqa: ANN202
        if "/out/" in str(path):
            raise TensorFileError("not a readable tensor file (torn)")
        return real(path, device)

    monkeypatch.setattr(kernelvault.toolchain.judge, "read_tensors", torn)
    verifier = Verifier(VerifyConfig(platform="cpu", timeout_s=60))
    lane = WorkerLane()
    try:
        verdict = verifier.complete(
            verifier.prepare(small_relu, Candidate(small_relu.task_id, "triton", RELU, "test")), lane
        )
    finally:
        lane.close()
    assert verdict.correct is False and verdict.failure_kind in ("interface_error", "integrity_reject")
    assert "could not be read" in (verdict.failure_message or "")


def test_a_verdict_records_where_the_candidate_ran(small_relu) -> None:  # noqa: ANN001
    verifier = Verifier(VerifyConfig(platform="cpu", isolation="process"))
    verdict = verify_once(
        verifier, small_relu, Candidate(small_relu.task_id, "triton", "no code here", "test")
    )
    assert verdict.environment is not None and verdict.environment.isolation == "process"


def test_shared_outputs_give_the_verdicts_of_files_without_the_parent_reading_an_output_file(
    small_relu, monkeypatch
) -> None:  # noqa: ANN001
    """`shared_outputs`: the workers send outputs and expected outputs as shared memory (on the CPU, sealed
    memfds; on a GPU, device blocks the parent maps), and the parent judges them there. With every output
    file made unreadable to the parent, the verdicts are still those of the file path: a correct kernel
    passes, a wrong one is a mismatch, a wrong shape an interface error."""
    import kernelvault.toolchain.judge

    def no_output_files(path: Path, device: str = "cpu"):  # noqa: ANN202
        raise AssertionError(f"the parent read a tensor file: {path}")

    monkeypatch.setattr(kernelvault.toolchain.judge, "read_tensors", no_output_files)
    wrong = RELU.replace("tl.store(y_ptr + offs, y, mask=mask)", "tl.store(y_ptr + offs, y + 1.0, mask=mask)")
    wrong_shape = RELU.rstrip().removesuffix("return y") + "return y[:1]\n"
    assert RELU not in (wrong, wrong_shape)
    verifier = Verifier(VerifyConfig(platform="cpu", timeout_s=60, shared_outputs=True))
    lane = WorkerLane()
    try:
        verdicts = [verifier.complete(verifier.prepare(small_relu, Candidate(small_relu.task_id, "triton", code, "test")), lane)
                    for code in (RELU, wrong, wrong_shape)]  # fmt: skip
    finally:
        lane.close()
    correct, mismatch, interface = verdicts
    assert correct.correct is True, correct.failure_message
    check = next(stage for stage in correct.stages if stage.name == "check")
    assert "MB shared" in check.log
    assert mismatch.failure_kind == "mismatch", mismatch.failure_message
    assert interface.failure_kind == "interface_error", interface.failure_message


def test_a_scalar_output_judged_in_shared_memory_is_counted_as_such() -> None:
    """mse_loss returns a 0-d tensor: its outputs weigh a few bytes, which the log's megabytes round to 0.0. The
    log also counts the values opened from shared memory, so a run can tell the shared way was taken (the H200
    run of 2026-12-03 could not, and read the 0.0 as "nothing shared")."""
    from kernelvault.toolchain.tasks import load_task_file

    task = load_task_file(ROOT / "tasks" / "mse_loss.py")
    code = (ROOT / "examples" / "triton" / "mse_loss.py").read_text()
    verdict = verify_once(
        Verifier(VerifyConfig(platform="cpu", timeout_s=120, shared_outputs=True)),
        task,
        Candidate(task.task_id, "triton", code, "test"),
    )
    assert verdict.correct is True, verdict.failure_message
    check = next(stage for stage in verdict.stages if stage.name == "check")
    found = re.search(r"([\d.]+) MB shared \((\d+) values\)", check.log)
    assert found is not None, check.log
    # every check case's output and its expected output (two values each), at least
    assert int(found.group(2)) >= 2 * len(task.correctness_cases), check.log


# A task whose reference leaves its process unable to run anything more, the way a gold kernel's illegal
# address leaves a CUDA context: every later call fails with the first error, whoever makes it. Torch's own
# relu stands for "every later call" on the CPU (the GPU test makes the real fault: tests/gpu/).
POISONING_REFERENCE = """
import torch
import torch.nn as nn

STICKY = "CUDA error: an illegal memory access was encountered"


class Model(nn.Module):
    def forward(self, x):
        def poisoned(*args, **kwargs):
            raise RuntimeError(STICKY)

        torch.relu = poisoned
        torch.Tensor.relu = poisoned
        raise RuntimeError(STICKY)


def get_inputs():
    return [torch.randn(4, 64)]


def get_init_inputs():
    return []
"""


def test_a_reference_that_breaks_its_device_does_not_refuse_the_next_task(small_relu, tmp_path: Path) -> None:  # noqa: ANN001
    """The task that faults is refused; the next task on the same lane is judged in a fresh reference worker,
    not refused with the first one's error (TritonBench-G on the H200: 100 gold references refused that way)."""
    from kernelvault.toolchain.tasks import load_task_file

    (tmp_path / "poisoning.py").write_text(POISONING_REFERENCE)
    poisoning = load_task_file(tmp_path / "poisoning.py")
    verifier = Verifier(VerifyConfig(platform="cpu", timeout_s=60, static_wall=False))
    lane = WorkerLane()
    try:
        refused = verifier.complete(
            verifier.prepare(poisoning, Candidate(poisoning.task_id, "triton", RELU, "test")), lane
        )
        first_reference = lane.workers["reference"].pid
        judged = verifier.complete(
            verifier.prepare(small_relu, Candidate(small_relu.task_id, "triton", RELU, "test")), lane
        )
        reference = lane.workers["reference"]
        replaced = (reference.pid != first_reference, reference.stats.restarts["device_error"])
    finally:
        lane.close()
    assert refused.failure_kind == "infrastructure_error" and "illegal memory access" in (
        refused.failure_message or ""
    )
    assert judged.correct is True, judged.failure_message
    assert replaced == (True, 1)

"""The throughput bench's peer-harness mode (bench/kernelbench_peer.py) against a stand-in KernelBench checkout.

KernelBench itself needs a CUDA GPU, so here a checkout of the same layout (`src/kernelbench/eval.py` with
`eval_kernel_against_ref` returning a result with `model_dump`, a package `__init__` that imports the LLM
clients as KernelBench's does) stands in for it. This checks the driver's side of the contract: one fresh
(jailed) process per candidate, the result read back, what KernelBench cannot take listed with the reason, and
the credits it gives that KernelVault refuses named. The H200 run uses the real checkout.
"""

from __future__ import annotations

import os
import sys
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))

from bench.kernelbench_peer import not_taken, peer_lines, run_kernelbench  # noqa: E402
from kernelvault.contracts import Candidate  # noqa: E402
from kernelvault.pipelines.candidates import Attempt  # noqa: E402
from kernelvault.toolchain.tasks import load_task_file  # noqa: E402

STAND_IN_INIT = (
    "import litellm, dotenv  # as KernelBench's package does: the driver's stand-ins must cover them\n"
)
STAND_IN_EVAL = """
import os, time, types, torch

class KernelExecResult:
    def __init__(self, **fields):
        self.fields = fields
    def model_dump(self):
        return dict(self.fields)

def _load(source, name):
    module = types.ModuleType(name)
    exec(compile(source, name, "exec"), module.__dict__)
    return module

def eval_kernel_against_ref(original_model_src, custom_model_src, measure_performance=False, backend="cuda",
                            device=None, **_):
    reference = _load(original_model_src, "reference")
    try:
        custom = _load(custom_model_src, "custom")
    except Exception as error:
        return KernelExecResult(compiled=False, correctness=False, metadata={"compilation_error": repr(error)})
    torch.manual_seed(0)
    inputs = reference.get_inputs()
    model, new = reference.Model(*reference.get_init_inputs()), custom.ModelNew(*reference.get_init_inputs())
    started = time.perf_counter()
    got = new(*inputs)
    runtime = (time.perf_counter() - started) * 1e3  # ms, as KernelBench's timing module reports
    correct = bool(torch.allclose(got, model(*inputs), atol=1e-4))
    return KernelExecResult(compiled=True, correctness=correct, runtime=runtime, ref_runtime=runtime,
                            metadata={"backend": backend, "pid": os.getpid()})
"""
TORCH_ONLY = "import torch\nclass ModelNew(torch.nn.Module):\n    def forward(self, x):\n        return torch.relu(x)\n"


@pytest.fixture
def checkout(tmp_path: Path) -> Path:
    package = tmp_path / "KernelBench" / "src" / "kernelbench"
    package.mkdir(parents=True)
    (package / "__init__.py").write_text(STAND_IN_INIT)
    (package / "eval.py").write_text(STAND_IN_EVAL)
    return tmp_path / "KernelBench"


def attempt(target: str, text: str, origin: str) -> Attempt:
    task = load_task_file(ROOT / "tasks" / "relu.py")
    return Attempt(task, Candidate(task.task_id, target, text, origin))


def test_each_candidate_goes_to_kernelbench_in_a_fresh_process_and_its_credits_are_named(
    checkout: Path,
) -> None:
    items = [
        attempt("triton", TORCH_ONLY, "bench:hostile/torch_only.py"),
        attempt("triton", "def broken(:\n", "bench:broken/syntax.py"),
        attempt("hip", (ROOT / "examples" / "hip" / "relu.py").read_text(), "bench:examples/hip/relu.py"),
    ]
    expected = {"bench:hostile/torch_only.py": ["integrity_reject"], "bench:broken/syntax.py": ["parse_error"],
                "bench:examples/hip/relu.py": ["correct"]}  # fmt: skip
    taken = [item for item in items if not_taken(item) is None]
    assert [item.candidate.origin for item in taken] == [
        "bench:hostile/torch_only.py",
        "bench:broken/syntax.py",
    ]
    seconds, rows = run_kernelbench(checkout, items, 120.0, lambda item: expected[item.candidate.origin])
    by_origin = {row["origin"]: row for row in rows}
    assert by_origin["bench:hostile/torch_only.py"]["got"] == "correct"  # the peer credits a PyTorch call
    assert "backend: triton" in by_origin["bench:hostile/torch_only.py"]["message"]
    # KernelBench's runtimes are milliseconds, kept as they come: a CPU relu of a small input takes well under 1 s
    candidate_ms, reference_ms = by_origin["bench:hostile/torch_only.py"]["latency_ms"]
    assert 0 < candidate_ms < 1000 and candidate_ms == reference_ms
    assert by_origin["bench:broken/syntax.py"]["got"] == "compile_error"
    assert by_origin["bench:broken/syntax.py"]["latency_ms"] is None
    # a fresh process for each candidate (the stand-in reports its pid), none of them this one
    pid = int(by_origin["bench:hostile/torch_only.py"]["message"].split("pid: ")[1].split(";")[0])
    assert pid != os.getpid()
    assert by_origin["bench:examples/hip/relu.py"]["got"] == "not_taken"
    lines = peer_lines(rows)
    assert lines[0] == "KernelBench took 2 of 3 candidates; not taken:"
    assert any(line.startswith("- 1: HIP: KernelVault's native HIP form") for line in lines)
    assert "KernelBench credits 1 candidate(s) that KernelVault is expected to refuse:" in lines
    assert "- hostile/torch_only.py (KernelVault: integrity_reject)" in lines
    assert seconds > 0 and all(row["peer"] for row in rows)


def test_a_folder_that_is_not_a_kernelbench_checkout_is_refused(tmp_path: Path) -> None:
    with pytest.raises(SystemExit, match="not a KernelBench checkout"):
        run_kernelbench(tmp_path, [], 10.0, lambda item: [])

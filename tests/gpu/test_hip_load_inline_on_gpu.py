"""KernelBench's load_inline form of HIP candidates on a real GPU (marked `gpu`; the slow build path).

Two bundled load_inline examples are verified end to end, in the jail: the worker builds the extension
with the portability header on NVIDIA (hipify on ROCm), checks it and times it. A second verification of
the same candidate builds it again: the build folder was written by a candidate's process, and no
candidate's verdict may rest on a library another candidate's process could have replaced.
"""

from __future__ import annotations

import time
from pathlib import Path

import pytest

from kernelvault.toolchain.lane_pool import verify_once

torch = pytest.importorskip("torch")
pytestmark = [
    pytest.mark.gpu,
    pytest.mark.skipif(not torch.cuda.is_available(), reason="needs a CUDA or ROCm GPU"),
]

ROOT = Path(__file__).resolve().parents[2]


def test_load_inline_examples_build_check_and_time(tmp_path: Path) -> None:
    from kernelvault.contracts import Candidate
    from kernelvault.toolchain.tasks import parse_task
    from kernelvault.toolchain.verify import Verifier, VerifyConfig

    verifier = Verifier(VerifyConfig(timeout_s=60.0, compile_timeout_s=300.0, hip_cache=tmp_path / "hip"))
    for name in ("vector_add", "relu"):
        task_path = ROOT / "tasks" / f"{name}.py"
        task = parse_task(task_path.read_text(), name, f"file:{task_path}")
        code = (ROOT / "examples" / "hip" / "load_inline" / f"{name}.py").read_text()
        started = time.perf_counter()
        first = verify_once(verifier, task, Candidate(task.task_id, "hip", code, "bundled"))
        first_seconds = time.perf_counter() - started
        assert first.correct is True, (name, first.failure_kind, first.failure_message)
        assert first.timings and first.speedup is not None
        started = time.perf_counter()
        again = verify_once(verifier, task, Candidate(task.task_id, "hip", code, "bundled"))
        again_seconds = time.perf_counter() - started
        assert again.correct is True
        print(
            f"load_inline {name}: first verification {first_seconds:.1f} s, again {again_seconds:.1f} s "
            f"(compile {_compile_seconds(first):.1f} s and {_compile_seconds(again):.1f} s), "
            f"speedup {first.speedup:.2f}x"
        )
        assert _compile_seconds(again) > 0.25 * _compile_seconds(first), "built again, not reused"


def _compile_seconds(verdict) -> float:  # noqa: ANN001
    return sum(stage.seconds for stage in verdict.stages if stage.name == "compile")

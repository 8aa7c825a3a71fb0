"""What a GPU machine gives the verifier: its jail, and what the device's own record shows for known cases.

    python bench/device_probe.py            # on the device (bench/gpu_session.sh runs it with KV_BENCH=probe)

1. The isolation this machine gives candidate processes (`kernelvault.toolchain.jail.probe_isolation`).
2. `DeviceRecord` (toolchain.sandboxed.candidate) around known forwards, in this process: an honest Triton
   kernel, glue (zeros, a copy), PyTorch computing (relu, a matmul), a trip through host memory. For each,
   every event the device recorded in the window and how the record classifies it: the names of PyTorch's
   fill and copy kernels, and of memcpy/memset records, differ across versions, and the record's rules
   rest on them.
3. A few verdicts through the real lanes (jailed workers): honest Triton and HIP examples, and hostile
   candidates with the static wall off, which only the device record catches on a GPU.
"""

from __future__ import annotations

import contextlib
import sys
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))

import torch  # noqa: E402
import triton  # noqa: E402
import triton.language as tl  # noqa: E402

from kernelvault.contracts import Candidate  # noqa: E402
from kernelvault.toolchain.jail import probe_isolation  # noqa: E402
from kernelvault.toolchain.sandboxed.candidate import (  # noqa: E402
    GLUE_KERNEL_MARKERS,
    DeviceRecord,
    LaunchedByHarness,
    _torch_ops_by_correlation,
)
from kernelvault.toolchain.tasks import load_task_file  # noqa: E402
from kernelvault.toolchain.verify import Verifier, VerifyConfig  # noqa: E402
from kernelvault.toolchain.worker_lane import WorkerLane  # noqa: E402


@triton.jit
def probe_relu_kernel(x_ptr, y_ptr, n, BLOCK: tl.constexpr):
    offs = tl.program_id(0) * BLOCK + tl.arange(0, BLOCK)
    mask = offs < n
    tl.store(y_ptr + offs, tl.maximum(tl.load(x_ptr + offs, mask=mask), 0.0), mask=mask)


_RECORDS: list[DeviceRecord] = []  # the record being kept, as the candidate's worker keeps one


def own_relu(x: torch.Tensor) -> torch.Tensor:
    """The probe's own kernel, launched as the worker's launcher does: inside the record's launch range."""
    y = torch.empty_like(x)
    with _RECORDS[-1].launch_scope() if _RECORDS else contextlib.nullcontext():
        probe_relu_kernel[(triton.cdiv(x.numel(), 1024),)](x, y, x.numel(), BLOCK=1024)
    return y


CASES = {
    "own Triton kernel": lambda x: own_relu(x),
    "glue: zeros, contiguous copy, cat": lambda x: torch.cat([torch.zeros_like(x), x.t().contiguous().t()]),
    "torch.relu": lambda x: torch.relu(x),
    "matmul (cuBLAS)": lambda x: x @ x.t(),
    "through host memory": lambda x: torch.from_numpy(x.cpu().numpy().clip(0)).to(x.device),
    "a scalar read (.item() of a 0-d tensor)": lambda x: x[0, 0].item(),
}


def record_cases() -> None:
    x = torch.randn(256, 256, device="cuda")
    own_relu(x)  # compiled before the record starts, as a candidate's first forward would be
    torch.cuda.synchronize()
    print("\n| case | events in the window (classified) | foreign |\n|---|---|---|")
    for label, run in CASES.items():
        started = time.perf_counter()
        record = DeviceRecord()
        _RECORDS.append(record)
        with record.window():
            run(x)
        _RECORDS.pop()
        foreign = record.finish()
        events = list(record.profile.profiler.kineto_results.events())
        launched = LaunchedByHarness(events, _torch_ops_by_correlation(events))
        cells = []
        for event in events:
            if event.device_type() == torch.autograd.DeviceType.CPU:
                continue
            name = event.name()
            kind = ("own" if launched(event) else "glue" if any(marker in name for marker in GLUE_KERNEL_MARKERS)
                    else "other")  # fmt: skip
            cells.append(f"{kind} (linked {event.linked_correlation_id()}): {name[:90]}")
        print(f"| {label} ({time.perf_counter() - started:.2f} s) | {'<br>'.join(cells) or '-'} | "
              f"{'; '.join(f[:60] for f in foreign) or 'none'} |")  # fmt: skip


def verdicts() -> None:
    examples = [("triton", "relu", ROOT / "examples/triton/relu.py", True),
                ("hip", "relu", ROOT / "examples/hip/relu.py", True),
                ("triton", "relu", ROOT / "tests/adversarial/hostile/integrity_reject__relu__disable_torch_dispatch.py", False),
                ("triton", "relu", ROOT / "tests/adversarial/hostile/integrity_reject__relu__numpy_after_decoy.py", False),
                ("triton", "relu", ROOT / "tests/adversarial/hostile/integrity_reject__relu__pop_dispatch_mode.py", False)]  # fmt: skip
    print("\n| candidate | static wall | verdict | seconds | isolation |\n|---|---|---|---|---|")
    lanes = {}
    for target, task_name, path, wall in examples:
        verifier = Verifier(VerifyConfig(platform="cuda", timeout_s=120, static_wall=wall))
        lane = lanes.setdefault(wall, WorkerLane(device="0"))
        task = load_task_file(ROOT / "tasks" / f"{task_name}.py")
        started = time.perf_counter()
        verdict = verifier.complete(
            verifier.prepare(task, Candidate(task.task_id, target, path.read_text(), str(path))), lane
        )
        what = verdict.failure_kind or f"correct, speedup {verdict.speedup:.2f}"
        print(f"| {path.name} | {'on' if wall else 'off'} | {what}: {(verdict.failure_message or '')[:150]} | "
              f"{time.perf_counter() - started:.1f} | {verdict.environment.isolation if verdict.environment else '?'} |")  # fmt: skip
    for lane in lanes.values():
        lane.close()


def main() -> int:
    isolation = probe_isolation(sys.executable)
    print(f"isolation: {isolation.level}: {isolation.detail}")
    print(f"torch {torch.__version__}, triton {triton.__version__}, {torch.cuda.get_device_name()}")
    record_cases()
    verdicts()
    return 0


if __name__ == "__main__":
    sys.exit(main())

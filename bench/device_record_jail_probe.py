"""Does the device record link a Triton launch to the harness's launch range inside the jail, as it does outside?

    python bench/device_record_jail_probe.py          # on a GPU machine (KV_BENCH=record_jail in bench/gpu_session.sh)

A small program keeps a `DeviceRecord`, launches a Triton kernel inside the record's launch range (compiled inside
the record, as a candidate's first forward is, then again warm) and PyTorch's relu outside it, in three records one
after another (a persistent worker's jobs), and prints every event of the record: its device, correlation id, linked
correlation id, thread id and span, and how `LaunchedByHarness` classifies each device event. It runs in a plain
child process and in a jailed one (`folder_jail`: the shape of a worker's, namespaces, read-only system, seccomp,
the worker's limits and environment). A third run is jailed and launches as a worker does: the worker's
`CandidateGuards` installed (the dispatch monitor watching, Triton's launcher wrapped by the launch recorder,
uninitialised memory filled), the record's verdict with and without the kernel names (`OwnKernelNames`).

Measured on an H100 (2026-12-05): the jail does not lose the link (every warm and compiling launch is `own` in
the plain process and in the jail, with and without seccomp, over three records in one process); the third run is
what separates the worker's launch path from the probe's.
"""

from __future__ import annotations

import json
import os
import sys
import tempfile
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))

CHILD = r"""
import json, os, sys, threading
import torch, triton, triton.language as tl
from kernelvault.toolchain.sandboxed.candidate import DeviceRecord, LaunchedByHarness, _torch_ops_by_correlation

@triton.jit
def probe_relu_kernel(x_ptr, y_ptr, n, BLOCK: tl.constexpr):
    offs = tl.program_id(0) * BLOCK + tl.arange(0, BLOCK)
    mask = offs < n
    tl.store(y_ptr + offs, tl.maximum(tl.load(x_ptr + offs, mask=mask), 0.0), mask=mask)

x = torch.randn(4096, device="cuda")
rows = []
foreign = []
for job in range(3):  # a persistent worker keeps one record per job, one after another in the same process
    record = DeviceRecord()
    with record.window():
        for _ in range(2):  # the first launch (of the first job) compiles inside the record, the second is warm
            y = torch.empty_like(x)
            with record.launch_scope():
                probe_relu_kernel[(4,)](x, y, x.numel(), BLOCK=1024)
        torch.relu(x)
    foreign.append(record.finish())
    events = list(record.profile.profiler.kineto_results.events())
    launched = LaunchedByHarness(events, _torch_ops_by_correlation(events))
    for event in events:
        cpu = event.device_type() == torch.autograd.DeviceType.CPU
        name = event.name()
        if cpu and not (name.startswith("kv::") or "Launch" in name or name.startswith("aten::relu")):
            continue
        rows.append({"job": job, "name": name[:70], "device": "cpu" if cpu else "gpu",
                     "correlation": event.correlation_id(), "linked": event.linked_correlation_id(),
                     "thread": event.start_thread_id(), "start": event.start_ns(), "end": event.end_ns(),
                     "own": None if cpu else bool(launched(event))})
with open("record.json", "w") as handle:  # the working directory: the probe's home, writable in the jail
    json.dump({"pid": os.getpid(), "native_thread": threading.get_native_id(), "foreign": foreign, "rows": rows},
              handle)
"""

GUARDED = r"""
import json, os, sys, threading, types
from pathlib import Path
import torch, triton, triton.language as tl
from kernelvault.toolchain.sandboxed.candidate import (CandidateGuards, DeviceRecord, LaunchedByHarness,
    OwnKernelNames, _torch_ops_by_correlation, unwritten_memory_filled)

@triton.jit
def probe_relu_kernel(x_ptr, y_ptr, n, BLOCK: tl.constexpr):
    offs = tl.program_id(0) * BLOCK + tl.arange(0, BLOCK)
    mask = offs < n
    tl.store(y_ptr + offs, tl.maximum(tl.load(x_ptr + offs, mask=mask), 0.0), mask=mask)

device = torch.device("cuda")
torch.set_grad_enabled(False)
x = torch.randn(4096, device="cuda")
job = types.SimpleNamespace(launches_path=str(Path("launches.jsonl").resolve()), allowed_ops=[], language="triton")
guards = CandidateGuards(job, device, [Path(".").resolve()])
rows, foreign = [], []
for number in range(2):  # two jobs of a persistent worker
    guards.record = DeviceRecord()
    guards.recorder.device_scope = guards.record.launch_scope
    for _ in range(2):
        with unwritten_memory_filled(device, guards), guards.watching("forward"):
            y = torch.empty_like(x)
            probe_relu_kernel[(4,)](x, y, x.numel(), BLOCK=1024)  # through the recorder's wrapped launcher
    guards.recorder.device_scope = None
    launches = sum(guards.recorder.recorded_launches.values())
    guards.recorder.recorded_launches.clear()
    foreign.append([*guards.record.finish(), "| with names:", *guards.record.finish(OwnKernelNames(launches))])
    events = list(guards.record.profile.profiler.kineto_results.events())
    launched = LaunchedByHarness(events, _torch_ops_by_correlation(events))
    for event in events:
        cpu = event.device_type() == torch.autograd.DeviceType.CPU
        name = event.name()
        if cpu and not (name.startswith(("kv::", "aten::", "profiler::")) or "Launch" in name):
            continue
        rows.append({"job": number, "name": name[:70], "device": "cpu" if cpu else "gpu",
                     "correlation": event.correlation_id(), "linked": event.linked_correlation_id(),
                     "thread": event.start_thread_id(), "start": event.start_ns(), "end": event.end_ns(),
                     "own": None if cpu else bool(launched(event))})
found = list(vars(guards.violations).get("found", ()))
guards.uninstall()
with open("record.json", "w") as handle:
    json.dump({"pid": os.getpid(), "native_thread": threading.get_native_id(), "foreign": foreign, "rows": rows,
               "violations": found}, handle)
"""


def run_child(jailed: bool, seccomp: bool, program: str = CHILD) -> dict:
    from kernelvault.toolchain.jail import gpu_device_nodes, probe_isolation
    from kernelvault.toolchain.sandbox import SandboxLimits, folder_jail, run_sandboxed

    home = Path(tempfile.mkdtemp(prefix="kv-record-probe-"))
    home.chmod(0o755)
    (home / "child.py").write_text(program)
    jail = None
    if jailed:
        isolation = probe_isolation(sys.executable)
        jail = folder_jail(isolation, home, (), gpu_device_nodes())
        if jail is None:
            return {"error": f"no jail here: {isolation.detail}"}
        if not seccomp:
            from dataclasses import replace

            jail = replace(jail, seccomp=False)
    limits = SandboxLimits(timeout_s=180, memory_bytes=None, cpu_threads=1)
    env = {
        "TRITON_CACHE_DIR": str(home / "triton"),
        "TORCHINDUCTOR_CACHE_DIR": str(home / "inductor"),
        "PYTHONPATH": os.environ.get("PYTHONPATH", ""),
    }
    result = run_sandboxed([sys.executable, str(home / "child.py")], home, limits, env, jail=jail)
    if not (home / "record.json").exists():
        return {"error": f"exit {result.returncode} {result.signal_name}: {result.stderr_tail[-600:]}"}
    return json.loads((home / "record.json").read_text())


def main() -> int:
    if sys.argv[1:] == ["--guarded"]:  # only the third run
        runs = {"jail, the worker's guards": run_child(True, True, GUARDED)}
    else:
        runs = {"plain process": run_child(False, True), "jail": run_child(True, True),
                "jail, the worker's guards": run_child(True, True, GUARDED)}  # fmt: skip
    for label, seen in runs.items():
        print(f"\n## {label}\n")
        if "error" in seen:
            print(seen["error"])
            continue
        print(
            f"pid {seen['pid']}, native thread {seen['native_thread']}, foreign per job (relu is): "
            f"{[[name[:40] for name in job] for job in seen['foreign']]}\n"
        )
        print(
            "| job | event | on | correlation | linked | thread | start (us from first) | own |\n|---|---|---|---|---|---|---|---|"
        )
        if seen.get("violations"):
            print(f"violations: {seen['violations']}\n")
        first = min(row["start"] for row in seen["rows"]) if seen["rows"] else 0
        for row in seen["rows"]:
            print(f"| {row['job']} | {row['name']} | {row['device']} | {row['correlation']} | {row['linked']} | {row['thread']} | "
                  f"{(row['start'] - first) / 1000:.1f}..{(row['end'] - first) / 1000:.1f} | {row['own']} |")  # fmt: skip
    return 0


if __name__ == "__main__":
    sys.exit(main())

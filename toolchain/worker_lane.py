"""The lane: the persistent jailed workers that verify one candidate at a time on one device.

    WorkerLane (parent side; a device may have several, sharing its gate)
      ├─ PersistentWorker "candidate"      the candidate's code: `kernelvault.toolchain.sandboxed.candidate`
      ├─ PersistentWorker "reference"      the task's reference: `kernelvault.toolchain.sandboxed.reference`
      └─ PersistentWorker "cross_compile"  (cpu) the recorded launches compiled for the AMD target

Each worker is a `PersistentWorker` (`kernelvault.toolchain.worker`): a jailed process that answers requests until it
is replaced. The parent drives every check (`kernelvault.toolchain.judge.run_check`); a worker only answers.

Files, not messages, carry tensors. Each worker has a home folder (bound writable in its jail: nothing
else of the host is writable there) holding one folder per job, which the parent creates and removes. The
candidate's worker also has `in/`, bound read-only inside its jail, where the parent links the inputs the
reference's worker wrote; the reference's folder is not in the candidate's jail at all.

Replies are authenticated per request: the worker reads a key from an inherited pipe before any candidate
exists and replies `HMAC(key, request id, body)` on a dedicated pipe. A reply for another request, a torn
reply or a wrong MAC is a forged result (integrity_reject) and the worker is replaced.

What sharing a process between candidates costs, and how it is bounded. A candidate runs in a process an
earlier candidate ran in, and leaves it to the next one. So an earlier candidate could leave a change
that helps or hurts a later one (a patched function, an import hook, a file in its folders), and the
request-signing key is in the worker's memory for its whole life. The restart rules bound this. A candidate worker
is replaced (process group killed, its jail gone with it, a fresh one started):
(a) after a crash or a timeout; a crash is retried once on a fresh worker, so a worker killed from outside
    (OOM killer, an operator) costs a retry, not a wrong verdict; a second crash is the candidate's. Any
    worker of the lane (the reference's and the cross-compiler's too) found dead when a job starts is
    replaced first, and a crash of the reference's worker is retried once as well;
(b) after any candidate whose verdict is `integrity_reject`, that left a process running, or that left the
    process changed: a patched function (`kernelvault.toolchain.sandboxed.integrity.PatchSnapshot`, taken when the worker
    started), a thread, another working directory, changed environment, `sys.path`, import hooks,
    trace/profile hooks, default dtype, grad mode or deterministic-algorithms flag, a module of its own;
(c) after a sticky device error (illegal memory access, device-side assert, launch failure) in any request
    of its job; the reference's worker too, which also probes its device after a failed request, since a
    context left broken by one task's reference would refuse every later task with that task's error;
(d) every `restart_every` jobs, as hygiene against what the checks above cannot see.
"A fresh one" is, on a GPU lane, a spare the candidate's worker keeps started beside it (`PersistentWorker.spare`): started
by the same lane thread, in a jail, uid, home and key of its own, and never given a job before it is
swapped in, so no candidate has run in it; while it waits it holds an interpreter (and on a GPU no device
memory until its first job). Swapping it in costs nothing where a start costs seconds.
Between jobs the worker kills every other process of its jail and empties its private /tmp, and the
parent removes the job's folder. What is NOT bounded: a candidate that changes state none of these
checks looks at and otherwise passes can affect up to `restart_every - 1` later candidates of its worker;
use `restart_every=1` (the fresh mode) where that matters more than throughput.
"""

from __future__ import annotations

import dataclasses
import os
import shutil
import sys
from pathlib import Path
from typing import Any

from kernelvault.toolchain.device_gate import DeviceGate, GateHold, gate_for
from kernelvault.toolchain.judge import run_check
from kernelvault.toolchain.sandbox import SandboxLimits, SandboxResult
from kernelvault.toolchain.sandboxed.requests import Compile
from kernelvault.toolchain.worker import KINDS, PersistentWorker, WorkerPlan, WorkerStats
from kernelvault.toolchain.worker_jobs import CompileJob, WorkerJob, WorkerSetup

__all__ = ["KINDS", "REFERENCE_FILE_BYTES", "PersistentWorker", "WorkerLane", "WorkerPlan", "WorkerStats"]

# The reference worker's size limit per file (RLIMIT_FSIZE; a candidate's worker keeps `SandboxLimits.file_bytes`):
# the test's calls of TritonBench-G's context_attn_fwd pass about 2.5 GB of tensors, over the 1 GiB default.
REFERENCE_FILE_BYTES = 16 << 30


class WorkerLane:
    """The persistent workers of one device: a candidate's, a reference's, and on cpu a cross-compiler.

    The device stage (`Verifier.complete`) runs its worker jobs here; a lane pool's thread owns it. A crash (not
    a timeout) of the candidate's worker is retried once on a fresh worker: a worker killed from outside
    costs a retry, while a candidate that crashes its worker twice gets the crash as its verdict. So is a
    crash of the reference's worker, whose second crash is an infrastructure_error. A worker found dead when
    a job starts (killed while idle) is replaced before the job, at no retry's cost.
    """

    def __init__(self, python: str = sys.executable, device: str = "cpu", restart_every: int = 50,
                 gate: DeviceGate | None = None, spare: bool | None = None) -> None:  # fmt: skip
        self.python = python
        self.device = device
        self.restart_every = restart_every
        # A spare candidate worker (`PersistentWorker.spare`): by default on GPU lanes, where a start costs seconds
        # of a scarce device's lane; not on CPU lanes, where the spare's start competes with the check for the
        # same cores (a 2-core CI machine), and not in the fresh mode (one process per candidate is what it measures).
        self.spare = (device != "cpu" if spare is None else spare) and restart_every > 1
        # Lanes of one device in this process share its gate: their checks overlap, their timings do not.
        self.gate = gate if gate is not None else gate_for(device)
        self.hold = GateHold(self.gate)
        self.workers: dict[str, PersistentWorker] = {}
        self._jobs = 0

    def _worker(
        self, kind: str, setup: WorkerSetup, limits: SandboxLimits, env: dict[str, str]
    ) -> PersistentWorker:
        worker = self.workers.get(kind)
        if worker is None:
            device_env = {} if self.device == "cpu" else {"CUDA_VISIBLE_DEVICES": self.device,
                                                          "HIP_VISIBLE_DEVICES": self.device}  # fmt: skip
            plan = WorkerPlan(
                self.python, setup.isolation, setup.work_root, setup.read_only_paths, gpu=setup.gpu
            )
            if kind == "reference" and self.device != "cpu":  # on the CPU a gold Triton kernel needs it
                env = {key: value for key, value in env.items() if key != "TRITON_INTERPRET"}
            restart_every = self.restart_every if kind != "reference" else max(self.restart_every, 50)
            spare = kind == "candidate" and self.spare  # the worker replaced often
            if (
                kind == "reference"
            ):  # its files are the task's inputs and expected outputs, whatever their size
                limits = dataclasses.replace(limits, file_bytes=max(limits.file_bytes, REFERENCE_FILE_BYTES))
            worker = PersistentWorker(kind, {**env, **device_env}, limits, plan, restart_every, spare)
            self.workers[kind] = worker
        return worker

    def run(self, job: WorkerJob, limits: SandboxLimits,
            env: dict[str, str]) -> tuple[SandboxResult, dict[str, Any] | None]:  # fmt: skip
        """Run one job on this lane's workers: (how the worker ended when it did not answer, its report)."""
        self._jobs += 1
        module_name = f"kv_candidate_{os.getpid()}_{id(self)}_{self._jobs}"  # unique per job in a worker
        if isinstance(job, CompileJob):
            return self._cross_compile(job, module_name, limits, env)
        candidate = self._worker("candidate", job.setup, limits, env)
        reference = self._worker("reference", job.setup, limits, env)
        for worker in (candidate, reference):
            worker.replace_if_exited()
        for attempt in range(2):
            waited = self.hold.check()  # host work (a worker's start) may wait here: it is the lane's wait
            starting = candidate.stats.start_seconds + reference.stats.start_seconds
            crashes = reference.stats.restarts["crash"]
            try:
                died, result = run_check(job, module_name, reference, candidate, self.hold, limits.timeout_s)
            finally:
                self.hold.release()
            if result is not None and attempt == 0 and reference.stats.restarts["crash"] > crashes:
                # The reference's worker died during the job (the result: infrastructure_error, "the reference
                # worker failed"), killed from outside or by the task's reference: retried once on a fresh worker,
                # as a candidate's crash is. A second death is the verdict; never a pass, so a candidate that could
                # reach that process (none can from its jail) gains nothing by killing it.
                reference.stats.retries += 1
                Path(job.launches_path).write_text("")  # the check writes them afresh
                continue
            if result is not None:
                result["protocol_costs"].gate_seconds += waited
                started = candidate.stats.start_seconds + reference.stats.start_seconds - starting
                result["protocol_costs"].start_seconds += started
                return SandboxResult(0, None, False, 0.0, "", ""), result
            assert died is not None
            if died.timed_out or attempt == 1:
                return died, None
            candidate.stats.retries += 1
            Path(job.launches_path).write_text("")  # the check writes them afresh
        raise AssertionError("unreachable")

    def _cross_compile(self, job: CompileJob, module_name: str, limits: SandboxLimits,
                       env: dict[str, str]) -> tuple[SandboxResult, dict[str, Any] | None]:  # fmt: skip
        worker = self._worker("cross_compile", job.setup, limits, env)
        worker.replace_if_exited()
        for attempt in range(2):
            number = worker.next_job_number()
            folder = worker.job_folder(number)
            shutil.copyfile(job.candidate_path, folder / "candidate.py")
            shutil.copyfile(job.launches_path, folder / "launches.jsonl")
            request = Compile(str(folder / "candidate.py"), str(folder / "launches.jsonl"), module_name, job.backend,
                              job.arch, job.warp_size, list(job.allowed_ops))  # fmt: skip
            try:
                reply = worker.request(request, limits.timeout_s)
            finally:
                worker.finish_job(number)
            if reply is not None:
                return SandboxResult(0, None, False, 0.0, "", ""), reply
            run = worker.last_run or SandboxResult(None, None, True, limits.timeout_s, "", "")
            if run.timed_out or attempt == 1:
                return run, None
            worker.stats.retries += 1
        raise AssertionError("unreachable")

    def stats(self) -> dict[str, WorkerStats]:
        return {kind: worker.stats for kind, worker in self.workers.items()}

    def close(self) -> None:
        for worker in self.workers.values():
            worker.close()

"""A long-lived sandboxed worker that verifies candidates one after another: no process start per candidate.

The per-candidate way (`toolchain.verify` with no runner) starts a one-job worker for every candidate: a
Python start, `import torch`, `import triton`, a device context and the task's reference outputs, every
time. A `PersistentWorker` starts `python -m toolchain.device_worker KIND` once
under the same sandbox (`toolchain.sandbox`: limits, allow-listed environment, no network where the OS
allows it, own process group, dies with its parent) and sends it jobs over a pipe. KIND is `check` (the
`triton_worker.verify_job` logic and guards, unchanged) or `cross_compile` (`cross_compile.compile_launches`).
A task's plan (models, inputs) stays in the worker (`ReferenceCache`, keyed by the task's source, its
cases, seeds and whether it is timed), so the reference runs once per task per worker, not per candidate;
its expected outputs are sealed with the parent's `Judge`, which answers every comparison during a job
and holds the worker's final result against its own record (`toolchain.judge`: the candidate's process
keeps only scrubbed copies).

Results are authenticated per job: the worker reads a key from an inherited pipe before any candidate
exists, and replies `HMAC(key, job id, result)` on a dedicated pipe. A reply for another job, a torn
reply or a wrong MAC is a forged result (integrity_reject) and the worker is replaced.

What sharing a process between candidates costs, and how it is bounded. A candidate runs with every
guard of the per-candidate worker, but it runs in a process that an earlier candidate ran in, and it
leaves the process to the next one. So:
- an earlier candidate could have left a change that helps or hurts a later one (a patched function, a
  thread, an import hook, tampered inputs in the cache, a corrupted allocator or device);
- a candidate could read what a later job brings (the job's paths and cases; not the key, which never
  leaves the worker's memory, but see below) or what an earlier one left in memory;
- the key is in the worker's memory for its whole life, not only for one candidate's: a candidate that
  reads process memory (ctypes, /proc/self/mem) can forge the replies of every later job of that worker,
  where a per-candidate worker exposes only its own.
The restart rules bound this. A worker is replaced (process group killed, a fresh one started):
(a) after a crash or a timeout; a crash is retried once on a fresh worker, so a worker killed from
    outside (OOM killer, an operator) costs a retry, not a wrong verdict; a second crash is the candidate's;
(b) after any candidate whose verdict is `integrity_reject`, and after any candidate that left the process
    changed: a patched function in torch/triton/builtins/time/the harness (the same `PatchSnapshot` the
    guards use, taken when the worker started), a thread still alive, another working directory, changed
    environment, `sys.path`, import hooks, trace/profile hooks, default dtype, grad mode or
    deterministic-algorithms flag, a candidate module left in `sys.modules`; or whose cached task
    inputs no longer match their fingerprint (checked before each reuse). So the next candidate runs in
    a fresh process after any candidate we saw misbehave;
(c) after a sticky device error (illegal memory access, device-side assert, launch failure: the context
    is unusable after them);
(d) every `restart_every` jobs, as hygiene against what the checks above cannot see (leaked memory,
    allocator fragmentation, changes to state we do not fingerprint).
What is NOT bounded: a candidate that changes state none of these checks looks at (a C-level hook, a
patched function outside the snapshot, a tampered cache entry that keeps its sums) and otherwise passes
can affect up to `restart_every - 1` later candidates of its worker. Use `restart_every=1` (or the
per-candidate way) where that matters more than throughput.
"""

from __future__ import annotations

import fcntl
import hashlib
import hmac
import json
import os
import select
import shutil
import subprocess
import sys
import tempfile
import threading
import time
from collections import Counter, OrderedDict
from collections.abc import Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from toolchain.device_gate import DeviceGate, GateHold, gate_for
from toolchain.judge import Judge, reference_key
from toolchain.sandbox import SandboxLimits, SandboxResult, crash_result, kill_group, start_sandboxed

STICKY_DEVICE_ERRORS = (
    "illegal memory access", "device-side assert", "unspecified launch failure", "misaligned address",
    "an illegal instruction", "cuda error: launch failure", "hiperror", "hip error", "memory access fault",
)  # fmt: skip
_STARTUP_TIMEOUT_S = 300.0  # importing torch and triton on a loaded 2-core machine can take a minute


_MAX_MESSAGE_BYTES = 8 << 30  # binary parts of one worker message: more is not read, and fails the job
_PIPE_BYTES = 1 << 20  # the reply pipe's buffer: Linux's default is 64 KiB, its unprivileged maximum 1 MiB


def widen_pipe(fd: int, size: int = _PIPE_BYTES) -> None:
    """Ask for a larger buffer on a pipe; where the OS refuses, the pipe keeps its default.

    A performance case's output is hundreds of MB, and through a 64 KiB pipe each 64 KiB is a wake-up of
    both processes (a write, a select and a read).
    """
    try:
        fcntl.fcntl(fd, fcntl.F_SETPIPE_SZ, size)
    except (AttributeError, OSError):  # not Linux, or above /proc/sys/fs/pipe-max-size
        pass


def _mac(key: bytes, job_id: int, body: str, blobs: Sequence[bytes] = ()) -> str:
    digest = hmac.new(key, f"{job_id}\n{body}".encode(), hashlib.sha256)
    for blob in blobs:
        digest.update(blob)
    return digest.hexdigest()


def encode_message(key: bytes, job_id: int, body: dict[str, Any]) -> list[bytes]:
    """One authenticated worker message: a JSON header line, then its binary parts, raw.

    Bytes values in `body` (tensors from `judge.pack`) travel as binary parts after the header, not as
    base64 inside the JSON: a performance case's output is hundreds of MB, and base64 plus two layers of
    JSON cost several seconds per output on each side (bench/judge_transfer.py). The MAC covers the body
    text and every part.
    """
    blobs: list[bytes] = []

    def lift(value: Any) -> Any:
        if isinstance(value, bytes):
            blobs.append(value)
            return {"__blob__": len(blobs) - 1}
        if isinstance(value, dict):
            return {key: lift(item) for key, item in value.items()}
        if isinstance(value, (list, tuple)):
            return [lift(item) for item in value]
        return value

    text = json.dumps(lift(body), default=str)
    header = {
        "id": job_id,
        "body": text,
        "blobs": [len(blob) for blob in blobs],
        "mac": _mac(key, job_id, text, blobs),
    }
    return [json.dumps(header).encode() + b"\n", *blobs]


def _restore_blobs(value: Any, blobs: Sequence[bytes]) -> Any:
    if isinstance(value, dict):
        if set(value) == {"__blob__"}:
            return blobs[int(value["__blob__"])]  # IndexError/ValueError: not a message of the harness
        return {key: _restore_blobs(item, blobs) for key, item in value.items()}
    if isinstance(value, list):
        return [_restore_blobs(item, blobs) for item in value]
    return value


# ----------------------------------------------------------------------------------------------------
# Worker side: runs inside the sandboxed process.


class ReferenceCache:
    """Reference outputs per (task source, cases, seeds, timed), least recently used first out."""

    def __init__(self, max_tasks: int = 8) -> None:
        self.entries: OrderedDict[str, Any] = OrderedDict()
        self.fingerprints: dict[str, list[float]] = {}
        self.max_tasks = max_tasks
        self.builds = 0
        self.hits = 0
        self.tampered = False  # a cached entry failed its fingerprint: the worker must go

    def get(self, job: dict[str, Any], device: Any, channel: Any, key: str) -> Any:
        """The task's plan for `key` (`judge.reference_key`); built and sealed again when the parent no
        longer holds its expected outputs (`job["sealed_scopes"]`: its cache is bounded too)."""
        from toolchain.triton_worker import build_reference

        cached = self.entries.get(key)
        if cached is not None and key not in job.get("sealed_scopes", ()):
            del self.entries[key]
            cached = None
        if cached is not None:
            if cached.fingerprint() == self.fingerprints[key]:
                self.entries.move_to_end(key)
                self.hits += 1
                return cached
            self.tampered = True  # someone changed expected outputs: rebuild now, restart after this job
            del self.entries[key]
        reference = build_reference(job, device, channel, key)
        self.builds += 1
        if not isinstance(reference, dict):
            self.entries[key] = reference
            self.fingerprints[key] = reference.fingerprint()
            while len(self.entries) > self.max_tasks:
                old, _ = self.entries.popitem(last=False)
                self.fingerprints.pop(old, None)
        return reference


def process_state() -> dict[str, Any]:
    """What a candidate could leave changed for the next one, beyond the patch snapshot."""
    import torch

    return {
        "cwd": os.getcwd(),
        "env": dict(os.environ),
        "path": list(sys.path),
        "meta_path": [repr(finder) for finder in sys.meta_path],
        "path_hooks": [repr(hook) for hook in sys.path_hooks],
        "trace": repr(sys.gettrace()) + repr(sys.getprofile()),
        "threads": threading.active_count(),
        "dtype": str(torch.get_default_dtype()),
        "grad": torch.is_grad_enabled(),
        "deterministic": torch.are_deterministic_algorithms_enabled(),
        "candidates": sorted(name for name in sys.modules if name.startswith("kv_candidate")),
    }


def _restart_reason(kind: str, result: dict[str, Any], snapshot: Any, baseline: dict[str, Any],
                    references: ReferenceCache) -> str | None:  # fmt: skip
    if result.get("failure_kind") == "integrity_reject":
        return "integrity_reject"
    message = str(result.get("failure_message") or "").lower()
    if any(marker in message for marker in STICKY_DEVICE_ERRORS):
        return "device_error"
    changed = snapshot.changed()
    if changed:
        return f"patched: {', '.join(changed[:3])}"
    now = process_state()
    different = [name for name in baseline if now[name] != baseline[name]]
    if "env" in different:
        keys = set(now["env"]) | set(baseline["env"])
        different.append(str(sorted(k for k in keys if now["env"].get(k) != baseline["env"].get(k))[:3]))
    if different:
        return f"state_changed: {', '.join(different)}"
    if references.tampered:
        return "reference_tampered"
    return None


def serve(kind: str) -> int:
    from toolchain.triton_worker import read_seal

    key = read_seal().encode()  # before anything else: no candidate code exists yet
    replies = os.fdopen(int(os.environ.pop("KV_RESULT_FD")), "wb")
    import torch

    from toolchain.cross_compile import compile_launches
    from toolchain.integrity import PatchSnapshot, patch_targets
    from toolchain.judge import ParentChannel
    from toolchain.triton_worker import verify_job

    torch.set_grad_enabled(True)
    references = ReferenceCache()
    if kind == "check":
        import toolchain.compare
        import toolchain.judge
        import toolchain.timing
        import toolchain.triton_worker

        modules = [toolchain.triton_worker, toolchain.compare, toolchain.timing, toolchain.judge]
    else:
        modules = []
    snapshot = PatchSnapshot(patch_targets(modules))
    baseline = process_state()
    replies.write(json.dumps({"ready": True}).encode() + b"\n")
    replies.flush()
    current = {"id": 0}

    def send(body: dict[str, Any]) -> None:  # one authenticated message for the job in hand
        for part in encode_message(key, current["id"], body):
            replies.write(part)
        replies.flush()

    channel = ParentChannel(send, sys.stdin)
    while line := sys.stdin.readline():
        message = json.loads(line)
        job = message["job"]
        current["id"] = message["id"]
        try:
            result = verify_job(job, channel, references) if kind == "check" else compile_launches(job)
        except BaseException as error:  # noqa: BLE001 - a harness bug must still leave a result
            result = {"failure_kind": "infrastructure_error", "failure_message": f"worker error: {error!r}",
                      "ok": False, "kernels": [], "log": f"worker error: {error!r}", "harness_error": True}  # fmt: skip
        reason = _restart_reason(kind, result, snapshot, baseline, references)
        result["worker"] = {"restart": reason, "reference_builds": references.builds,
                            "reference_hits": references.hits, "pid": os.getpid()}  # fmt: skip
        send({**result, "type": "result"})
        if reason is not None:
            return 0  # the parent replaces us; exiting now frees the device sooner
    return 0


# ----------------------------------------------------------------------------------------------------
# Parent side.


@dataclass
class WorkerStats:
    jobs: int = 0
    starts: int = 0
    retries: int = 0
    reference_builds: int = 0
    reference_hits: int = 0
    restarts: Counter[str] = field(default_factory=Counter)
    start_seconds: float = 0.0


class PersistentWorker:
    """One long-lived sandboxed worker process of one kind; `run` sends it a job and waits for the reply.

    Not thread-safe: one thread owns a worker (the process dies with the thread that started it, see
    `toolchain.sandbox`), and the executor gives each verification lane its own.
    """

    def __init__(self, kind: str, python: str, env: dict[str, str], limits: SandboxLimits,
                 restart_every: int = 50, gate: DeviceGate | None = None) -> None:  # fmt: skip
        self.kind = kind
        # the device's gate (`toolchain.device_gate`): checks beside other lanes' checks, timing alone
        self.gate = GateHold(gate) if gate is not None else None
        self.python = python
        self.env = env
        self.limits = limits
        self.restart_every = restart_every
        self.stats = WorkerStats()
        self._process: subprocess.Popen[bytes] | None = None
        self._home: Path | None = None
        self._replies = -1
        self._buffer = bytearray()
        self._scanned = 0  # bytes of _buffer already searched for a newline
        self._key = b""
        self._jobs_here = 0
        self._next_id = 0
        self._seen = (0, 0)  # the worker's own (builds, hits) counters at its last reply
        self._closed = False  # the reply pipe reached end of file: the worker is gone
        self.judge = Judge()  # the expected outputs the check worker sealed, and every comparison

    @property
    def pid(self) -> int | None:
        return self._process.pid if self._process is not None else None

    def _start(self) -> None:
        started = time.monotonic()
        self._home = Path(tempfile.mkdtemp(prefix=f"kv-{self.kind}-worker-"))
        self._key = os.urandom(32).hex().encode()
        read_end, write_end = os.pipe()
        widen_pipe(read_end)
        # The worker's lifetime CPU budget: the per-job wall clock is enforced here, per job.
        limits = SandboxLimits(self.limits.timeout_s, self.limits.memory_bytes, self.limits.file_bytes,
                               self.limits.cpu_threads, self.limits.no_network,
                               cpu_seconds=(self.limits.timeout_s * 2 + 10) * self.restart_every + 120)  # fmt: skip
        try:
            self._process = start_sandboxed(
                [self.python, "-m", "toolchain.device_worker", self.kind], self._home, limits,
                {**self.env, "KV_RESULT_FD": str(write_end),
                 # torch sets it lazily on first use; set here, so a change to it is the candidate's
                 "TORCHINDUCTOR_CACHE_DIR": str(self._home / "inductor")}, self._key, stdin=subprocess.PIPE,
                pass_fds=(write_end,),
            )  # fmt: skip
        finally:
            os.close(write_end)
        self._replies, self._buffer, self._jobs_here, self._seen = read_end, bytearray(), 0, (0, 0)
        self._scanned = 0
        self._closed = False
        self.stats.starts += 1
        ready = self._read_line(time.monotonic() + _STARTUP_TIMEOUT_S)
        self.stats.start_seconds += time.monotonic() - started
        if ready is None:
            run = self._stop(timed_out=False, seconds=time.monotonic() - started)
            detail = (run.stderr_tail.strip().splitlines() or ["(no output)"])[-1]
            raise RuntimeError(f"the {self.kind} worker did not start: {detail}")

    def _stop(self, timed_out: bool, seconds: float) -> SandboxResult:
        assert self._process is not None and self._home is not None
        kill_group(self._process)
        run = crash_result(self._process, self._home, timed_out, seconds)
        os.close(self._replies)
        if self._process.stdin is not None:
            self._process.stdin.close()
        shutil.rmtree(self._home, ignore_errors=True)
        self._process, self._home = None, None
        return run

    def _read_line(self, deadline: float) -> bytes | None:
        # Linear in the line's length: only bytes not yet searched are searched for the newline (the
        # header of a judged output used to be the whole output, in base64, hundreds of MB in 64 KiB pipe
        # reads; searching and copying the whole buffer per read was quadratic: 350 MB did not arrive in
        # 300 s).
        while (end := self._buffer.find(b"\n", self._scanned)) < 0:
            self._scanned = len(self._buffer)
            if not self._read_more(deadline):
                return None
        line = bytes(self._buffer[:end])
        del self._buffer[: end + 1]
        self._scanned = 0
        return line

    def _read_exact(self, size: int, deadline: float) -> bytes | None:
        """One binary part: what the buffer already holds, then read straight into the part's own memory
        (not appended to the buffer and sliced out of it: that copied each output twice more)."""
        have = min(size, len(self._buffer))
        if have == size:
            blob = bytes(self._buffer[:size])
            del self._buffer[:size]
            self._scanned = 0
            return blob
        part = bytearray(size)
        view = memoryview(part)
        view[:have] = self._buffer
        self._buffer.clear()
        self._scanned = 0
        while have < size:
            remaining = deadline - time.monotonic()
            if remaining <= 0 or not select.select([self._replies], [], [], remaining)[0]:
                return None
            count = os.readv(self._replies, [view[have:]])
            if not count:  # the worker exited mid-part
                self._closed = True
                return None
            have += count
        view.release()
        return bytes(part)  # unpack's reader takes bytes without copying them again

    def _read_more(self, deadline: float) -> bool:
        """Append what the worker has written to the buffer; False when out of time or the worker is gone."""
        remaining = deadline - time.monotonic()
        if remaining <= 0:
            return False
        ready, _, _ = select.select([self._replies], [], [], remaining)
        if not ready:
            return False
        chunk = os.read(self._replies, 1 << 20)
        if not chunk:  # the worker exited (or closed our pipe): not a timeout
            self._closed = True
            return False
        self._buffer += chunk
        return True

    def close(self) -> None:
        if self._process is not None:
            self._stop(timed_out=False, seconds=0.0)

    def restart(self, reason: str) -> None:
        self.stats.restarts[reason.split(":")[0]] += 1
        self.last_restart = reason
        self.close()

    def run(
        self, job: dict[str, Any], timeout_s: float | None = None
    ) -> tuple[SandboxResult, dict[str, Any] | None]:
        """Send one job; (how the wait ended, the authenticated result or None when the worker died or hung).

        The job's clock (`timeout_s`) counts the worker's time: not the worker's start, not the lane's waits
        at its device's gate, not the parent's unpacking and comparing while the worker waits for an answer.
        Raises RuntimeError when a fresh worker cannot start (our failure, not the candidate's).
        """
        if self._process is None:
            self._start()  # host work (imports): the device context is made in the job, inside the gate
        assert self._process is not None and self._process.stdin is not None
        try:
            if self.gate is not None:
                self.gate.check()
            return self._run_job(job, timeout_s)
        finally:
            if self.gate is not None:
                self.gate.release()

    def _run_job(
        self, job: dict[str, Any], timeout_s: float | None
    ) -> tuple[SandboxResult, dict[str, Any] | None]:
        assert self._process is not None
        self._next_id += 1
        job_id = self._next_id
        timeout = timeout_s if timeout_s is not None else self.limits.timeout_s
        started = time.monotonic()
        self.stats.jobs += 1
        self._jobs_here += 1
        check_scope = None
        if self.kind == "check":
            task_path = Path(job["task_path"])
            check_scope = reference_key(job, task_path.read_text()) if task_path.exists() else ""
            job = {**job, "sealed_scopes": self.judge.scopes()}
            self.judge.start_job()
        try:
            self._send({"id": job_id, "job": job})
            result = self._conversation(job_id, started + timeout)
        except OSError:  # BrokenPipeError: it died before reading the job (or a reply)
            result, self._closed = None, True
        seconds = time.monotonic() - started
        if result is None:
            timed_out = not self._closed
            if not timed_out:
                try:  # let it finish dying, so the crash report names its signal or exit code
                    self._process.wait(timeout=10)
                except subprocess.TimeoutExpired:
                    pass
            self.stats.restarts["timeout" if timed_out else "crash"] += 1
            return self._stop(timed_out, seconds), None
        ok = SandboxResult(0, None, False, seconds, "", "")
        if result is _FORGED:
            self.restart("forged")
            return ok, {"failure_kind": "integrity_reject", "ok": False, "kernels": [], "log": "forged result",
                        "failure_message": "forged_result: the reply was not written by the harness"}  # fmt: skip
        assert isinstance(result, dict)
        if check_scope is not None:
            timed = [case["name"] for case in job["performance_cases"]] if job.get("timed") else []
            result = self.judge.overrule(result, check_scope, timed)
            self.judge.job.costs.gate_seconds = self.gate.waited if self.gate is not None else 0.0
            result["protocol_costs"] = self.judge.job.costs  # the parent's measurement replaces any sent
        state = result.pop("worker", {})
        builds, hits = int(state.get("reference_builds", 0)), int(state.get("reference_hits", 0))
        self.stats.reference_builds += builds - self._seen[0]
        self.stats.reference_hits += hits - self._seen[1]
        self._seen = (builds, hits)
        if state.get("restart"):
            self.restart(str(state["restart"]))
        elif self._jobs_here >= self.restart_every:
            self.restart("hygiene")
        return ok, result

    def _send(self, message: dict[str, Any]) -> None:
        assert self._process is not None and self._process.stdin is not None
        self._process.stdin.write((json.dumps(message) + "\n").encode())
        self._process.stdin.flush()

    def _conversation(self, job_id: int, deadline: float) -> dict[str, Any] | object | None:
        """Answer the worker's seal and judge messages until its result: the result, _FORGED, or None
        (the worker died or the deadline passed)."""
        costs = self.judge.job.costs
        while True:
            body = self._read_message(job_id, deadline)
            if body is None or body is _FORGED:
                return body
            assert isinstance(body, dict)
            kind = body.get("type")
            if kind in ("seal", "judge", "timed"):
                timed_seal = kind == "seal" and str(body.get("scope", "")).startswith("job:timed/")
                if self.gate is not None:  # the lane's wait for the device, not the candidate's: not charged
                    deadline += self.gate.at_message(timed_seal)
                answered = time.monotonic()
                if timed_seal:
                    costs.first_timed_at = costs.first_timed_at or answered
                self._send(self.judge.answer(body))
                costs.messages += 1
                spent = time.monotonic() - answered
                costs.answer_seconds += spent
                # The worker waited while the parent unpacked and compared: the parent's work, not the
                # candidate's, so not on the candidate's clock (lanes sharing a parent slow each other here).
                deadline += spent
                if kind == "timed" and costs.first_timed_at is not None:
                    costs.timed_seconds = time.monotonic() - costs.first_timed_at
                continue
            body.pop("type", None)
            return body

    def _read_message(self, job_id: int, deadline: float) -> dict[str, Any] | object | None:
        """One message of `encode_message`'s form: its body, _FORGED, or None (died, or out of time)."""
        line = self._read_line(deadline)
        if line is None:
            return None
        try:
            reply = json.loads(line)
            sizes = reply["blobs"]
            if not (isinstance(sizes, list) and all(type(size) is int and size >= 0 for size in sizes)):
                return _FORGED
        except (ValueError, KeyError, TypeError):
            return _FORGED
        if sum(sizes) > _MAX_MESSAGE_BYTES:
            return _FORGED  # not sent by the harness: it never ships one output of this size
        blobs = []
        reading = time.monotonic()
        for size in sizes:
            blob = self._read_exact(size, deadline)
            if blob is None:
                return None
            blobs.append(blob)
        if self.kind == "check" and sizes:
            costs = self.judge.job.costs
            costs.transfer_seconds += time.monotonic() - reading
            costs.megabytes += sum(sizes) / 1e6
        try:
            authentic = reply["id"] == job_id and hmac.compare_digest(
                reply["mac"], _mac(self._key, job_id, reply["body"], blobs)
            )
            body = _restore_blobs(json.loads(reply["body"]), blobs) if authentic else None
        except (ValueError, KeyError, TypeError, IndexError):
            body = None
        return body if isinstance(body, dict) else _FORGED


_FORGED = object()  # a reply that failed authentication


def worker_kind(module: str) -> str:
    """The worker kind that runs a job the verifier addresses to `module`."""
    return "check" if module == "toolchain.triton_worker" else "cross_compile"


class WorkerLane:
    """The persistent workers of one device (a check worker; on cpu also a cross-compile worker).

    Plugs into `Verifier.verify(..., runner=lane)` in place of a fresh process per worker run. A crash
    (not a timeout) is retried once on a fresh worker: a worker killed from outside costs a retry, while a
    candidate that crashes its worker twice gets the crash as its verdict, as it would in a fresh process.
    """

    def __init__(self, python: str = sys.executable, device: str = "cpu", restart_every: int = 50,
                 gate: DeviceGate | None = None) -> None:  # fmt: skip
        self.python = python
        self.device = device
        self.restart_every = restart_every
        # Lanes of one device in this process share its gate: their checks overlap, their timings do not.
        self.gate = gate if gate is not None else gate_for(device)
        self.workers: dict[str, PersistentWorker] = {}
        self._jobs = 0

    def run(self, module: str, job: dict[str, Any], workdir: Path, limits: SandboxLimits,
            env: dict[str, str]) -> tuple[SandboxResult, dict[str, Any] | None]:  # fmt: skip
        kind = worker_kind(module)
        worker = self.workers.get(kind)
        if worker is None:
            device_env = {} if self.device == "cpu" else {"CUDA_VISIBLE_DEVICES": self.device,
                                                          "HIP_VISIBLE_DEVICES": self.device}  # fmt: skip
            worker = PersistentWorker(kind, self.python, {**env, **device_env}, limits, self.restart_every,
                                      gate=self.gate if kind == "check" else None)  # fmt: skip
            self.workers[kind] = worker
        self._jobs += 1
        job = {
            **job,
            "module_name": f"kv_candidate_{os.getpid()}_{id(self)}_{self._jobs}",
            "persistent": True,
        }
        task_path = Path(job.get("task_path", workdir / "task.py"))
        task_source = task_path.read_text() if task_path.exists() else None
        run, result = worker.run(job, limits.timeout_s)
        if result is None and not run.timed_out:
            worker.stats.retries += 1
            if task_source is not None:  # the first try deleted it after loading the reference
                task_path.write_text(task_source)
            if kind == "check" and job.get("launches_path"):  # the check writes them afresh
                Path(job["launches_path"]).write_text("")
            run, result = worker.run(job, limits.timeout_s)
        return run, result

    def stats(self) -> dict[str, WorkerStats]:
        return {kind: worker.stats for kind, worker in self.workers.items()}

    def close(self) -> None:
        for worker in self.workers.values():
            worker.close()


if __name__ == "__main__":
    sys.exit(serve(sys.argv[1]))

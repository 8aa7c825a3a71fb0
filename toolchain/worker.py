"""One long-lived jailed worker process: `PersistentWorker`, started under the sandbox, answering requests.

Each worker is `python -m kernelvault.toolchain.sandboxed.serve KIND` started under the sandbox
(`kernelvault.toolchain.sandbox`: limits, allow-listed environment, own process group, dies with its parent) inside
its own jail (`kernelvault.toolchain.jail`) where the machine allows one, and answers requests over a pipe until it
is replaced. It does not decide anything: the lane (`kernelvault.toolchain.worker_lane`) says which jobs it runs and
when it is replaced, and the judge (`kernelvault.toolchain.judge`) what its replies mean.

Replies are authenticated per request: the worker reads a key from an inherited pipe before any candidate
exists and replies `HMAC(key, request id, body)` on a dedicated pipe. A reply for another request, a torn
reply or a wrong MAC is a forged result (integrity_reject) and the worker is replaced.
"""

from __future__ import annotations

import hmac
import json
import os
import select
import shutil
import socket
import subprocess
import sys
import tempfile
import time
from collections import Counter
from dataclasses import dataclass, field
from pathlib import Path
from typing import IO, Any

from kernelvault.toolchain.jail import (
    ISOLATION_PROCESS,
    Isolation,
    gpu_device_nodes,
)
from kernelvault.toolchain.sandbox import (
    SandboxLimits,
    SandboxResult,
    crash_result,
    folder_jail,
    kill_group,
    start_sandboxed,
)
from kernelvault.toolchain.sandboxed.bundles import BundleInbox, bundle_socketpair
from kernelvault.toolchain.sandboxed.channel import mac
from kernelvault.toolchain.sandboxed.requests import Request, to_wire

_STARTUP_TIMEOUT_S = 300.0  # importing torch and triton on a loaded 2-core machine can take a minute
_MAX_REPLY_BYTES = 64 << 20  # a reply is a JSON header with paths and numbers: more is not the harness's
KINDS = ("candidate", "reference", "cross_compile")


@dataclass
class WorkerStats:
    jobs: int = 0
    starts: int = 0
    retries: int = 0
    restarts: Counter[str] = field(default_factory=Counter)
    start_seconds: float = 0.0  # how long requests waited for a process to be ready (a ready spare: ~0)


@dataclass(frozen=True)
class _Spawned:
    """A started worker process, maybe not ready yet: what `PersistentWorker` needs to adopt it."""

    process: subprocess.Popen[bytes]
    home: Path
    uid: int | None
    key: bytes
    replies: int  # the read end of its reply pipe
    started: float  # time.monotonic() of the start
    bundles: socket.socket  # the parent's end of its bundle channel (outputs as shared memory: `bundles`)


@dataclass(frozen=True)
class WorkerPlan:
    """How a lane's workers are started: where, under which isolation, seeing what."""

    python: str = sys.executable
    isolation: Isolation = field(default_factory=lambda: Isolation(ISOLATION_PROCESS, "not probed"))
    work_root: str | None = None  # where worker homes are made (None: the system's temp folder)
    read_only: tuple[str, ...] = ()  # beyond the Python installation: shared caches (the HIP libraries)
    gpu: bool = False  # bind the GPU's device nodes


def _hand_to(path: Path, uid: int | None) -> None:
    """A folder the jailed process must write: owned by its uid (as root, the jail's uid is its own; None: no
    jail of its own uid, nothing to change)."""
    if uid is not None:
        os.chown(path, uid, uid)


def _parent_device(worker_visible: str | None) -> Any:
    """This process's torch device for the GPU that a worker started with CUDA_VISIBLE_DEVICES=`worker_visible`
    sees as its device 0."""
    import torch

    if worker_visible is None:
        return torch.device("cuda", 0)
    mine = os.environ.get("CUDA_VISIBLE_DEVICES")
    order = [entry.strip() for entry in mine.split(",")] if mine else None
    if order is not None:
        if worker_visible not in order:
            raise RuntimeError(f"a worker's GPU {worker_visible!r} is not among this process's ({mine!r})")
        return torch.device("cuda", order.index(worker_visible))
    if not worker_visible.isdigit():
        raise RuntimeError(f"cannot map a worker's GPU {worker_visible!r} to one of this process's")
    return torch.device("cuda", int(worker_visible))


def close_request_pipe(pipe: IO[bytes]) -> None:
    """Close the pipe requests go down. A request the worker never read may still be in its buffer, with no
    reader left to take it: closing tries to write it, fails (BrokenPipeError) and closes the pipe anyway. That
    failure is the dead worker's, already handled; raised here, it would leave the worker half-stopped, and
    every later request of the lane would fail on the closed pipe."""
    try:
        pipe.close()
    except OSError:
        pass


class PersistentWorker:
    """One long-lived worker process of one kind; `request` sends it one request and waits for the reply.

    Not thread-safe: one thread owns a worker (the process dies with the thread that started it, see
    `kernelvault.toolchain.sandbox`), and the executor gives each verification lane its own.
    """

    def __init__(self, kind: str, env: dict[str, str], limits: SandboxLimits, plan: WorkerPlan,
                 restart_every: int = 50, spare: bool = False) -> None:  # fmt: skip
        self.kind = kind
        # Keep a second process started and ready: a replaced worker (after an integrity reject, a changed
        # process, hygiene) is then swapped for it at once instead of waiting for a start (jail, interpreter,
        # torch: 8.6 s each on the H200, for 27 of 99 answers of a TritonBench chunk). It is a process like the
        # others (its own jail, uid, key and home), started by the same thread, and no candidate ran in it.
        self.spare = spare
        self._spare: _Spawned | None = None
        self.env = env
        self.limits = limits
        self.plan = plan
        self.restart_every = restart_every
        self.stats = WorkerStats()
        self.last_run: SandboxResult | None = None  # how the process ended, when a request got no reply
        self.last_restart: str | None = None
        self._process: subprocess.Popen[bytes] | None = None
        self._home: Path | None = None
        self._uid: int | None = None
        self._replies = -1
        self._bundle_channel: socket.socket | None = None
        self._bundles: BundleInbox | None = None
        self._buffer = bytearray()
        self._key = b""
        self._jobs_here = 0
        self._next_id = 0
        self._job_number = 0
        self._retiring: str | None = None  # the process goes after this job (`retire`)
        self._stale_homes: list[Path] = []  # homes of stopped processes, removed once their job is finished
        self._job_homes: dict[int, Path] = {}  # job number -> the home its folder is in

    @property
    def pid(self) -> int | None:
        return self._process.pid if self._process is not None else None

    @property
    def spare_pid(self) -> int | None:
        return self._spare.process.pid if self._spare is not None else None

    @property
    def jailed(self) -> bool:
        return self.plan.isolation.jailed

    # -- start and stop ------------------------------------------------------------------------------

    def _own(self, path: Path) -> None:
        """Folders the current process must write (`_hand_to`)."""
        _hand_to(path, self._uid)

    def _spawn(self) -> _Spawned:
        """Start a process (its home, its jail, its key) without waiting for it to be ready."""
        if self.plan.work_root:
            Path(self.plan.work_root).mkdir(parents=True, exist_ok=True)
        home = Path(tempfile.mkdtemp(prefix=f"kv-{self.kind}-", dir=self.plan.work_root))
        (home / "in").mkdir()
        home.chmod(0o755)
        devices = gpu_device_nodes() if self.plan.gpu else ()
        jail = folder_jail(self.plan.isolation, home, (*self.plan.read_only, str(home / "in")), devices)
        uid = jail.uid if jail is not None and not self.plan.isolation.rootless else None
        self._make_caches(home, uid)
        key = os.urandom(32).hex().encode()
        read_end, write_end = os.pipe()
        bundles, bundles_end = bundle_socketpair()
        # The worker's lifetime CPU budget: the per-job wall clock is enforced here, per request.
        limits = SandboxLimits(self.limits.timeout_s, self.limits.memory_bytes, self.limits.file_bytes,
                               self.limits.cpu_threads, self.limits.no_network,
                               cpu_seconds=(self.limits.timeout_s * 2 + 10) * self.restart_every + 120)  # fmt: skip
        env = {**self.env, "KV_RESULT_FD": str(write_end), "KV_BUNDLE_FD": str(bundles_end.fileno()),
               "TRITON_CACHE_DIR": str(home / "cache" / "triton"),
               # torch sets it lazily on first use; set here, so a change to it is the candidate's
               "TORCHINDUCTOR_CACHE_DIR": str(home / "cache" / "inductor")}  # fmt: skip
        try:
            process = start_sandboxed([self.plan.python, "-m", f"{__package__}.sandboxed.serve", self.kind], home,
                                      limits, env, key, stdin=subprocess.PIPE,
                                      pass_fds=(write_end, bundles_end.fileno()), jail=jail)  # fmt: skip
        except BaseException:
            os.close(read_end)
            bundles.close()
            shutil.rmtree(home, ignore_errors=True)
            raise
        finally:
            os.close(write_end)
            bundles_end.close()
        self.stats.starts += 1
        return _Spawned(process, home, uid, key, read_end, time.monotonic(), bundles)

    def _start(self) -> None:
        """Make a ready process the current one: the spare where there is one, else a new one (waited for);
        then start the next spare, which gets ready while this one works."""
        waited = time.monotonic()
        spawned, self._spare = self._spare or self._spawn(), None
        self._process, self._home, self._uid, self._key = (
            spawned.process,
            spawned.home,
            spawned.uid,
            spawned.key,
        )
        self._replies, self._buffer, self._jobs_here = spawned.replies, bytearray(), 0
        self._bundle_channel, self._bundles = spawned.bundles, None
        ready = self._read_line(spawned.started + _STARTUP_TIMEOUT_S)
        self.stats.start_seconds += time.monotonic() - waited
        if ready is None:
            run = self._stop(timed_out=False, seconds=time.monotonic() - spawned.started)
            detail = (run.stderr_tail.strip().splitlines() or ["(no output)"])[-1]
            raise RuntimeError(f"the {self.kind} worker did not start: {detail}")
        if self.spare:
            self._spare = self._spawn()

    def _stop(self, timed_out: bool, seconds: float) -> SandboxResult:
        """Kill the process (its jail goes with it). Its home stays until the job in hand is finished: the
        parent still reads what the job left there (the kernels a crashed candidate launched)."""
        assert self._process is not None and self._home is not None
        kill_group(self._process)
        run = crash_result(self._process, self._home, timed_out, seconds)
        assert self._bundle_channel is not None
        self._release(self._process, self._replies, self._home, self._bundle_channel)
        self._process, self._home, self._uid = None, None, None
        self._bundle_channel = None
        return run

    def _release(
        self, process: subprocess.Popen[bytes], replies: int, home: Path, bundles: socket.socket
    ) -> None:
        """Close a killed process's pipes and bundle channel; its home goes once the job in hand is finished."""
        os.close(replies)
        if self._bundles is not None and self._bundles.channel is bundles:
            self._bundles.close()
            self._bundles = None
        bundles.close()
        if process.stdin is not None:
            close_request_pipe(process.stdin)
        self._stale_homes.append(home)

    def _remove_stale_homes(self) -> None:
        for home in self._stale_homes:
            shutil.rmtree(home, ignore_errors=True)
        self._stale_homes.clear()

    def stop_for_timeout(self, seconds: float) -> SandboxResult:
        self.stats.restarts["timeout"] += 1
        self.last_run = self._stop(timed_out=True, seconds=seconds) if self._process is not None else None
        return self.last_run or SandboxResult(None, None, True, seconds, "", "")

    def close(self) -> None:
        if self._process is not None:
            self._stop(timed_out=False, seconds=0.0)
        if self._spare is not None:
            self._drop_spare()
        self._remove_stale_homes()

    def _drop_spare(self) -> None:
        assert self._spare is not None
        kill_group(self._spare.process)
        self._release(self._spare.process, self._spare.replies, self._spare.home, self._spare.bundles)
        self._spare = None

    def replace_if_exited(self) -> None:
        """Between jobs: stop a process (and drop a spare) that has exited since its last job, so that the next
        job starts a fresh one instead of sending its first request down a dead pipe. Nothing of ours ends a
        worker while it waits (`retire` and hygiene stop it at a job's end), so such an exit came from outside:
        the OOM killer, an operator, or the death signal Linux sends when the thread that started the process
        exits (`kernelvault.toolchain.sandbox`). The next job is not charged for it: no retry is spent on it
        and, for the reference's worker, no infrastructure_error."""
        if self._process is not None and self._process.poll() is not None:
            self.stats.restarts["exited"] += 1
            self._stop(timed_out=False, seconds=0.0)
            self._remove_stale_homes()  # no job is in hand: nothing is left to read in its home
        if self._spare is not None and self._spare.process.poll() is not None:
            self._drop_spare()  # adopted, it would fail its start: "the worker did not start"

    def restart(self, reason: str) -> None:
        """Stop the process now (the spare, or a fresh one, takes the next request)."""
        self.stats.restarts[reason.split(":")[0]] += 1
        self.last_restart = reason
        self._retiring = None
        if self._process is not None:
            self._stop(timed_out=False, seconds=0.0)
        self._remove_stale_homes()

    def retire(self, reason: str) -> None:
        """Stop the process when the job in hand is finished (its folder is still to be read)."""
        self._retiring = self._retiring or reason

    # -- jobs' folders -------------------------------------------------------------------------------

    def ensure_started(self) -> None:
        if self._process is None:
            self._start()

    def next_job_number(self) -> int:
        self.ensure_started()
        self._job_number += 1
        return self._job_number

    def job_folder(self, number: int) -> Path:
        """This worker's folder for job `number` (made on first use; the worker may write in it)."""
        home = self._job_homes.get(number)
        if home is None:
            self.ensure_started()
            assert self._home is not None
            home = self._job_homes[number] = self._home
        folder = home / f"job-{number}"
        if not folder.exists():
            folder.mkdir()
            (folder / "out").mkdir()
            self._own(folder)
            self._own(folder / "out")
        return folder

    def inbox(self) -> Path:
        """Where the parent puts files for this worker to read (read-only inside its jail)."""
        assert self._home is not None
        return self._home / "in"

    def bundles(self) -> BundleInbox:
        """What this worker sent as shared memory (`Forward.share`): mapped on the parent's ordinal of the
        worker's GPU (the worker sees it as device 0), or as sealed memfds on the CPU."""
        self.ensure_started()
        assert self._bundle_channel is not None
        if self._bundles is None or self._bundles.channel is not self._bundle_channel:
            import torch

            device = (
                _parent_device(self.env.get("CUDA_VISIBLE_DEVICES")) if self.plan.gpu else torch.device("cpu")
            )
            self._bundles = BundleInbox(
                self._bundle_channel, "cuda" if device.type == "cuda" else "host", device
            )
        return self._bundles

    def drop_bundles(self) -> None:
        """Close everything this worker's bundle channel holds (a job's end): opened blocks and unopened ones."""
        if self._bundles is not None:
            self._bundles.collect()
            self._bundles.close()
            self._bundles = None

    def private_cache(self) -> Path:
        assert self._home is not None
        return self._home / "cache"

    def _make_caches(self, home: Path, uid: int | None) -> None:
        for folder in ("cache", "cache/triton", "cache/inline"):  # the home itself: folder_jail
            (home / folder).mkdir(exist_ok=True)
            _hand_to(home / folder, uid)

    def finish_job(self, number: int) -> None:
        """Everything the job wrote goes (its folder, the inbox, the caches, anything else in the home);
        after `restart_every` jobs the process goes too (hygiene).

        The caches go with the job because a candidate's process writes them: a Triton binary or a
        load_inline build left by one candidate must never be loaded by the next one in this worker (it
        would answer for code it did not compile). Recompiling costs about a second per Triton kernel."""
        self.stats.jobs += 1
        self._jobs_here += 1
        home = self._job_homes.pop(number, None)
        if home is not None and home == self._home:
            for entry in home.iterdir():
                if entry.name == "in":
                    for item in entry.iterdir():
                        item.unlink(missing_ok=True)
                elif entry.is_dir() and not entry.is_symlink():
                    shutil.rmtree(entry, ignore_errors=True)
                else:
                    entry.unlink(missing_ok=True)
            self._make_caches(home, self._uid)
        self._remove_stale_homes()
        if self._process is not None and self._retiring is not None:
            self.restart(self._retiring)
        elif self._process is not None and self._jobs_here >= self.restart_every:
            self.restart("hygiene")

    # -- requests ------------------------------------------------------------------------------------

    def request(self, request: Request, timeout_s: float) -> dict[str, Any] | None:
        """Send one request; the authenticated reply, or None when the worker died or ran past timeout_s
        (then `last_run` says how it ended, and the process is gone). A forged reply is an integrity
        failure of the candidate, and the worker is replaced. Raises RuntimeError when a fresh worker
        cannot start (our failure, not the candidate's)."""
        self.ensure_started()
        assert self._process is not None and self._process.stdin is not None
        self._next_id += 1
        request_id = self._next_id
        started = time.monotonic()
        try:
            message = {"id": request_id, "body": to_wire(request)}
            self._process.stdin.write((json.dumps(message) + "\n").encode())
            self._process.stdin.flush()
            line = self._read_line(started + timeout_s)
        except OSError:  # BrokenPipeError: it died before reading the request
            line = None
        if line is None:
            timed_out = self._process.poll() is None and time.monotonic() - started >= timeout_s
            if not timed_out:
                try:  # let it finish dying, so the crash report names its signal or exit code
                    self._process.wait(timeout=10)
                except subprocess.TimeoutExpired:
                    pass
            self.stats.restarts["timeout" if timed_out else "crash"] += 1
            self.last_run = self._stop(timed_out, time.monotonic() - started)
            return None
        reply = self._authentic(line, request_id)
        if reply is None:
            self.retire("forged")
            return {"failure_kind": "integrity_reject", "ok": False,
                    "failure_message": "forged_result: the reply was not written by the harness"}  # fmt: skip
        reason = reply.pop("restart", None)
        if reason:
            self.retire(str(reason))  # it exits by itself after this reply
        return reply

    def _authentic(self, line: bytes, request_id: int) -> dict[str, Any] | None:
        try:
            header = json.loads(line)
            authentic = header["id"] == request_id and hmac.compare_digest(
                str(header["mac"]), mac(self._key, request_id, str(header["body"]))
            )
            body = json.loads(header["body"]) if authentic else None
        except (ValueError, KeyError, TypeError):
            return None
        return body if isinstance(body, dict) else None

    def _read_line(self, deadline: float) -> bytes | None:
        while (end := self._buffer.find(b"\n")) < 0:
            if len(self._buffer) > _MAX_REPLY_BYTES:
                return b"{}"  # not the harness's: fails authentication
            remaining = deadline - time.monotonic()
            if remaining <= 0 or not select.select([self._replies], [], [], remaining)[0]:
                return None
            chunk = os.read(self._replies, 1 << 16)
            if not chunk:  # the worker exited (or closed our pipe)
                return None
            self._buffer += chunk
        line = bytes(self._buffer[:end])
        del self._buffer[: end + 1]
        return line

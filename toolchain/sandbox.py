"""Run untrusted candidate code in a separate process, with limits, and report what happened.

Two layers. The jail (`kernelvault.toolchain.jail`, where the OS allows it: Linux with user namespaces, or root) is the
wall: its own namespaces, an unprivileged user, a read-only system, a private /tmp, a seccomp filter, and
every process of the job killed with it. Around it, this module keeps what holds with or without a jail:

- crashes (segfault, abort, illegal memory access) and hangs: the child is a separate process with a
  wall-clock timeout, a CPU-time limit (RLIMIT_CPU), and its own process group, killed whole;
- runaway memory on CPU (RLIMIT_AS; GPU runtimes need the address space, so not there), disk filling
  (RLIMIT_FSIZE per file), endless output (stdout/stderr go to files, read back trimmed), core dumps, and
  in a jail of its own uid, a process count (RLIMIT_NPROC);
- credentials: the child gets an allow-listed environment (no OPENAI_API_KEY, HF_TOKEN, *_TOKEN,
  *_KEY, AWS_*: nothing outside the list), HOME in its own folder;
- orphans: the child dies with the process that started it (PR_SET_PDEATHSIG), so a killed run leaves
  no candidate running;
- forged results: the harness signs its replies with a key passed through an inherited pipe.

Without a jail (`Isolation.level == "process"`) the child can read every file the user can read, write
outside its folder by means below Python, see other processes in /proc and, as root, leave its network
namespace. The verdict records which of the two a candidate ran under.
"""

from __future__ import annotations

import ctypes
import os
import resource
import signal
import subprocess
import sys
import time
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass
from pathlib import Path

from kernelvault.toolchain.jail import (
    ISOLATION_JAIL,
    Isolation,
    JailSpec,
    device_groups,
    jail_command,
    next_jail_uid,
    python_read_only_paths,
)

# Variables a worker may inherit. Everything else (OPENAI_API_KEY, HF_TOKEN, AWS_*, ...) is dropped.
_ALLOWED_ENV = (
    "PATH", "LANG", "LC_ALL", "TZ", "TMPDIR", "PYTHONPATH", "VIRTUAL_ENV", "LD_LIBRARY_PATH",
    "CUDA_VISIBLE_DEVICES", "HIP_VISIBLE_DEVICES", "ROCR_VISIBLE_DEVICES", "CUDA_HOME", "ROCM_PATH",
    "HIP_PLATFORM", "TRITON_PTXAS_PATH", "TRITON_HIP_LLD_PATH", "OPENBLAS_CORETYPE", "OPENBLAS_L2_SIZE",
    "NCCL_NVLS_ENABLE", "TORCH_SYMM_MEM_DISABLE_MULTICAST", "NVSHMEM_DISABLE_NVLS",
    "KV_LIBSECCOMP",  # where the jail's launcher finds libseccomp when the system has none (a path)
)  # fmt: skip
_TAIL_BYTES = 8000
_PR_SET_PDEATHSIG = 1
_CLONE_NEWNET = 0x40000000
# Loaded once in the parent: the child only calls prctl between fork and exec. The process's own symbols (libc's
# among them), not `ctypes.util.find_library`, which starts a process: a candidate's worker imports this module.
_LIBC = ctypes.CDLL(None, use_errno=True) if sys.platform.startswith("linux") else None


def die_with_parent(parent_pid: int) -> None:
    """Make this process die when `parent_pid` does: an initializer for the pipeline's own helper processes.

    A process pool's workers block on their call queue, and a parent killed with SIGKILL never closes it:
    without this they outlive a killed run, each holding its imports' memory. The death signal follows
    the thread that started the process, so start pools from a thread that outlives them. If the parent
    died before the signal was armed, exit now."""
    if _LIBC is not None:
        _LIBC.prctl(_PR_SET_PDEATHSIG, signal.SIGKILL)
    if os.getppid() != parent_pid:
        os._exit(1)


@dataclass(frozen=True)
class SandboxLimits:
    timeout_s: float = 120.0
    memory_bytes: int | None = (
        8 << 30
    )  # address-space limit; must be None for CUDA/ROCm (they map huge ranges)
    file_bytes: int = 1 << 30
    cpu_threads: int = 1  # torch/OpenMP threads inside the worker: pools run one worker per core
    no_network: bool = True  # run in an empty network namespace where the OS allows it (root, Linux)
    cpu_seconds: float | None = None  # RLIMIT_CPU over the whole process; None: 2 × timeout_s + 10
    processes: int = (
        1024  # RLIMIT_NPROC of a jail's own uid (threads count: CUDA, ptxas, ninja and nvcc need some)
    )


@dataclass(frozen=True)
class SandboxResult:
    returncode: int | None  # None on timeout
    signal_name: str | None  # "SIGSEGV" when killed by a signal
    timed_out: bool
    seconds: float
    stdout_tail: str
    stderr_tail: str


def worker_environment(extra: Mapping[str, str] | None = None, threads: int = 1) -> dict[str, str]:
    env = {key: os.environ[key] for key in _ALLOWED_ENV if key in os.environ}
    env.update({"OMP_NUM_THREADS": str(threads), "MKL_NUM_THREADS": str(threads), "PYTHONUNBUFFERED": "1"})
    env.update(extra or {})
    return env


def _tail(path: Path) -> str:
    try:
        with path.open("rb") as handle:
            handle.seek(0, os.SEEK_END)
            size = handle.tell()
            handle.seek(max(0, size - _TAIL_BYTES))
            return handle.read().decode("utf-8", errors="replace")
    except OSError:
        return ""


def _limits_in_child(limits: SandboxLimits, jailed: bool) -> Callable[[], None]:
    def apply_limits() -> None:  # runs in the child between fork and exec
        if _LIBC is not None:
            # Die with the pipeline: a killed run (kill -9 included) must not leave candidates running.
            # Linux sends it when the *thread* that started the child exits: start workers from long-lived threads.
            _LIBC.prctl(_PR_SET_PDEATHSIG, signal.SIGKILL)
        resource.setrlimit(resource.RLIMIT_CORE, (0, 0))
        # A spinning candidate cannot outlive its wall clock by much; long-lived workers pass their lifetime budget.
        cpu_seconds = int(limits.cpu_seconds if limits.cpu_seconds is not None else limits.timeout_s * 2 + 10)
        resource.setrlimit(resource.RLIMIT_CPU, (cpu_seconds, cpu_seconds + 5))
        if limits.no_network and _LIBC is not None and not jailed:
            _LIBC.unshare(
                _CLONE_NEWNET
            )  # a private network namespace with no interfaces; fails quietly unprivileged
        if jailed and os.geteuid() == 0:  # the jail runs as a uid of its own: count its processes
            resource.setrlimit(resource.RLIMIT_NPROC, (limits.processes, limits.processes))
        resource.setrlimit(resource.RLIMIT_FSIZE, (limits.file_bytes, limits.file_bytes))
        if limits.memory_bytes is not None:
            resource.setrlimit(resource.RLIMIT_AS, (limits.memory_bytes, limits.memory_bytes))

    return apply_limits


def start_sandboxed(
    argv: Sequence[str],
    workdir: Path,
    limits: SandboxLimits,
    env_extra: Mapping[str, str] | None = None,
    key: bytes | None = None,
    stdin: int | None = subprocess.DEVNULL,
    pass_fds: Sequence[int] = (),
    jail: JailSpec | None = None,
) -> subprocess.Popen[bytes]:
    """Start argv in workdir under limits, in its own process group (in `jail` when given), and return at once.

    The same limits and environment as `run_sandboxed`; stdout and stderr go to workdir/stdout.log and
    stderr.log. The caller owns the process: kill its group (`kill_group`) when done. Raises OSError when
    the program cannot be started.
    """
    env = worker_environment(env_extra, limits.cpu_threads)
    env["HOME"] = str(workdir)
    env["TMPDIR"] = "/tmp" if jail is not None else str(workdir)  # the jail's /tmp is its own
    command = jail_command(jail, list(argv)) if jail is not None else list(argv)
    fds = list(pass_fds)
    read_end = None
    if key is not None:
        read_end, write_end = os.pipe()
        os.write(write_end, key)
        os.close(write_end)
        env["KV_KEY_FD"] = str(read_end)
        fds.append(read_end)
    try:
        with (workdir / "stdout.log").open("wb") as stdout, (workdir / "stderr.log").open("wb") as stderr:
            return subprocess.Popen(
                command, cwd=workdir, env=env, stdin=stdin, stdout=stdout, stderr=stderr,
                start_new_session=True, preexec_fn=_limits_in_child(limits, jail is not None), pass_fds=tuple(fds),
            )  # fmt: skip
    finally:
        if read_end is not None:
            os.close(read_end)


_GROUP_GONE_S = 10.0  # how long a killed group may take to die (a worker unmapping GPU memory)


def _process_state(pid: int) -> str | None:
    """The state letter of /proc/PID/stat (R, S, Z, ...), or None when the process is gone."""
    try:
        with open(f"/proc/{pid}/stat") as handle:
            return handle.read().rsplit(") ", 1)[1].split()[0]
    except (OSError, IndexError):
        return None


def _group_members(group: int) -> list[int]:
    members = []
    for entry in os.listdir("/proc") if os.path.isdir("/proc") else ():
        if entry.isdigit():
            try:
                with open(f"/proc/{entry}/stat") as handle:
                    if handle.read().rsplit(") ", 1)[1].split()[2] == str(group):
                        members.append(int(entry))
            except (OSError, IndexError):
                continue
    return members


def kill_group(process: subprocess.Popen[bytes]) -> None:
    """Kill the process and everything it started (its group), reap it, and return once all are dead.

    In a jail the process is the launcher and the worker its child: the launcher is reaped here, the worker
    (killed by the same signal) by whoever inherits it, which may take a second. A dead process that is not
    reaped yet (a zombie) holds nothing, so "dead" is enough: when this returns, no process of the group
    runs any more, as when the worker was our own child."""
    members = _group_members(process.pid)
    try:
        os.killpg(process.pid, signal.SIGKILL)
    except (ProcessLookupError, PermissionError):
        pass
    process.wait()
    deadline = time.monotonic() + _GROUP_GONE_S
    while any(_process_state(pid) not in (None, "Z") for pid in members) and time.monotonic() < deadline:
        time.sleep(0.005)


def crash_result(
    process: subprocess.Popen[bytes], workdir: Path, timed_out: bool, seconds: float
) -> SandboxResult:
    """Describe how a sandboxed process ended (after `kill_group`)."""
    returncode = None if timed_out else process.returncode
    signal_name = None
    if returncode is not None and returncode < 0:
        try:
            signal_name = signal.Signals(-returncode).name
        except ValueError:
            signal_name = f"signal {-returncode}"
    return SandboxResult(
        returncode=returncode, signal_name=signal_name, timed_out=timed_out, seconds=seconds,
        stdout_tail=_tail(workdir / "stdout.log"), stderr_tail=_tail(workdir / "stderr.log"),
    )  # fmt: skip


def run_sandboxed(
    argv: Sequence[str],
    workdir: Path,
    limits: SandboxLimits,
    env_extra: Mapping[str, str] | None = None,
    key: bytes | None = None,
    jail: JailSpec | None = None,
) -> SandboxResult:
    """Run argv in workdir under limits (in `jail` when given); never raises for anything the child does.

    `key` (the request-signing key) reaches the child through an inherited pipe (fd number in KV_KEY_FD), not
    through a file or the environment: the harness reads it before importing the candidate and signs its
    replies with it, so a candidate that writes a reply of its own cannot produce a valid one.
    """
    started = time.monotonic()
    process = start_sandboxed(argv, workdir, limits, env_extra, key, jail=jail)
    timed_out = False
    try:
        process.wait(timeout=limits.timeout_s)
    except subprocess.TimeoutExpired:
        timed_out = True
    finally:
        kill_group(process)  # the whole group: the candidate may have started children of its own
    return crash_result(process, workdir, timed_out, time.monotonic() - started)


def folder_jail(isolation: Isolation | None, folder: Path, read_only: Sequence[str] = (),
                devices: Sequence[str] = ()) -> JailSpec | None:  # fmt: skip
    """A jail whose only writable place is `folder` (a tool run's, or a persistent worker's home), seeing the
    Python installation, `read_only` and the device nodes `devices`; None where `isolation` has no jail. As
    root, `folder` is handed to the jail's own uid (`JailSpec.uid`)."""
    if isolation is None or not isolation.jailed:
        return None
    uid = None if isolation.rootless else next_jail_uid()
    mount_point = folder / ".jail-root"
    mount_point.mkdir(exist_ok=True)
    if uid is not None:
        os.chown(folder, uid, uid)
    return JailSpec(read_only=(*python_read_only_paths(), *read_only), writable=(str(folder),), workdir=str(folder),
                    devices=tuple(devices), mount_point=str(mount_point), uid=uid or 65534, gid=uid or 65534,
                    seccomp=isolation.level == ISOLATION_JAIL, device_groups=device_groups(tuple(devices)))  # fmt: skip

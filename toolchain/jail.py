"""The OS jail around every process that runs or compiles candidate code: the wall below Python.

`python -I toolchain/jail.py SPEC -- ARGV...` (built by `jail_command`) runs ARGV in:
- its own user, PID, mount, IPC, UTS, cgroup and network namespaces: the verify process and every other
  process are invisible (`/proc` is the jail's own), the network is an unconfigured loopback, and
  `setns` back into the parent's namespaces is refused (no capability over them, and seccomp);
- as an unprivileged user with no capabilities and `no_new_privs`: as root, a uid of its own
  (`JailSpec.uid`, mapped to itself in the jail's user namespace); as an ordinary user, the caller's uid
  mapped to 0 in the jail's user namespace, with every capability dropped;
- a read-only view of the system (`/usr`, `/etc`, the Python installation, the project's packages) and
  nothing else of the host's files: no home, no `/root`, no `/work`, no other job's folder. Writable: the
  folders in `JailSpec.writable` and a private `/tmp`. A shared build cache is bound read-only (filled
  from outside by the parent);
- a `/dev` holding `null`, `zero`, `full`, `random`, `urandom` and the GPU's nodes (`JailSpec.devices`);
- a seccomp filter (libseccomp through pyseccomp) that refuses `setns`, `unshare`, namespace flags to
  `clone`, `mount`, `pivot_root`, `ptrace`, `process_vm_*`, `bpf`, `keyctl`, `perf_event_open`,
  `io_uring` and the like with EPERM;
- PID 1 of its namespace is ARGV itself: when it exits or is killed, the kernel kills every process left
  in the namespace, however it was started (a double fork with `setsid` included). A persistent worker
  kills its namespace's other processes after every job (`kill(-1)` from PID 1 reaches them all).

The launcher is this file run with `python -I` (no project imports, no site customisation from the
environment): it unshares the namespaces, forks (the child is PID 1), builds the new root in a tmpfs,
pivots into it, drops privileges, loads the seccomp filter and execs ARGV. The launcher waits and exits
as its child did. Everything it needs is the standard library and pyseccomp.

What this does NOT do: limit GPU memory or GPU time (the device is shared; the sandbox's wall clock
bounds time), hide the hardware (`/sys` is bound read-only: CUDA reads the PCI topology there), hide
anything inside the jail from the candidate that shares its process (the harness's own memory is the
candidate's to read: the harness keeps nothing there worth reading, see `kernelvault.toolchain.judge`), or stop a
candidate that finds a kernel exploit. Where the OS cannot build the jail (no user namespaces, not
Linux), `probe_isolation` says so and the sandbox falls back to a plain process (`ISOLATION_PROCESS`),
recorded in every verdict.
"""

from __future__ import annotations

import ctypes
import errno
import json
import os
import signal
import stat
import sys
from dataclasses import asdict, dataclass
from typing import Any

ISOLATION_JAIL = "jail"  # namespaces, unprivileged user, read-only system, seccomp
ISOLATION_JAIL_NO_SECCOMP = "jail-no-seccomp"  # the same without the seccomp filter (no libseccomp)
ISOLATION_PROCESS = "process"  # a plain child process: limits, allow-listed environment, own process group

# Host folders seen read-only at the same path inside (those that exist). /bin, /lib ... are symlinks into
# /usr on merged-usr systems, and are recreated as the same symlinks.
SYSTEM_FOLDERS = ("/usr", "/bin", "/sbin", "/lib", "/lib32", "/lib64", "/libx32", "/etc", "/opt")
DEVICE_NODES = ("/dev/null", "/dev/zero", "/dev/full", "/dev/random", "/dev/urandom")
# GPU nodes bound in when a job runs on a device (whichever exist): NVIDIA, then AMD (KFD and DRM render nodes).
GPU_NODE_PATTERNS = ("/dev/nvidia", "/dev/nvidia-caps/", "/dev/kfd", "/dev/dri/")

_CLONE_NEWNS = 0x00020000
_CLONE_NEWCGROUP = 0x02000000
_CLONE_NEWUTS = 0x04000000
_CLONE_NEWIPC = 0x08000000
_CLONE_NEWUSER = 0x10000000
_CLONE_NEWPID = 0x20000000
_CLONE_NEWNET = 0x40000000
_NAMESPACE_FLAGS = (_CLONE_NEWNS, _CLONE_NEWCGROUP, _CLONE_NEWUTS, _CLONE_NEWIPC, _CLONE_NEWUSER,
                    _CLONE_NEWPID, _CLONE_NEWNET)  # fmt: skip
_MS_RDONLY, _MS_NOSUID, _MS_NODEV, _MS_NOEXEC = 1, 2, 4, 8
_MS_REMOUNT, _MS_BIND, _MS_REC, _MS_PRIVATE = 32, 4096, 16384, 1 << 18
_MNT_DETACH = 2
_PR_SET_PDEATHSIG, _PR_SET_DUMPABLE, _PR_CAPBSET_DROP, _PR_SET_NO_NEW_PRIVS = 1, 4, 24, 38
_SYS_PIVOT_ROOT = {"x86_64": 155, "aarch64": 41}
_SYS_CAPSET = {"x86_64": 126, "aarch64": 91}
_LINUX_CAPABILITY_VERSION_3 = 0x20080522

# Refused inside the jail (EPERM): namespace and mount changes, another process's memory, kernel
# facilities an honest kernel never needs. clone3 gets ENOSYS so that libc falls back to clone, whose
# flags the filter can read (a new namespace through clone is refused by the flag rules below).
DENIED_SYSCALLS = (
    "setns", "unshare", "mount", "umount2", "pivot_root", "chroot", "move_mount", "open_tree", "fsopen",
    "fsmount", "fsconfig", "fspick", "mount_setattr", "ptrace", "process_vm_readv", "process_vm_writev",
    "kcmp", "pidfd_getfd", "bpf", "keyctl", "add_key", "request_key", "perf_event_open", "userfaultfd",
    "io_uring_setup", "io_uring_enter", "io_uring_register", "init_module", "finit_module", "delete_module",
    "kexec_load", "kexec_file_load", "reboot", "swapon", "swapoff", "acct", "quotactl", "syslog", "iopl",
    "ioperm", "open_by_handle_at", "name_to_handle_at", "lookup_dcookie", "fanotify_init", "settimeofday",
    "clock_settime", "clock_adjtime", "adjtimex", "vhangup",
)  # fmt: skip


@dataclass(frozen=True)
class JailSpec:
    """What one jailed process sees. Paths are host paths, seen at the same path inside."""

    read_only: tuple[str, ...] = ()  # beyond SYSTEM_FOLDERS: the Python installation, packages, caches
    writable: tuple[str, ...] = ()  # the job's (or the worker's) own folders
    devices: tuple[str, ...] = ()  # device nodes bound in (the GPU's)
    workdir: str = "/tmp"  # the working directory inside
    mount_point: str = ""  # an empty host folder the new root is built on (inside the jail's mount namespace)
    uid: int = 65534  # the jail's user when the launcher runs as root (its own uid otherwise)
    gid: int = 65534
    tmp_bytes: int = 1 << 30  # size of the private /tmp (memory-backed)
    seccomp: bool = True
    device_groups: tuple[
        int, ...
    ] = ()  # supplementary groups that may open the device nodes (ROCm: render, video)
    launcher_path: tuple[
        str, ...
    ] = ()  # where the launcher (run with -I) finds pyseccomp, when not in site-packages

    def to_json(self) -> str:
        return json.dumps(asdict(self))

    @staticmethod
    def from_json(text: str) -> JailSpec:
        data = json.loads(text)
        return JailSpec(
            **{key: tuple(value) if isinstance(value, list) else value for key, value in data.items()}
        )


@dataclass(frozen=True)
class Isolation:
    """What this machine gives candidate processes, probed once (`probe_isolation`)."""

    level: str  # ISOLATION_JAIL, ISOLATION_JAIL_NO_SECCOMP or ISOLATION_PROCESS
    detail: str  # how, or why not
    rootless: bool = False  # the launcher runs as an ordinary user (the jail's uid is the caller's)

    @property
    def jailed(self) -> bool:
        return self.level != ISOLATION_PROCESS


def launcher_path() -> tuple[str, ...]:
    """Where this process finds pyseccomp, for a launcher run with -I (which ignores PYTHONPATH)."""
    import importlib.util

    spec = importlib.util.find_spec("pyseccomp")
    return (os.path.dirname(spec.origin),) if spec is not None and spec.origin else ()


def jail_command(spec: JailSpec, argv: list[str], python: str = sys.executable) -> list[str]:
    """The command that runs argv inside the jail described by spec."""
    if spec.seccomp and not spec.launcher_path:
        spec = JailSpec(**{**asdict(spec), "launcher_path": launcher_path()})
    return [python, "-I", os.path.abspath(__file__), spec.to_json(), "--", *argv]


def gpu_device_nodes() -> tuple[str, ...]:
    """The GPU device nodes of this machine (NVIDIA and AMD), for `JailSpec.devices`."""
    found: list[str] = []
    for pattern in GPU_NODE_PATTERNS:
        folder, prefix = os.path.split(pattern)
        try:
            names = sorted(os.listdir(folder))
        except OSError:
            continue
        for name in names:
            path = os.path.join(folder, name)
            if name.startswith(prefix) and (
                stat.S_ISCHR(_mode(path)) or (prefix == "" and os.path.isdir(path))
            ):
                found.append(path)
    return tuple(dict.fromkeys(found))


def device_groups(devices: tuple[str, ...]) -> tuple[int, ...]:
    """The groups owning device nodes that others may not open (ROCm's /dev/kfd is often 0660 render)."""
    groups = set()
    for path in devices:
        try:
            info = os.stat(path)
        except OSError:
            continue
        if not info.st_mode & 0o006 and info.st_mode & 0o060:
            groups.add(info.st_gid)
    return tuple(sorted(groups))


def _mode(path: str) -> int:
    try:
        return os.stat(path).st_mode
    except OSError:
        return 0


def python_read_only_paths() -> tuple[str, ...]:
    """What a worker's Python needs to see: the interpreter's installation, the virtual environment, the
    site-packages on sys.path, and the project's package (installed: the `kernelvault` folder; in a source
    checkout: `kernelvault/` and the subpackage folders beside it, not the checkout itself: it may hold
    credentials, tests or other runs' output)."""
    import kernelvault

    package = os.path.dirname(os.path.abspath(kernelvault.__file__))
    here = os.path.dirname(package)  # the folder holding the package: a checkout, or site-packages
    prefixes = {sys.prefix, sys.base_prefix, sys.exec_prefix}
    paths = set(prefixes) | {os.path.dirname(os.path.realpath(sys.executable))}
    # Only the installation's own entries of sys.path: the others are a script's folder, the working
    # directory, a test's root (binding /tmp because a script ran from there would show every job).
    for entry in sys.path:
        inside = any(
            os.path.realpath(entry).startswith(os.path.realpath(prefix) + os.sep) for prefix in prefixes
        )
        if (
            entry
            and os.path.isdir(entry)
            and (inside or os.path.basename(entry) in ("site-packages", "dist-packages"))
        ):
            paths.add(entry)
    paths.add(package)
    for folder in kernelvault.__path__[1:]:  # a checkout: its subpackage folders, not the checkout
        paths.update(
            os.path.join(folder, name)
            for name in kernelvault.SUBPACKAGES
            if os.path.isdir(os.path.join(folder, name))
        )
    for entry in os.environ.get("PYTHONPATH", "").split(os.pathsep):  # wheels unpacked beside the install
        if entry and os.path.isdir(entry) and os.path.realpath(entry) != os.path.realpath(here):
            paths.add(entry)
    for variable in ("CUDA_HOME", "CUDA_PATH", "ROCM_PATH"):  # toolkits outside /usr and /opt
        if os.environ.get(variable) and os.path.isdir(os.environ[variable]):
            paths.add(os.environ[variable])
    return tuple(sorted(os.path.realpath(path) for path in paths))


_JAIL_UIDS = iter(range(1_000))


def next_jail_uid() -> int:
    """A uid of the host that no account uses, one per jailed process of this run: processes of two jails
    never share a uid (so they cannot signal each other or exhaust each other's process limit)."""
    return 1_900_000_000 + (os.getpid() % 100_000) * 1_000 + next(_JAIL_UIDS) % 1_000


_PROBE = """
import json, os
status = dict(line.split(":", 1) for line in open("/proc/self/status").read().splitlines() if ":" in line)
print(json.dumps({"pid": os.getpid(), "uid": os.getuid(), "processes": len([p for p in os.listdir("/proc")
      if p.isdigit()]), "cap_eff": status["CapEff"].strip(), "no_new_privs": status["NoNewPrivs"].strip(),
      "seccomp": status["Seccomp"].strip()}))
"""


def probe_isolation(python: str = sys.executable, workroot: str | None = None) -> Isolation:
    """Build a jail once and look at it from inside: what this machine gives candidate processes."""
    import shutil
    import subprocess
    import tempfile

    if not sys.platform.startswith("linux"):
        return Isolation(ISOLATION_PROCESS, f"no jail on {sys.platform}: Linux namespaces are needed")
    rootless = os.geteuid() != 0
    errors = []
    for with_seccomp in (True, False):
        home = tempfile.mkdtemp(prefix="kv-jail-probe-", dir=workroot)
        try:
            os.mkdir(os.path.join(home, "root"))
            os.chmod(home, 0o755)
            spec = JailSpec(read_only=python_read_only_paths(), writable=(), workdir="/tmp",
                            mount_point=os.path.join(home, "root"), uid=next_jail_uid(), gid=65534,
                            seccomp=with_seccomp)  # fmt: skip
            try:
                run = subprocess.run(jail_command(spec, [python, "-I", "-c", _PROBE]), capture_output=True,
                                     text=True, timeout=120, env={"PATH": os.environ.get("PATH", "/usr/bin:/bin")})  # fmt: skip
            except (OSError, subprocess.TimeoutExpired) as error:
                errors.append(str(error))
                continue
            lines = (run.stderr or run.stdout).strip().splitlines()
            if run.returncode != 0:
                errors.append(lines[-1] if lines else f"exit code {run.returncode}")
                continue
            seen = json.loads(run.stdout.strip().splitlines()[-1])
            unprivileged = seen["cap_eff"].strip("0") == "" and seen["no_new_privs"] == "1"
            if seen["pid"] != 1 or seen["processes"] != 1 or not unprivileged:
                errors.append(f"the jail is not what it should be: {seen}")
                continue
            who = (
                "the caller's uid, mapped to root without capabilities" if rootless else f"uid {seen['uid']}"
            )
            detail = (f"user, PID, mount, IPC, UTS, cgroup and network namespaces; {who}; no capabilities, "
                      f"no_new_privs; read-only system; {'seccomp filter' if with_seccomp else 'NO seccomp filter'}")  # fmt: skip
            if not with_seccomp:
                detail += f" ({errors[-1] if errors else 'unavailable'})"
            level = ISOLATION_JAIL if with_seccomp else ISOLATION_JAIL_NO_SECCOMP
            return Isolation(level, detail, rootless)
        finally:
            shutil.rmtree(home, ignore_errors=True)
    return Isolation(
        ISOLATION_PROCESS, f"no jail on this machine: {errors[-1] if errors else 'unknown'}", rootless
    )


# ----------------------------------------------------------------------------------------------------
# The launcher: runs as `python -I jail.py SPEC -- ARGV` (root, or an ordinary user with user namespaces).

# The process's own symbols (libc's among them): `ctypes.util.find_library` would start `ldconfig` or a compiler
# at import, and a candidate's worker imports this module (through hip_build) where starting a process is refused.
_LIBC = ctypes.CDLL(None, use_errno=True)


class JailError(Exception):
    """The jail could not be built (the launcher exits 125 with this message on stderr)."""


def _check(result: int, what: str) -> None:
    if result != 0:
        code = ctypes.get_errno()
        raise JailError(f"{what}: {os.strerror(code)} (errno {code})")


def _mount(source: str | None, target: str, fstype: str | None, flags: int, data: str | None = None) -> None:
    encode = lambda value: value.encode() if value is not None else None  # noqa: E731
    _check(_LIBC.mount(encode(source), encode(target), encode(fstype), ctypes.c_ulong(flags), encode(data)),
           f"mount {source or ''} on {target}")  # fmt: skip


def _locked_flags(path: str) -> int:
    """The mount flags a read-only remount of a bind of `path` must keep (the kernel refuses to drop
    nosuid/nodev/noexec that the source mount has, when the mount was made outside our user namespace)."""
    flags = os.statvfs(path).f_flag
    return ((_MS_NOSUID if flags & os.ST_NOSUID else 0) | (_MS_NODEV if flags & os.ST_NODEV else 0)
            | (_MS_NOEXEC if flags & os.ST_NOEXEC else 0))  # fmt: skip


def _submounts(target: str) -> list[str]:
    """Mount points strictly under `target` in this mount namespace (from /proc/self/mountinfo)."""
    found = []
    with open("/proc/self/mountinfo") as mountinfo:
        for line in mountinfo:
            point = line.split()[4].encode().decode("unicode_escape")
            if point.startswith(target.rstrip("/") + "/"):
                found.append(point)
    return sorted(found, key=len)


def _bind(source: str, target: str, read_only: bool, device: bool = False, tree: bool = False) -> None:
    """Bind `source` at `target`. `tree`: with the mounts under it (a driver's libraries bound into /usr one
    by one, say), each made read-only too where `read_only`."""
    try:
        _mount(source, target, None, _MS_BIND | (_MS_REC if tree else 0))
    except JailError:
        # In a user namespace the kernel refuses a plain bind of a mount with mounts under it (it would
        # uncover what they hide): bind the whole tree.
        _mount(source, target, None, _MS_BIND | _MS_REC)
        tree = True
    if tree and read_only:
        for point in _submounts(target):
            flags = _MS_BIND | _MS_REMOUNT | _MS_RDONLY | _MS_NOSUID | _locked_flags(point)
            try:
                _mount(None, point, None, flags | (0 if device else _MS_NODEV))
            except JailError:
                _mount(None, point, None, flags)  # a device node bound in by the host keeps its dev flag
    flags = _MS_BIND | _MS_REMOUNT | _MS_NOSUID | _locked_flags(source)
    if not device:
        flags |= _MS_NODEV
    if read_only:
        flags |= _MS_RDONLY
    _mount(None, target, None, flags)


def _make_target(root: str, path: str, like: str) -> str:
    """Create the mount point for host `like` at `path` inside the new root (a folder or an empty file)."""
    target = root + path
    parent = os.path.dirname(target)
    os.makedirs(parent, mode=0o755, exist_ok=True)
    if os.path.isdir(like):
        os.makedirs(target, mode=0o755, exist_ok=True)
    elif not os.path.exists(target):
        with open(target, "w"):
            pass
    return target


def _covered(path: str, folders: list[str]) -> bool:
    return any(path == folder or path.startswith(folder.rstrip("/") + "/") for folder in folders)


def _build_root(spec: JailSpec, root: str) -> None:
    _mount("kvjail", root, "tmpfs", _MS_NOSUID | _MS_NODEV, "mode=0755,size=16m")
    tmp = _make_target(root, "/tmp", "/")
    _mount("kvtmp", tmp, "tmpfs", _MS_NOSUID | _MS_NODEV, f"mode=1777,size={spec.tmp_bytes}")
    bound: list[str] = []
    for folder in SYSTEM_FOLDERS:
        if os.path.islink(folder):
            os.symlink(os.readlink(folder), root + folder)
        elif os.path.isdir(folder):
            _bind(folder, _make_target(root, folder, folder), read_only=True, tree=True)
            bound.append(folder)
    # Outer folders first, so that a folder inside another bound one is mounted over it, not hidden under
    # it (a read-only cache inside a writable worker folder stays read-only).
    binds = {os.path.realpath(p): True for p in spec.read_only if os.path.exists(p)}
    binds |= {os.path.realpath(p): False for p in spec.writable}
    for path in sorted(binds, key=lambda p: (p.count("/"), p)):
        read_only = binds[path]
        if read_only and _covered(path, bound):  # already seen read-only as part of the system
            continue
        _bind(path, _make_target(root, path, path), read_only=read_only)
    dev = _make_target(root, "/dev", "/")
    _mount(
        "kvdev",
        dev,
        "tmpfs",
        _MS_NOSUID | _MS_NOEXEC | (0 if spec.devices else _MS_NODEV),
        "mode=0755,size=1m",
    )
    for node in DEVICE_NODES + tuple(spec.devices):
        if os.path.exists(node):
            _bind(node, _make_target(root, node, node), read_only=False, device=True)
    shm = _make_target(root, "/dev/shm", "/")
    _mount("kvshm", shm, "tmpfs", _MS_NOSUID | _MS_NODEV, f"mode=1777,size={spec.tmp_bytes}")
    for name, target in (("fd", "/proc/self/fd"), ("stdin", "/proc/self/fd/0"), ("stdout", "/proc/self/fd/1"),
                         ("stderr", "/proc/self/fd/2")):  # fmt: skip
        os.symlink(target, f"{dev}/{name}")
    proc = _make_target(root, "/proc", "/")
    _mount("proc", proc, "proc", _MS_NOSUID | _MS_NODEV | _MS_NOEXEC)
    # This process becomes the jail's PID 1 (it execs the worker): its own memory file is not for reading.
    for path in ("/proc/1/mem", "/proc/1/task/1/mem"):
        if os.path.exists(root + path):
            _mount(root + "/dev/null", root + path, None, _MS_BIND)
    if os.path.isdir("/sys"):
        _bind("/sys", _make_target(root, "/sys", "/sys"), read_only=True)
    _mount(None, root, None, _MS_BIND | _MS_REMOUNT | _MS_RDONLY | _MS_NOSUID | _MS_NODEV)


def _pivot(root: str) -> None:
    """pivot_root(".", "."): the old root ends up stacked under the new one and is detached at once."""
    os.chdir(root)
    _check(_LIBC.syscall(_SYS_PIVOT_ROOT[os.uname().machine], b".", b"."), "pivot_root")
    _check(_LIBC.umount2(b".", _MNT_DETACH), "detach the old root")
    os.chdir("/")


def _write(path: str, text: str) -> None:
    with open(path, "w") as handle:
        handle.write(text)


def _drop_capabilities() -> None:
    """Empty the bounding set and the capability sets: nothing is left to regain or use."""
    last = int(open("/proc/sys/kernel/cap_last_cap").read())
    for capability in range(last + 1):
        _LIBC.prctl(_PR_CAPBSET_DROP, capability, 0, 0, 0)
    header = (ctypes.c_uint32 * 2)(_LINUX_CAPABILITY_VERSION_3, 0)
    data = (ctypes.c_uint32 * 6)()
    _check(_LIBC.syscall(_SYS_CAPSET[os.uname().machine], header, data), "capset")
    _check(_LIBC.prctl(_PR_SET_NO_NEW_PRIVS, 1, 0, 0, 0), "no_new_privs")


def _import_pyseccomp(paths: tuple[str, ...]) -> Any:
    """pyseccomp, from the launcher's path; it finds libseccomp with ctypes.util.find_library, which misses a
    library that is only on LD_LIBRARY_PATH or in a folder named by KV_LIBSECCOMP: look there too."""
    sys.path[:0] = list(paths)
    import ctypes.util as util

    original = util.find_library
    places = [os.environ.get("KV_LIBSECCOMP", "")] + os.environ.get("LD_LIBRARY_PATH", "").split(":")

    def find_library(name: str) -> str | None:
        found = original(name)
        if found is None and name == "seccomp":
            for place in filter(None, places):
                candidate = place if place.endswith(".so.2") else os.path.join(place, "libseccomp.so.2")
                if os.path.exists(candidate):
                    return candidate
        return found

    util.find_library = find_library
    try:
        import pyseccomp
    finally:
        util.find_library = original
    return pyseccomp


def _load_seccomp(paths: tuple[str, ...]) -> None:
    pyseccomp = _import_pyseccomp(paths)

    policy = pyseccomp.SyscallFilter(defaction=pyseccomp.ALLOW)
    denied = pyseccomp.ERRNO(errno.EPERM)
    for name in DENIED_SYSCALLS:
        try:
            policy.add_rule(denied, name)
        except (OSError, ValueError, RuntimeError):  # not a syscall on this architecture
            continue
    policy.add_rule(pyseccomp.ERRNO(errno.ENOSYS), "clone3")
    for flag in _NAMESPACE_FLAGS:
        policy.add_rule(denied, "clone", pyseccomp.Arg(0, pyseccomp.MASKED_EQ, flag, flag))
    policy.load()


def _enter(spec: JailSpec, rootless: bool, launcher_alive: int) -> None:
    """In the child (PID 1 of the new namespace): build the view, drop everything, load the filter."""
    _mount(None, "/", None, _MS_REC | _MS_PRIVATE)
    _build_root(spec, spec.mount_point)
    _pivot(spec.mount_point)
    if not rootless:
        # Out of root before the user namespace: the jail's user is an ordinary uid of the host, which owns
        # nothing there; then a user namespace that maps that uid to itself, and nothing else.
        os.setgroups(list(spec.device_groups))
        os.setresgid(spec.gid, spec.gid, spec.gid)
        os.setresuid(spec.uid, spec.uid, spec.uid)
        _LIBC.prctl(
            _PR_SET_DUMPABLE, 1, 0, 0, 0
        )  # a uid change made /proc/self root's: the maps are ours to write
        _check(_LIBC.unshare(_CLONE_NEWUSER), "unshare the user namespace")
        _write("/proc/self/setgroups", "deny")
        _write("/proc/self/uid_map", f"{spec.uid} {spec.uid} 1\n")
        _write("/proc/self/gid_map", f"{spec.gid} {spec.gid} 1\n")
    _drop_capabilities()
    if spec.seccomp:
        _load_seccomp(spec.launcher_path)
    os.chdir(spec.workdir)
    # Die with the launcher. Set last: the kernel clears it at every change of credentials above. The
    # launcher holds the other end of `launcher_alive` open for as long as it lives: if that end is closed
    # already, it died before the signal was armed.
    _LIBC.prctl(_PR_SET_PDEATHSIG, signal.SIGKILL, 0, 0, 0)
    os.set_blocking(launcher_alive, False)
    try:
        if os.read(launcher_alive, 1) == b"":
            raise JailError("the launcher died while the jail was being built")
    except BlockingIOError:
        pass
    os.close(launcher_alive)


def launch(spec: JailSpec, argv: list[str]) -> int:
    rootless = os.geteuid() != 0
    flags = _CLONE_NEWNS | _CLONE_NEWPID | _CLONE_NEWNET | _CLONE_NEWIPC | _CLONE_NEWUTS | _CLONE_NEWCGROUP
    if rootless:
        uid, gid = os.geteuid(), os.getegid()
        _check(_LIBC.unshare(flags | _CLONE_NEWUSER), "unshare the namespaces")
        _write("/proc/self/setgroups", "deny")
        _write("/proc/self/uid_map", f"0 {uid} 1\n")
        _write("/proc/self/gid_map", f"0 {gid} 1\n")
    else:
        _check(_LIBC.unshare(flags), "unshare the namespaces")
    alive_read, alive_write = os.pipe()
    child = os.fork()
    if child == 0:
        try:
            os.close(alive_write)
            _enter(spec, rootless, alive_read)
            os.execvp(argv[0], argv)
        except BaseException as error:  # noqa: BLE001 - report and exit: nothing else may run here
            os.write(2, f"kernelvault jail: {error}\n".encode())
            os._exit(125)
    os.close(alive_read)  # alive_write stays open until this process exits
    for number in (signal.SIGTERM, signal.SIGINT, signal.SIGHUP):
        signal.signal(number, lambda received, _frame: os.kill(child, signal.SIGKILL))
    while True:
        try:
            _, status = os.waitpid(child, 0)
            break
        except ChildProcessError:
            return 125
        except InterruptedError:
            continue
    if os.WIFSIGNALED(status):  # die the same way, so the parent reads the signal that killed the worker
        number = os.WTERMSIG(status)
        signal.signal(number, signal.SIG_DFL)
        os.kill(os.getpid(), number)
    return os.WEXITSTATUS(status) if os.WIFEXITED(status) else 125


def main(arguments: list[str]) -> int:
    if len(arguments) < 3 or arguments[1] != "--":
        sys.stderr.write("usage: jail.py SPEC_JSON -- ARGV...\n")
        return 2
    try:
        return launch(JailSpec.from_json(arguments[0]), arguments[2:])
    except JailError as error:
        sys.stderr.write(f"kernelvault jail: {error}\n")
        return 125


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))

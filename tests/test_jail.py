"""The jail's promises (`kernelvault.toolchain.jail`), each as an attack that must fail from inside it.

Each test runs a probe (plain Python: the static wall does not apply here, this is what code that got past
it could do) in a jail built the way the workers' are, from a "verify process" that holds credentials in
its real environment, and asserts what the probe could not do. Skipped, loudly, where the machine cannot
build a jail (no user namespaces and not root).
"""

from __future__ import annotations

import json
import os
import secrets
import socket
import subprocess
import sys
import textwrap
import threading
import time
from pathlib import Path

import pytest

from kernelvault.toolchain.jail import ISOLATION_JAIL, probe_isolation
from kernelvault.toolchain.sandbox import SandboxLimits, folder_jail, run_sandboxed

ISOLATION = probe_isolation(sys.executable)
pytestmark = pytest.mark.skipif(
    not ISOLATION.jailed, reason=f"no OS jail on this machine: {ISOLATION.detail}"
)
ROOT = Path(__file__).resolve().parents[1]
SECRET = "sk-kv-jail-test-" + secrets.token_hex(8)

# The verify process: a Python started with a credential in its environment (so /proc/<pid>/environ holds
# it), which runs the probe in a jail around `folder` with `read_only` extra paths and prints its output.
_VERIFY_PROCESS = """
import json, sys
from pathlib import Path
from kernelvault.toolchain.jail import probe_isolation
from kernelvault.toolchain.sandbox import SandboxLimits, folder_jail, run_sandboxed
folder, probe, read_only = Path(sys.argv[1]), sys.argv[2], json.loads(sys.argv[3])
jail = folder_jail(probe_isolation(sys.executable), folder, read_only)
run = run_sandboxed([sys.executable, "-I", "-c", probe], folder, SandboxLimits(60, None), jail=jail)
print(json.dumps({"returncode": run.returncode, "stdout": run.stdout_tail, "stderr": run.stderr_tail}))
"""


def jailed(tmp_path: Path, probe: str, read_only: tuple[str, ...] = ()) -> dict:
    """Run `probe` in a jail around a fresh folder under tmp_path; the JSON object it printed last."""
    folder = tmp_path / "job"
    folder.mkdir(exist_ok=True)
    folder.chmod(0o755)
    env = {**os.environ, "OPENAI_API_KEY": SECRET, "HF_TOKEN": SECRET, "PYTHONPATH": str(ROOT)}
    done = subprocess.run([sys.executable, "-c", _VERIFY_PROCESS, str(folder), textwrap.dedent(probe),
                           json.dumps(list(read_only))], env=env, capture_output=True, text=True, timeout=120)  # fmt: skip
    assert done.returncode == 0, done.stderr
    run = json.loads(done.stdout.strip().splitlines()[-1])
    assert run["returncode"] == 0, run["stderr"]
    return json.loads(run["stdout"].strip().splitlines()[-1])


def test_the_jail_is_what_the_verdicts_say_it_is() -> None:
    assert ISOLATION.level == ISOLATION_JAIL, ISOLATION.detail  # this machine has libseccomp: the full jail
    assert "seccomp" in ISOLATION.detail and "namespaces" in ISOLATION.detail


def test_the_verify_process_environment_cannot_be_read(tmp_path: Path) -> None:
    seen = jailed(
        tmp_path,
        """
        import json, os
        found = {}
        for pid in ["1", str(os.getppid()), "self"] + [p for p in os.listdir("/proc") if p.isdigit()]:
            try:
                found[pid] = open(f"/proc/{pid}/environ", "rb").read().decode(errors="replace")
            except OSError as error:
                found[pid] = f"refused: {error}"
        print(json.dumps({"found": found, "own": dict(os.environ), "pids": [p for p in os.listdir("/proc") if p.isdigit()]}))
    """,
    )
    assert seen["pids"] == ["1"], "the jail's /proc shows only its own process"
    assert SECRET not in json.dumps(seen), "a credential of the verify process was readable from the jail"
    assert "OPENAI_API_KEY" not in seen["own"] and "HF_TOKEN" not in seen["own"]


def test_no_socket_reaches_the_host_even_after_setns(tmp_path: Path) -> None:
    server = socket.create_server(("127.0.0.1", 0))
    port = server.getsockname()[1]
    accepted: list[bytes] = []

    def serve() -> None:
        server.settimeout(30)
        try:
            connection, _ = server.accept()
            accepted.append(connection.recv(64))
        except OSError:
            pass

    listener = threading.Thread(target=serve, daemon=True)
    listener.start()
    seen = jailed(
        tmp_path,
        f"""
        import ctypes, json, os, socket
        libc = ctypes.CDLL("libc.so.6", use_errno=True)
        attempts = {{}}
        for path in ("/proc/1/ns/net", "/proc/self/ns/net", "/proc/{os.getpid()}/ns/net"):
            try:
                fd = os.open(path, os.O_RDONLY)
                attempts[path] = [libc.setns(fd, 0), os.strerror(ctypes.get_errno())]
            except OSError as error:
                attempts[path] = ["open", str(error)]
        attempts["unshare"] = [libc.unshare(0x40000000), os.strerror(ctypes.get_errno())]
        try:
            with socket.create_connection(("127.0.0.1", {port}), timeout=3) as connection:
                connection.sendall(b"escaped")
                attempts["connect"] = "connected"
        except OSError as error:
            attempts["connect"] = str(error)
        print(json.dumps(attempts))
    """,
    )
    server.close()
    listener.join(timeout=5)
    assert accepted == [], "a process in the jail reached the host's loopback"
    assert seen["connect"] != "connected"
    assert seen["/proc/1/ns/net"] == [-1, "Operation not permitted"], seen  # seccomp refuses setns
    assert seen["unshare"] == [-1, "Operation not permitted"], seen
    assert seen[f"/proc/{os.getpid()}/ns/net"][0] == "open", "the host's processes are not even visible"


def test_a_double_forked_setsid_process_dies_with_the_jail(tmp_path: Path) -> None:
    token = f"kv-orphan-{secrets.token_hex(6)}"
    jailed(
        tmp_path,
        f"""
        import json, os
        if os.fork() == 0:
            os.setsid()
            if os.fork() == 0:
                os.execv("/bin/sleep", ["{token}", "120"])
            os._exit(0)
        os.wait()
        print(json.dumps({{"forked": True}}))
    """,
    )
    time.sleep(0.5)
    survivors = []
    for entry in Path("/proc").iterdir():
        try:
            if entry.name.isdigit() and token in (entry / "cmdline").read_bytes().decode(errors="replace"):
                survivors.append(entry.name)
        except OSError:
            continue
    assert survivors == [], f"processes outlived their jail: {survivors}"


def test_writes_outside_the_job_folder_land_nowhere(tmp_path: Path) -> None:
    outside = tmp_path / "outside"
    outside.mkdir()
    outside.chmod(0o777)  # writable by anyone on the host: only the jail stands in the way
    targets = [str(outside / "by_fileio"), str(outside / "by_posix"), str(outside / "by_os_open"),
               str(ROOT / "kv_jail_escape"), "/kv_jail_escape", f"/tmp/kv-jail-escape-{secrets.token_hex(4)}"]  # fmt: skip
    seen = jailed(
        tmp_path,
        f"""
        import io, json, os, posix
        targets = {targets!r}
        results = {{}}
        def attempt(name, write):
            try:
                write()
                results[name] = "written"
            except OSError as error:
                results[name] = f"refused: {{error.strerror}}"
        attempt(targets[0], lambda: io.FileIO(targets[0], "w").write(b"x"))
        attempt(targets[1], lambda: posix.write(posix.open(targets[1], posix.O_WRONLY | posix.O_CREAT, 0o644), b"x"))
        attempt(targets[2], lambda: os.write(os.open(targets[2], os.O_WRONLY | os.O_CREAT, 0o644), b"x"))
        attempt(targets[3], lambda: io.FileIO(targets[3], "w").write(b"x"))
        attempt(targets[4], lambda: io.FileIO(targets[4], "w").write(b"x"))
        attempt(targets[5], lambda: io.FileIO(targets[5], "w").write(b"x"))  # the jail's own /tmp
        attempt("job folder", lambda: io.FileIO("written_inside", "w").write(b"x"))
        print(json.dumps(results))
    """,
    )
    for path in targets:
        assert not Path(path).exists(), f"{path} was written from inside the jail"
    for path in targets[:5]:
        assert seen[path].startswith("refused"), (path, seen[path])
    assert seen[targets[5]] == "written", "the jail's private /tmp is writable (and gone with the jail)"
    assert seen["job folder"] == "written" and (tmp_path / "job" / "written_inside").exists()


def test_the_shared_build_cache_is_read_only_inside(tmp_path: Path) -> None:
    cache = tmp_path / "shared-cache"
    (cache / "ab").mkdir(parents=True)
    (cache / "ab" / "entry.so").write_bytes(b"the real library")
    cache.chmod(0o777)
    (cache / "ab").chmod(0o777)
    (cache / "ab" / "entry.so").chmod(
        0o666
    )  # writable by anyone on the host: only the jail stands in the way
    seen = jailed(
        tmp_path,
        f"""
        import json, os
        results = {{}}
        for name, action in (("overwrite", lambda: open("{cache}/ab/entry.so", "wb").write(b"poisoned")),
                             ("create", lambda: open("{cache}/ab/new.so", "wb").write(b"poisoned")),
                             ("remove", lambda: os.unlink("{cache}/ab/entry.so"))):
            try:
                action()
                results[name] = "done"
            except OSError as error:
                results[name] = error.strerror
        results["read"] = open("{cache}/ab/entry.so", "rb").read().decode()
        print(json.dumps(results))
    """,
        read_only=(str(cache),),
    )
    assert seen["read"] == "the real library"
    assert seen["overwrite"] == seen["create"] == seen["remove"] == "Read-only file system", seen
    assert (cache / "ab" / "entry.so").read_bytes() == b"the real library"
    assert not (cache / "ab" / "new.so").exists()


def test_another_jobs_files_are_not_there(tmp_path: Path) -> None:
    other = tmp_path / "other-job"
    other.mkdir()
    (other / "candidate.py").write_text("kv-other-jobs-code")
    (other / "expected.st").write_text("kv-other-jobs-data")
    other.chmod(0o755)
    seen = jailed(
        tmp_path,
        f"""
        import json, os
        results = {{}}
        for path in ("{other}", "{other}/candidate.py", "{tmp_path}", "/root", "/work", "{ROOT}/tests"):
            try:
                results[path] = sorted(os.listdir(path)) if os.path.isdir(path) else open(path).read()
            except OSError as error:
                results[path] = f"refused: {{error.strerror}}"
        print(json.dumps(results))
    """,
    )
    assert seen[str(other)].startswith("refused"), seen[str(other)]
    assert seen[f"{other}/candidate.py"].startswith("refused")
    assert seen[str(tmp_path)] == ["job"], "only the job's own folder is under its parent"
    assert "kv-other-jobs" not in json.dumps(seen)
    assert seen[f"{ROOT}/tests"].startswith("refused"), (
        "the project's folder is not in the jail, only its packages"
    )


def test_the_jails_process_has_no_privilege(tmp_path: Path) -> None:
    seen = jailed(
        tmp_path,
        """
        import json, os
        status = dict(line.split(":", 1) for line in open("/proc/self/status").read().splitlines() if ":" in line)
        print(json.dumps({key: status[key].strip() for key in ("Uid", "CapEff", "CapBnd", "NoNewPrivs", "Seccomp")}))
    """,
    )
    assert seen["CapEff"] == seen["CapBnd"] == "0000000000000000"
    assert seen["NoNewPrivs"] == "1" and seen["Seccomp"] == "2"
    if os.geteuid() == 0:
        assert seen["Uid"].split()[0] not in ("0", str(os.getuid())), (
            "as root the jail runs as a uid of its own"
        )


def test_a_tool_run_in_a_folder_jail_can_write_only_there(tmp_path: Path) -> None:
    folder = tmp_path / "build"
    folder.mkdir()
    folder.chmod(0o755)
    run = run_sandboxed(["/bin/sh", "-c", "echo built > out.txt; echo x > /kv-nope 2>/dev/null; echo $?"], folder,
                        SandboxLimits(30, None), jail=folder_jail(ISOLATION, folder))  # fmt: skip
    assert run.returncode == 0, run.stderr_tail
    assert (folder / "out.txt").read_text() == "built\n"
    assert run.stdout_tail.strip() != "0" and not Path("/kv-nope").exists()

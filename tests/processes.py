"""A command's processes as /proc sees them, and a command started as a shell in a terminal starts it."""

from __future__ import annotations

import subprocess
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]


def descendants(root: int) -> dict[int, bytes]:
    """Every process below the run `root` (its pool, the jail's launchers, their workers), with its command line.

    Other test runs' processes are not ours to count, so the walk follows parent links from `root` down."""
    parents: dict[int, int] = {}
    commands: dict[int, bytes] = {}
    for entry in Path("/proc").iterdir():
        if not entry.name.isdigit():
            continue
        try:
            parents[int(entry.name)] = int((entry / "stat").read_text().rsplit(")", 1)[1].split()[1])
            commands[int(entry.name)] = (entry / "cmdline").read_bytes()
        except (OSError, ValueError, IndexError):
            continue
    below, frontier = set(), {root}
    while frontier:
        frontier = {pid for pid, parent in parents.items() if parent in frontier} - below
        below |= frontier
    return {pid: commands.get(pid, b"") for pid in below}


def candidate_workers(processes: dict[int, bytes]) -> list[int]:
    return [pid for pid, command in processes.items() if b"kernelvault.toolchain.sandboxed" in command]


def wait_for_a_candidate_worker(process: subprocess.Popen, seconds: float = 120) -> None:
    """Until the run has a candidate's worker (or has ended, or `seconds` passed)."""
    deadline = time.monotonic() + seconds
    while (
        not candidate_workers(descendants(process.pid))
        and process.poll() is None
        and time.monotonic() < deadline
    ):
        time.sleep(0.1)


def alive(pid: int) -> bool:
    try:
        state = (Path("/proc") / str(pid) / "stat").read_text().rsplit(")", 1)[1].split()[0]
    except OSError:
        return False
    return state != "Z"  # a zombie has exited; it only waits to be reaped


def start_in_a_terminal(command: list[str]) -> subprocess.Popen:
    """The command as a shell starts it in a terminal: in a process group of its own, which is what Ctrl-C
    signals (the run's compile processes included), never the run's process alone."""
    return subprocess.Popen(command, cwd=ROOT, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True,
                            start_new_session=True)  # fmt: skip


def assert_no_process_left(below: dict[int, bytes]) -> None:
    deadline = time.monotonic() + 10
    while any(alive(pid) for pid in below) and time.monotonic() < deadline:  # they die with their parent
        time.sleep(0.2)
    left = {pid: below[pid].replace(b"\0", b" ")[:80] for pid in below if alive(pid)}
    assert not left, f"the stopped run left processes running: {left}"

"""One device shared by several verification lanes: checks run side by side, timing runs alone.

A check spends most of its time on the host (the worker's Python, drawing inputs, shipping outputs to the
parent's judge, a Triton JIT compile), so one lane leaves the GPU idle most of the time. Several lanes on
one GPU overlap that work, but two candidates timed at once corrupt each other's latencies. The gate lets
both happen: lanes in their check phase share the device; a lane that reaches its time phase waits until
no other lane is checking, then has the device to itself until its timed requests (the candidate's, then
the reference's, for each performance case of the turn) are answered, and goes back to checking.

Where the gate acts (`kernelvault.toolchain.judge.run_check`, the parent side of each lane, which sends every request
its workers answer): a lane enters the check phase before it starts a worker or sends a job; it asks for
the device alone before the first timed request of a verification and gives it back once the timed requests
of every case it staged are answered (`timing_done`): one turn per verification where the staged inputs fit
(`VerifyConfig.turn_staged_mb`), since each turn first drains the other lanes' requests in flight. What comes
before (building both sides' models and loading the timed inputs onto the device: the `stage_time` requests)
and after (judging the timed calls' outputs on the parent's CPU, the job's end) is check work, so it overlaps the other lanes instead of holding them
off: a turn alone is the timed calls and nothing else. It leaves at the job's end. A lane in its check phase
gives way at request boundaries: when a lane waits to time, a checking lane's next request is not sent
until the timing is over. A worker between requests has nothing of the harness's running on the device.

So a timing waits at most until each checking lane finishes its current request (one forward, say), and
new checks wait while a timing waits (the timer is not starved). Waiting is the lane's, not the
candidate's: it is not on the candidate's clock, and the check stage does not count it (`ProtocolCosts`).

What it does not do: stop a hostile candidate's own stray work (a kernel on a side stream left running,
a thread) from overlapping another candidate's timing; the side-stream and thread guards reject the
candidates that try, and a persistent worker that kept a thread is replaced. One gate serves the lanes of
one process (`gate_for`): lanes of other processes on the same GPU (two Ray actors) do not see it.
"""

from __future__ import annotations

import threading
import time
from enum import Enum


class Phase(Enum):
    IDLE = "idle"
    CHECKING = "checking"
    TIMING = "timing"


class DeviceGate:
    """Readers (checks) share the device; one writer (a timing) has it alone; waiting writers go first."""

    def __init__(self) -> None:
        self._changed = threading.Condition()
        self._checking = 0  # lanes in their check phase, not paused
        self._timing = False  # a lane has the device alone
        self._waiting_timers = 0
        self.timings = 0  # timing phases granted (for tests and stats)
        self.pauses = 0  # times a checking lane gave way to a timing

    def begin_check(self) -> float:
        """Enter the check phase; the seconds waited (while a timing ran or waited)."""
        started = time.monotonic()
        with self._changed:
            while self._timing or self._waiting_timers:
                self._changed.wait()
            self._checking += 1
        return time.monotonic() - started

    def give_way(self) -> float:
        """A checking lane at a message boundary: if a timing waits or runs, step aside until it ends."""
        with self._changed:
            if not (self._timing or self._waiting_timers):
                return 0.0
            started = time.monotonic()
            self.pauses += 1
            self._checking -= 1
            self._changed.notify_all()
            while self._timing or self._waiting_timers:
                self._changed.wait()
            self._checking += 1
        return time.monotonic() - started

    def begin_timing(self) -> float:
        """From the check phase to the device alone; the seconds waited for the other lanes to step aside."""
        started = time.monotonic()
        with self._changed:
            self._checking -= 1
            self._waiting_timers += 1
            self._changed.notify_all()
            while self._timing or self._checking:
                self._changed.wait()
            self._waiting_timers -= 1
            self._timing = True
            self.timings += 1
        return time.monotonic() - started

    def end(self, phase: Phase) -> None:
        """Leave the phase a lane is in (its job ended, or its worker died)."""
        with self._changed:
            if phase is Phase.CHECKING:
                self._checking -= 1
            elif phase is Phase.TIMING:
                self._timing = False
            self._changed.notify_all()


class GateHold:
    """One lane's place at its device's gate: which phase it is in, and how long it has waited this job."""

    def __init__(self, gate: DeviceGate) -> None:
        self.gate = gate
        self.phase = Phase.IDLE
        self.waited = 0.0

    def check(self) -> float:
        """Enter the check phase for a new job (`waited` counts this job's waits from here); the seconds waited."""
        if self.phase is not Phase.IDLE:
            return 0.0
        self.waited = self.gate.begin_check()
        self.phase = Phase.CHECKING
        return self.waited

    def at_request(self, timing: bool) -> float:
        """Before the parent sends a worker a request (`timing`: a timed one); the seconds this lane waited."""
        if self.phase is not Phase.CHECKING:
            return 0.0
        if timing:
            waited = self.gate.begin_timing()
            self.phase = Phase.TIMING
        else:
            waited = self.gate.give_way()
        self.waited += waited
        return waited

    def timing_done(self) -> float:
        """A case's timed requests are answered: give the device back and check again (other lanes' waiting
        timings go first); the seconds waited."""
        if self.phase is not Phase.TIMING:
            return 0.0
        self.gate.end(Phase.TIMING)
        self.phase = Phase.IDLE
        waited = self.gate.begin_check()
        self.phase = Phase.CHECKING
        self.waited += waited
        return waited

    def release(self) -> None:
        if self.phase is not Phase.IDLE:
            self.gate.end(self.phase)
            self.phase = Phase.IDLE


_GATES: dict[str, DeviceGate] = {}
_GATES_LOCK = threading.Lock()


def gate_for(device: str) -> DeviceGate:
    """The one gate of this process for `device` (a GPU index, or `cpu`)."""
    with _GATES_LOCK:
        return _GATES.setdefault(device, DeviceGate())

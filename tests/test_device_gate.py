"""Several verification lanes on one device: checks overlap, timings run alone (`kernelvault.toolchain.device_gate`)."""

from __future__ import annotations

import re
import subprocess
import sys
import threading
import time
from pathlib import Path

import pytest
import small_tasks

from kernelvault.contracts import Candidate, Verdict
from kernelvault.toolchain.device_gate import DeviceGate, GateHold, Phase
from kernelvault.toolchain.lane_pool import parse_devices
from kernelvault.toolchain.verify import Verifier, VerifyConfig
from kernelvault.toolchain.worker_lane import PersistentWorker, WorkerLane

ROOT = Path(__file__).resolve().parents[1]
RELU = (ROOT / "examples" / "triton" / "relu.py").read_text()


def _start(target, *args) -> tuple[threading.Thread, threading.Event]:  # noqa: ANN001
    done = threading.Event()

    def run() -> None:
        target(*args)
        done.set()

    thread = threading.Thread(target=run, daemon=True)
    thread.start()
    return thread, done


def _verify_relu_on(lane: WorkerLane, verifier: Verifier, task) -> Verdict:  # noqa: ANN001
    """The bundled relu example verified on `lane`, which is closed after."""
    try:
        return verifier.complete(
            verifier.prepare(task, Candidate(task.task_id, "triton", RELU, "test")), lane
        )
    finally:
        lane.close()


def test_checks_share_the_device_and_a_timing_waits_for_them_then_runs_alone() -> None:
    gate = DeviceGate()
    first, second = GateHold(gate), GateHold(gate)
    first.check()
    second.check()  # two checks at once: neither waits
    assert first.phase is second.phase is Phase.CHECKING

    _, timing_granted = _start(second.at_request, True)  # second sends its first timed request
    assert not timing_granted.wait(0.3), "a timing must wait while another lane is checking"

    third = GateHold(gate)
    _, third_in = _start(third.check)
    assert not third_in.wait(0.3), "a new check must wait while a timing waits (the timer is not starved)"

    _, first_resumed = _start(first.at_request, False)  # first's next request: it gives way
    assert timing_granted.wait(5) and second.phase is Phase.TIMING
    assert not first_resumed.wait(0.3) and not third_in.is_set(), "nobody checks while a lane times"

    second.release()  # the timed job ended
    assert first_resumed.wait(5) and third_in.wait(5)
    assert first.phase is third.phase is Phase.CHECKING and second.phase is Phase.IDLE
    assert first.waited > 0.2 and second.waited > 0.2 and gate.timings == 1 and gate.pauses == 1
    first.release()
    third.release()
    assert GateHold(gate).check() == pytest.approx(0.0, abs=0.05)  # the gate is free again


def test_a_lane_gives_the_device_back_once_its_timed_requests_are_answered() -> None:
    """What follows a case's timing (judging spot checks, the next case's inputs) is check work: other lanes
    check beside it, and a timing that waited meanwhile goes before the lane's own next request."""
    gate = DeviceGate()
    first, second, third = GateHold(gate), GateHold(gate), GateHold(gate)
    first.check()
    first.at_request(True)  # alone on the device: its candidate's and reference's timed requests
    _, second_in = _start(second.check)
    assert not second_in.wait(0.3), "nobody checks while a lane times"
    first.timing_done()
    assert second_in.wait(5) and first.phase is second.phase is Phase.CHECKING
    assert first.at_request(False) == 0.0  # its next (check) request goes at once beside the other check

    _, third_timing = _start(lambda: (third.check(), third.at_request(True)))
    time.sleep(0.3)  # third is in and waits to time: both checking lanes give way at their next request
    _, first_paused = _start(first.at_request, False)
    assert not third_timing.wait(0.3), "a timing waits for every checking lane to reach a request boundary"
    _, second_paused = _start(second.at_request, False)
    assert third_timing.wait(5) and third.phase is Phase.TIMING
    assert not first_paused.wait(0.3) and not second_paused.is_set()
    third.timing_done()  # the device is given back: the paused lanes and third check side by side
    assert first_paused.wait(5) and second_paused.wait(5) and third.phase is Phase.CHECKING
    for hold in (first, second, third):
        hold.release()
    assert gate.timings == 2 and GateHold(gate).check() == pytest.approx(0.0, abs=0.05)


def test_a_lane_alone_on_its_device_never_waits() -> None:
    hold = GateHold(DeviceGate())
    hold.check()
    assert hold.at_request(False) == 0.0 and hold.at_request(True) < 0.05 and hold.phase is Phase.TIMING
    assert hold.at_request(False) == 0.0  # requests while timing go at once
    hold.release()
    assert hold.phase is Phase.IDLE


def test_lanes_per_gpu() -> None:
    assert parse_devices("0,1", 1, gpu_lanes=3) == ("0", "0", "0", "1", "1", "1")
    assert parse_devices("cpu", 2, gpu_lanes=3) == ("cpu", "cpu")
    with pytest.raises(ValueError, match="twice"):
        parse_devices("0,0", 1)
    with pytest.raises(ValueError, match="at least 1"):
        parse_devices("0", 1, gpu_lanes=0)


@pytest.fixture(scope="module")
def small_relu(tmp_path_factory: pytest.TempPathFactory):  # noqa: ANN201
    return small_tasks.small_relu(tmp_path_factory.mktemp("task"))


def test_a_lane_paused_for_another_lanes_timing_is_not_charged_for_the_wait(small_relu) -> None:  # noqa: ANN001
    """A real check worker, paused mid-job for longer than its candidate's timeout: the candidate does not
    time out, and its check stage says how long the lane waited instead of counting it."""
    timeout_s, held_s = 20.0, 21.0
    verifier = Verifier(VerifyConfig(platform="cpu", timeout_s=timeout_s))
    gate = DeviceGate()
    lane = WorkerLane(gate=gate)
    verdicts = []
    try:
        prepared = verifier.prepare(small_relu, Candidate(small_relu.task_id, "triton", RELU, "test"))
        lane_thread, _ = _start(lambda: verdicts.append(verifier.complete(prepared, lane)))
        deadline = time.monotonic() + 300  # the worker's start (import torch) comes first
        while gate._checking == 0 and lane_thread.is_alive() and time.monotonic() < deadline:
            time.sleep(0.01)
        timer = GateHold(gate)  # another lane of the device, which now wants to time
        timer.check()
        timer.at_request(True)  # granted once the lane gives way at its next request
        assert gate.pauses == 1 and lane_thread.is_alive()
        time.sleep(held_s)
        timer.release()
        lane_thread.join(timeout=120)
    finally:
        lane.close()
    (verdict,) = verdicts
    assert verdict.correct is True and verdict.failure_kind is None, verdict.failure_message
    check = next(stage for stage in verdict.stages if stage.name == "check")
    waited = re.search(r"waited ([\d.]+) s at the device's gate", check.log)
    assert waited is not None and float(waited.group(1)) >= held_s - 0.5, check.log
    assert check.seconds < float(waited.group(1))  # the wait is not the check's work


def test_two_lanes_of_one_device_never_time_while_the_other_checks(small_relu) -> None:  # noqa: ANN001
    """Two lanes verify timed candidates side by side through real workers (the timing protocol on CPU):
    every timing was granted with no lane checking, and none began while another ran."""
    overlaps: list[str] = []

    class WatchedGate(DeviceGate):
        def begin_timing(self) -> float:
            waited = super().begin_timing()
            with self._changed:
                if self._checking:
                    overlaps.append(f"{self._checking} lane(s) checking when a timing began")
            return waited

        def end(self, phase: Phase) -> None:
            with self._changed:
                if phase is Phase.TIMING and self._checking:
                    overlaps.append(f"{self._checking} lane(s) checking while a lane timed")
            super().end(phase)

    verifier = Verifier(VerifyConfig(platform="cpu", time_on_cpu=True, repetitions=6, warmup=1, input_sets=2))
    gate = WatchedGate()
    verdicts: list = []

    def lane_work() -> None:
        lane = WorkerLane(gate=gate)
        try:
            for _ in range(2):
                prepared = verifier.prepare(small_relu, Candidate(small_relu.task_id, "triton", RELU, "test"))
                verdicts.append(verifier.complete(prepared, lane))
        finally:
            lane.close()

    threads = [threading.Thread(target=lane_work) for _ in range(2)]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join(timeout=600)
    assert len(verdicts) == 4 and all(v.correct for v in verdicts), [v.failure_message for v in verdicts]
    assert all(len(v.timings) == 2 for v in verdicts)
    # one turn alone on the device per verification (4 verdicts, 2 cases timed in each turn), none beside a check
    assert gate.timings == 4 and overlaps == []


@pytest.mark.parametrize(("turn_megabytes", "turns"), [(None, 1), (0.0, 2)])
def test_only_the_timed_calls_hold_the_device_alone(small_relu, monkeypatch, turn_megabytes, turns) -> None:  # noqa: ANN001
    """Building the model, loading the timed inputs and the observed run happen while the device is shared
    (`stage_time`); a lane has the device alone for the candidate's and the reference's timed calls only, and
    for both performance cases in one turn, unless their staged inputs exceed the turn's budget (here 0 MB:
    one turn per case)."""
    sent: list[tuple[str, str, Phase]] = []
    request = PersistentWorker.request

    def watched(self, body, timeout_s):  # noqa: ANN001, ANN202
        sent.append((self.kind, body.OP, lane.hold.phase))
        return request(self, body, timeout_s)

    monkeypatch.setattr(PersistentWorker, "request", watched)
    budget = {} if turn_megabytes is None else {"turn_staged_mb": turn_megabytes}
    verifier = Verifier(
        VerifyConfig(platform="cpu", time_on_cpu=True, repetitions=6, warmup=1, input_sets=2, **budget)
    )
    gate = DeviceGate()
    lane = WorkerLane(gate=gate)
    verdict = _verify_relu_on(lane, verifier, small_relu)
    assert verdict.correct is True and len(verdict.timings) == 2, verdict.failure_message
    assert [timing.case for timing in verdict.timings] == [case.name for case in small_relu.performance_cases]
    alone = [(kind, op) for kind, op, phase in sent if phase is Phase.TIMING]
    assert alone == [("candidate", "time"), ("reference", "time")] * 2
    staged = [phase for kind, op, phase in sent if op == "stage_time"]
    assert staged == [Phase.CHECKING] * 4  # each side, each performance case
    assert gate.timings == turns
    # the check's log says where the job's time went, per case of the plan
    check = next(stage for stage in verdict.stages if stage.name == "check")
    parts = re.search(r"seconds per case: (.*)$", check.log, re.MULTILINE)
    assert parts is not None, check.log
    named = [item.rsplit(" ", 1)[0] for item in parts.group(1).split(" | ")]
    cases = small_relu.correctness_cases + small_relu.performance_cases
    assert named == [f"check {case.name}" for case in cases] + [
        f"time {case.name}" for case in small_relu.performance_cases
    ]


def test_the_parents_own_judging_time_is_not_on_the_candidates_clock(small_relu, monkeypatch) -> None:  # noqa: ANN001
    """Lanes that share a parent slow each other's comparisons; a candidate waiting for them must not time
    out. Here every comparison of the parent takes 2 s more than it should, longer in all than the timeout."""
    import kernelvault.toolchain.judge

    compare = kernelvault.toolchain.judge.compare_outputs

    def slow_compare(*args, **kwargs):  # noqa: ANN002, ANN003, ANN202
        time.sleep(2.0)
        return compare(*args, **kwargs)

    monkeypatch.setattr(kernelvault.toolchain.judge, "compare_outputs", slow_compare)
    verdict = _verify_relu_on(
        WorkerLane(gate=DeviceGate()), Verifier(VerifyConfig(platform="cpu", timeout_s=12.0)), small_relu
    )
    assert verdict.correct is True and verdict.failure_kind is None, verdict.failure_message
    check = next(stage for stage in verdict.stages if stage.name == "check")
    costs = re.search(r"check protocol: (\d+) request\(s\).*comparing ([\d.]+) s", check.log)
    assert costs is not None and float(costs.group(2)) > 12.0, check.log  # more than the whole timeout


@pytest.mark.parametrize(
    ("arguments", "message"),
    [
        (["--lanes-per-gpu", "0"], "--lanes-per-gpu is at least 1, not 0"),
        (
            ["--devices", "0,0"],
            "--devices names a GPU twice ('0,0'): use --lanes-per-gpu for more lanes on one",
        ),
        (
            ["--executor", "ray", "--lanes-per-gpu", "2"],
            "--lanes-per-gpu above 1 needs the local executor: Ray runs one actor per GPU",
        ),
    ],
)
def test_bad_lane_arguments_are_one_line_usage_errors(
    tmp_path: Path, arguments: list[str], message: str
) -> None:
    run = subprocess.run([sys.executable, "-m", "kernelvault.cli", "corpus", "--platform", "cpu",
                          "--out", str(tmp_path / "out"), *arguments], capture_output=True, text=True,
                         cwd=ROOT, timeout=120)  # fmt: skip
    assert run.returncode == 2 and not (tmp_path / "out").exists()
    assert run.stderr.strip().splitlines() == [f"kernelvault: error: {message}"]

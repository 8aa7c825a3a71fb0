"""The records the parent sends its workers (toolchain/worker_jobs.py), and what they guarantee.

Every request crosses the process boundary as JSON and is read back as the record it was, or refused with one
line; and a job cannot start a worker without the verifier's isolation. The last test is the hole that the
untyped jobs left: the cross-compile job travelled without the isolation, so on the CPU platform the worker
that imports the candidate to compile its kernels ran outside the jail.
"""

from __future__ import annotations

import os
import sys
import threading
from pathlib import Path
from typing import Any

import pytest

from kernelvault.contracts import Candidate, Task, Verdict
from kernelvault.toolchain.jail import probe_isolation
from kernelvault.toolchain.lane_pool import verify_once
from kernelvault.toolchain.sandboxed.requests import (
    OPERATIONS,
    Build,
    CheckTask,
    Compile,
    End,
    Forward,
    Load,
    PilotReference,
    Prepare,
    StageReference,
    StageTime,
    Time,
    TimeReference,
    WireError,
    WriteKept,
    WriteKeptReference,
    from_wire,
    to_wire,
)
from kernelvault.toolchain.tasks import load_task_file
from kernelvault.toolchain.verify import Verifier, VerifyConfig
from kernelvault.toolchain.worker_lane import WorkerLane

ROOT = Path(__file__).resolve().parents[1]
TASK = dict(
    task_path="/job/task.py", platform="cuda", allow_tf32=False, entry=None, case="small", overrides={"N": 8}
)
REQUESTS = {
    "candidate": [
        Load("cuda", "/job/c.py", "/job/l.jsonl", "/job", "kv_candidate_1", "/cache", "/cache/inline", False,
             "halve", ["halve"], False, ["import math"], ["aten::copy_"], "hip", "native", "/lib.so", "ab12"),
        Build("/in/init.st", 7),
        Forward("/in/x.st", "/out/y.st", poison=12345.0, reuse_inputs=True),
        StageTime("/in/init.st", 7, ["/in/a.st", "/in/b.st"], True),
        Time(20, 3, 123456789, calls_per_sample=8, case="small", inputs="rotate"),
        WriteKept("small", {"6": "/out/t6.st"}, share=True),
        End(),
    ],
    "reference": [
        Prepare(**TASK, weight_seed=3, sets=[{"name": "check0", "seed": 5}], out_dir="/ref"),
        StageReference(**TASK, weight_seed=3, init_path="/ref/init.st", inputs_paths=["/ref/a.st"],
                       fresh_arguments=True),
        PilotReference(**TASK, weight_seed=3, warmup=3),
        TimeReference(**TASK, weight_seed=3, repetitions=20, warmup=3, timing_seed=123456789, keep=[6, 11],
                      calls_per_sample=8, atol=1e-3, rtol=None),
        WriteKeptReference(**TASK, weight_seed=3, outputs={"6": "/ref/t6.st"}),
    ],
    "cross_compile": [Compile("/job/c.py", "/job/l.jsonl", "kv_candidate_2", "hip", "gfx942", 64, [])],
    "task_check": [CheckTask("/t/task.py", "/t/result.json", [{"name": "small", "overrides": {}}], "halve")],
}  # fmt: skip


@pytest.mark.parametrize("kind", sorted(REQUESTS))
def test_every_request_reads_back_as_the_record_it_was(kind: str) -> None:
    assert {type(request) for request in REQUESTS[kind]} == set(OPERATIONS[kind].values())
    for request in REQUESTS[kind]:
        wire = to_wire(request)
        assert wire["op"] == request.OP
        assert from_wire(kind, wire) == request


def test_an_operation_means_the_record_of_the_worker_that_receives_it() -> None:
    # "time" is the candidate's timed calls to one worker and the reference's timing to the other.
    candidate_time, reference_time = REQUESTS["candidate"][4], REQUESTS["reference"][3]
    assert to_wire(candidate_time)["op"] == to_wire(reference_time)["op"] == "time"
    with pytest.raises(WireError, match="missing field"):
        from_wire("reference", to_wire(candidate_time))
    # "write_kept" too: the reference's names the task and the case it kept outputs of
    assert to_wire(REQUESTS["candidate"][5])["op"] == to_wire(REQUESTS["reference"][4])["op"] == "write_kept"
    with pytest.raises(WireError, match="missing field"):
        from_wire("reference", to_wire(REQUESTS["candidate"][5]))
    with pytest.raises(WireError, match="no request 'prepare'"):
        from_wire("candidate", to_wire(REQUESTS["reference"][0]))


@pytest.mark.parametrize(
    ("body", "message"),
    [
        ({"op": "build", "init_path": "/x"}, "missing field(s) weight_seed"),
        ({"op": "build", "init_path": "/x", "weight_seed": 1, "seed": 2}, "unknown field(s) seed"),
        ({"op": "compile"}, "has no request 'compile'"),
        ({"init_path": "/x"}, "has no request None"),
        (["build"], "a request is a JSON object, not list"),
    ],
)
def test_a_request_that_is_not_one_of_the_workers_records_is_refused_in_one_line(
    body: object, message: str
) -> None:
    with pytest.raises(WireError, match=message.replace("(", r"\(").replace(")", r"\)")) as refused:
        from_wire("candidate", body)
    assert "\n" not in str(refused.value)


ISOLATION = probe_isolation(sys.executable)
# Runs in the cross-compile stage only: the CPU check runs under Triton's interpreter, the compile stage does not.
REPORTS_ITS_UID = (
    (ROOT / "examples/triton/relu.py").read_text()
    + """
import os as _os

if _os.environ.get("TRITON_INTERPRET") != "1":
    raise RuntimeError(f"kv-probe uid={_os.getuid()}")
"""
)


@pytest.mark.skipif(not ISOLATION.jailed, reason=f"no OS jail on this machine: {ISOLATION.detail}")
@pytest.mark.parametrize("persistent", [True, False], ids=["lane", "fresh"])
@pytest.mark.fresh_workers  # "fresh": the pool of one's fresh workers, as they are
def test_the_cross_compile_stage_runs_the_candidate_in_the_jail(persistent: bool) -> None:
    task = load_task_file(ROOT / "tasks" / "relu.py")
    verifier = Verifier(VerifyConfig(platform="cpu", timeout_s=60, static_wall=False))
    candidate = Candidate(task.task_id, "triton", REPORTS_ITS_UID, "test:uid")
    if persistent:
        lane = WorkerLane(device="cpu")
        try:
            verdict = verifier.complete(verifier.prepare(task, candidate), lane)
            assert {kind: worker.jailed for kind, worker in lane.workers.items()} == {
                "candidate": True, "reference": True, "cross_compile": True}  # fmt: skip
        finally:
            lane.close()
    else:
        verdict = verify_once(verifier, task, candidate)
    compile_log = next(stage.log for stage in verdict.stages if stage.name == "compile")
    assert "kv-probe uid=" in compile_log, compile_log
    uid = int(compile_log.split("kv-probe uid=")[1].split()[0].rstrip(")'\""))
    assert uid != os.getuid(), f"the cross-compiler ran the candidate as the pipeline's own user ({uid})"


def _relu_job() -> tuple[Verifier, Task, Candidate]:
    task = load_task_file(ROOT / "tasks" / "relu.py")
    candidate = Candidate(task.task_id, "triton", (ROOT / "examples/triton/relu.py").read_text(), "test:relu")
    return Verifier(VerifyConfig(platform="cpu", timeout_s=120)), task, candidate


def _assert_correct(verdict: Verdict) -> None:
    assert (verdict.failure_kind, verdict.correct) == (None, True), verdict.failure_message


@pytest.mark.parametrize("kind", ["candidate", "reference"])
def test_a_lane_whose_worker_was_killed_between_jobs_gives_the_next_candidate_its_verdict(kind: str) -> None:
    """A worker killed from outside (the OOM killer, an operator) while idle: the lane starts a fresh worker and
    the candidate gets its own verdict, not an infrastructure error, and so does every later one. The reference's
    worker too (it once was not replaced: the next job's verdict was `the reference worker failed: (no output)`)."""
    verifier, task, candidate = _relu_job()
    lane = WorkerLane(device="cpu")
    try:
        _assert_correct(verifier.complete(verifier.prepare(task, candidate), lane))
        process = lane.workers[kind]._process
        assert process is not None
        os.killpg(process.pid, 9)
        process.wait()
        for _ in range(2):
            _assert_correct(verifier.complete(verifier.prepare(task, candidate), lane))
        assert lane.workers[kind].pid not in (None, process.pid)
        assert lane.workers[kind].stats.restarts["exited"] == 1
    finally:
        lane.close()


def test_a_lane_first_used_from_a_thread_that_has_exited_gives_the_next_candidate_its_verdict() -> None:
    """Linux kills a sandboxed worker when the thread that started it exits (PR_SET_PDEATHSIG): a lane first used
    from a short-lived thread (asyncio's `to_thread` pool, a reward service's worker) holds three dead workers once
    that thread is gone. What the test suite's shared lanes met: the next job is checked on fresh ones."""
    verifier, task, candidate = _relu_job()
    lane = WorkerLane(device="cpu")
    try:
        verdicts: list[Verdict] = []

        def verify_and_exit() -> None:
            verdicts.append(verifier.complete(verifier.prepare(task, candidate), lane))

        thread = threading.Thread(target=verify_and_exit)
        thread.start()
        thread.join()
        _assert_correct(verdicts[0])
        killed = {kind: worker._process for kind, worker in lane.workers.items()}
        assert set(killed) == {"candidate", "reference", "cross_compile"}
        assert all(process is not None and process.wait(timeout=30) == -9 for process in killed.values())
        _assert_correct(verifier.complete(verifier.prepare(task, candidate), lane))
        replaced = {kind: lane.workers[kind].stats.restarts["exited"] for kind in killed}
        assert replaced == dict.fromkeys(killed, 1)
    finally:
        lane.close()


def test_a_reference_worker_that_dies_during_a_job_is_replaced_and_the_job_retried_once(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    """The reference's worker killed during a job (the candidate's worker has loaded it, the reference's next
    request is not sent yet): the job is checked again on a fresh reference worker, as a candidate's is after its
    worker's crash, instead of ending in an infrastructure error."""
    verifier, task, candidate = _relu_job()
    lane = WorkerLane(device="cpu")
    try:
        _assert_correct(
            verifier.complete(verifier.prepare(task, candidate), lane)
        )  # the lane's workers are started
        reference = lane.workers["reference"]
        victim = reference.pid
        assert victim is not None
        answer = reference.request

        def killed_before_answering(request: Any, timeout_s: float) -> dict[str, Any] | None:
            monkeypatch.setattr(reference, "request", answer)  # once: the fresh worker answers
            os.killpg(victim, 9)
            return answer(request, timeout_s)

        monkeypatch.setattr(reference, "request", killed_before_answering)
        _assert_correct(verifier.complete(verifier.prepare(task, candidate), lane))
        assert (reference.stats.retries, reference.stats.restarts["crash"]) == (1, 1)
        assert reference.pid not in (None, victim)
    finally:
        lane.close()


def test_a_request_left_in_a_dead_workers_pipe_does_not_stop_the_pipe_closing() -> None:
    """The case behind the lane's recovery: a request buffered for a worker that died, whose pipe has no reader
    left. Closing the pipe fails to write it; the pipe must end closed and the failure must not escape (it once
    left a lane's worker half-stopped, so every later candidate of the lane got `write to closed file`)."""
    import subprocess

    from kernelvault.toolchain.worker import close_request_pipe

    process = subprocess.Popen([sys.executable, "-c", "pass"], stdin=subprocess.PIPE)
    process.wait()
    assert process.stdin is not None
    process.stdin.write(b'{"id": 1}\n')  # buffered: no reader will ever take it
    with pytest.raises(BrokenPipeError):
        process.stdin.flush()
    close_request_pipe(process.stdin)
    assert process.stdin.closed

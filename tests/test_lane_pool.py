"""The lane pool, the one way candidates run: from any thread, from coroutines, in batches, pinned to GPUs."""

from __future__ import annotations

import asyncio
import re
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path

import pytest

from kernelvault.contracts import Candidate, Task
from kernelvault.toolchain.lane_pool import LanePool, pool_lanes, verify_once, visible_gpus
from kernelvault.toolchain.tasks import load_task_file
from kernelvault.toolchain.verify import Verifier, VerifyConfig

ROOT = Path(__file__).resolve().parents[1]
RELU = (ROOT / "examples" / "triton" / "relu.py").read_text()
BROKEN = "not python at all ```"


@pytest.fixture(scope="module")
def relu_task() -> Task:
    return load_task_file(ROOT / "tasks" / "relu.py")


@pytest.fixture(scope="module")
def verifier() -> Verifier:
    return Verifier(VerifyConfig(platform="cpu", timeout_s=60))


def _candidate(task: Task, text: str) -> Candidate:
    return Candidate(task.task_id, "triton", text, "test")


def test_callers_on_any_thread_share_one_long_lived_worker(relu_task: Task, verifier: Verifier) -> None:
    """asyncio.to_thread calls, a reward function's threads, an HTTP server's: one lane thread owns the
    workers and reuses them; what is decided before the device never reaches a lane."""
    candidates = [_candidate(relu_task, RELU), _candidate(relu_task, BROKEN), _candidate(relu_task, RELU)]
    with LanePool(verifier, ["cpu"]) as pool, ThreadPoolExecutor(3) as callers:
        verdicts = list(callers.map(lambda candidate: pool.verify(relu_task, candidate), candidates))
        stats = pool.lanes[0].stats()["candidate"]
    assert [verdict.correct for verdict in verdicts] == [True, False, True]
    assert verdicts[1].failure_kind in ("parse_error", "static_reject")
    assert (
        stats.jobs == 2 and not stats.restarts and stats.starts == 1
    )  # one process served both (no spare on CPU)
    assert len(pool.timeline) == 2  # two device stages, one lane


@pytest.mark.fresh_workers  # about the pool of one itself, not the session's lanes that stand in for it
def test_a_single_verdict_comes_from_a_pool_of_one_in_the_fresh_mode(
    relu_task: Task, verifier: Verifier
) -> None:
    """`verify_once`: the same lanes as every consumer's, one of them, a worker per job, nothing left running."""
    once = LanePool.once(verifier)
    try:
        assert once.devices == ("cpu",) and once.restart_every == 1
    finally:
        once.close()
    opened: list[LanePool] = []
    real_once = LanePool.once

    def watched(verifier: Verifier) -> LanePool:
        opened.append(real_once(verifier))
        return opened[-1]

    with pytest.MonkeyPatch.context() as patch:
        patch.setattr(LanePool, "once", staticmethod(watched))
        verdict = verify_once(verifier, relu_task, _candidate(relu_task, RELU))
    assert verdict.correct is True, verdict.failure_message
    (pool,) = opened
    (lane,) = pool.lanes
    assert pool.lane_jobs() == {"cpu#0": 1}
    assert (
        lane.workers["candidate"].pid is None and lane.workers["reference"].pid is None
    )  # closed with the pool


def test_submit_collect_and_averify_give_the_same_verdicts_in_order(
    relu_task: Task, verifier: Verifier
) -> None:
    wrong = RELU.replace("tl.where(x < 0, tl.zeros_like(x), x)", "x")
    assert wrong != RELU
    texts = [RELU, BROKEN, wrong]  # correct, unparsable, wrong values
    with LanePool(verifier, ["cpu", "cpu"]) as pool:
        submitted = pool.collect([pool.submit(relu_task, _candidate(relu_task, text)) for text in texts])

        async def awaited() -> list[object]:
            return list(
                await asyncio.gather(*(pool.averify(relu_task, _candidate(relu_task, t)) for t in texts))
            )

        from_coroutines = asyncio.run(awaited())
    kinds = [(verdict.correct, verdict.failure_kind) for verdict in submitted]
    assert kinds[0] == (True, None) and kinds[1][0] is False and kinds[2] == (False, "mismatch"), kinds
    assert [(verdict.correct, verdict.failure_kind) for verdict in from_coroutines] == kinds  # type: ignore[attr-defined]
    assert {job.lane for job in pool.timeline} == {0, 1}  # four device stages over both lanes


def test_a_closed_pool_refuses_work(relu_task: Task, verifier: Verifier) -> None:
    pool = LanePool(verifier, ["cpu"])
    pool.close()
    with pytest.raises(RuntimeError, match="closed"):
        pool.verify(relu_task, _candidate(relu_task, RELU))
    with pytest.raises(RuntimeError, match="closed"):
        pool.submit(relu_task, _candidate(relu_task, RELU)).result()


def test_lanes_go_on_every_gpu_the_process_may_use() -> None:
    """A reward function or `rl serve` started on a 4-GPU node puts a lane on each GPU, not four on cuda:0;
    a scheduler's share (CUDA_VISIBLE_DEVICES=2,3) is kept as the node's ids the workers are pinned to."""
    assert visible_gpus({}, count=4) == ("0", "1", "2", "3")
    assert visible_gpus({"CUDA_VISIBLE_DEVICES": "2,3"}, count=8) == ("2", "3")
    assert visible_gpus({"HIP_VISIBLE_DEVICES": "1"}, count=8) == ("1",)
    assert visible_gpus({"CUDA_VISIBLE_DEVICES": "GPU-5f2c,GPU-9a1b"}, count=2) == (
        "0",
        "1",
    )  # UUIDs: by count
    assert pool_lanes("cpu", cpu_lanes=3) == ("cpu", "cpu", "cpu")
    assert pool_lanes("cuda", "0,1", lanes_per_gpu=2) == ("0", "0", "1", "1")
    with pytest.raises(ValueError, match="twice"):
        pool_lanes("cuda", "1,1")


def test_no_visible_gpu_is_a_clear_error(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr("kernelvault.toolchain.lane_pool.visible_gpus", lambda: ())
    with pytest.raises(ValueError, match="no visible GPU"):
        pool_lanes("cuda")


def test_each_lanes_workers_are_pinned_to_its_device(relu_task: Task, verifier: Verifier) -> None:
    """Fake devices on the CPU platform: the lane of device 3 starts its workers with only GPU 3 visible,
    the lane of device 5 with only GPU 5 (on a GPU node that is what keeps each lane on its own GPU)."""
    with LanePool(verifier, ["3", "5"]) as pool:
        pool.collect([pool.submit(relu_task, _candidate(relu_task, RELU)) for _ in range(4)])
        pinned = {
            lane.device: {
                kind: worker.env.get("CUDA_VISIBLE_DEVICES") for kind, worker in lane.workers.items()
            }
            for lane in pool.lanes
        }
    assert set(pinned) == {"3", "5"}, pinned
    for device, workers in pinned.items():
        assert {"candidate", "reference"} <= set(workers) and set(workers.values()) == {device}, pinned


def _spread(lane_jobs: dict[str, int]) -> dict[str, int]:
    """Device stages per device (lanes of one device added up)."""
    per_device: dict[str, int] = {}
    for lane, count in lane_jobs.items():
        device = lane.split("#")[0]
        per_device[device] = per_device.get(device, 0) + count
    return per_device


def test_the_rl_reward_functions_spread_over_the_named_gpus(relu_task: Task) -> None:
    """TRL's reward functions and verl's compute_score verify through `rl.verifiers`: with two (fake)
    devices, concurrent verifications land on both, with the verdicts the bare toolchain gives."""
    from kernelvault.rl.verifiers import verdict_source

    source = verdict_source(platform="cpu", devices="0,1", timeout_s=60)
    assert source.pool is not None and source.pool.devices == ("0", "1") and source.slots == 4
    try:
        with ThreadPoolExecutor(4) as callers:
            verdicts = list(
                callers.map(lambda _: source.verify(relu_task, _candidate(relu_task, RELU)), range(4))
            )
        spread = _spread(source.pool.lane_jobs())
    finally:
        source.pool.close()
    bare = verify_once(
        Verifier(VerifyConfig(platform="cpu", timeout_s=60)), relu_task, _candidate(relu_task, RELU)
    )
    assert {(v.correct, v.reward.total if v.reward else None) for v in verdicts} == {
        (bare.correct, bare.reward.total if bare.reward else None)
    }
    assert set(spread) == {"0", "1"} and all(count >= 1 for count in spread.values()), spread


def test_rl_serve_puts_a_lane_on_each_named_gpu(relu_task: Task) -> None:
    """`kernelvault rl serve --devices 0,1`: one pool, a lane on each device, four requests in flight land on
    both (its /v1/health says how many device stages each lane ran); the verdicts are the toolchain's.
    Started as a script's background job would start it (SIGINT ignored), Ctrl-C still stops it."""
    import json
    import signal
    import subprocess
    import sys
    import urllib.request

    from kernelvault.rl.reward_service import RemoteVerifier

    serve = [
        sys.executable,
        "-m",
        "kernelvault.cli",
        "rl",
        "serve",
        "--platform",
        "cpu",
        "--devices",
        "0,1",
        "--port",
        "0",
    ]
    server = subprocess.Popen(
        ["sh", "-c", 'trap "" INT; exec "$@"', "sh", *serve],  # SIG_IGN for SIGINT survives the exec
        stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True, cwd=ROOT,
    )  # fmt: skip
    try:
        assert server.stdout is not None
        banner = server.stdout.readline()
        assert "lanes on 0,1" in banner and "4 request(s) at once" in banner, banner
        url = banner.split("reward service at ")[1].split()[0]
        remote = RemoteVerifier(url, poll_s=1.0)
        answer = f"```python\n{RELU}```"
        with ThreadPoolExecutor(4) as callers:
            verdicts = list(callers.map(
                lambda _: remote.verify(relu_task, Candidate(relu_task.task_id, "triton", answer, "model:test")), range(4)
            ))  # fmt: skip
        with urllib.request.urlopen(f"{url}/v1/health", timeout=10) as response:
            health = json.loads(response.read())
    finally:
        server.send_signal(signal.SIGINT)
        stopped = server.wait(timeout=60)
    assert stopped == 128 + signal.SIGINT  # stopped by Ctrl-C, as a script's `$?` should say
    assert server.stderr is not None
    logged = server.stderr.read().splitlines()  # one line per request: method, path, status, seconds
    assert sum(" POST /v1/jobs 202 " in line for line in logged) == 4, logged
    assert any(re.search(r" GET /v1/health 200 \d+\.\d{3}s$", line) for line in logged), logged
    assert all(verdict.correct is True for verdict in verdicts)
    spread = _spread(health["lanes"])
    assert set(spread) == {"0", "1"} and sum(spread.values()) == 4 and min(spread.values()) >= 1, health


def test_lanes_of_one_device_share_its_gate_and_other_devices_do_not(
    relu_task: Task, verifier: Verifier
) -> None:
    """Two lanes on (fake) GPU 0 and one on GPU 1: the two of GPU 0 hold the same gate, so their timings take
    turns (the gate's rule itself: test_device_gate.py), and GPU 1's lane times on its own."""
    with LanePool(verifier, ["0", "0", "1"]) as pool:
        pool.collect([pool.submit(relu_task, _candidate(relu_task, RELU)) for _ in range(3)])
        gates = {id(lane): (lane.device, lane.gate) for lane in pool.lanes}
    by_device: dict[str, set[int]] = {}
    for device, gate in gates.values():
        by_device.setdefault(device, set()).add(id(gate))
    assert len(by_device["0"]) == 1 and len(by_device["1"]) == 1 and by_device["0"] != by_device["1"]

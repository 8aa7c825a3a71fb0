"""The pipeline executor and the persistent verification workers (CPU, interpreter)."""

from __future__ import annotations

import asyncio
import os
import queue
import signal
import threading
import time
from collections.abc import Callable, Iterator
from concurrent.futures import Future, ThreadPoolExecutor
from pathlib import Path

import pytest

from kernelvault.contracts import Candidate
from kernelvault.pipelines.executor import ExecutorConfig, LocalExecutor
from kernelvault.toolchain.lane_pool import parse_devices
from kernelvault.toolchain.tasks import load_task_file
from kernelvault.toolchain.verify import Verifier, VerifyConfig
from kernelvault.toolchain.worker_lane import WorkerLane

ROOT = Path(__file__).resolve().parents[1]
RELU = (ROOT / "examples" / "triton" / "relu.py").read_text()


class SlowStage:
    """A stand-in for PoolStage: `lanes` threads, each item 2 ms on one of them."""

    def __init__(self, lanes: int = 2) -> None:
        self.pool = ThreadPoolExecutor(lanes, thread_name_prefix="lane")
        self.closed = 0
        self.abandoned = False
        self.discarded: list[int] = []
        self.lanes_used: set[str] = set()

    def work(self, item: int) -> tuple[str, int]:
        time.sleep(0.002)
        lane = threading.current_thread().name
        self.lanes_used.add(lane)
        return lane, item

    def submit(self, item: int) -> Future[tuple[str, int]]:
        return self.pool.submit(self.work, item)

    def discard(self, item: int) -> None:
        self.discarded.append(item)

    def close(self, abandon: bool = False) -> None:
        self.closed += 1
        self.abandoned = abandon
        self.pool.shutdown(wait=not abandon, cancel_futures=abandon)


@pytest.mark.parametrize("compile_workers", [0, 1])
def test_every_item_is_written_once_and_queues_stay_within_their_bounds(compile_workers: int) -> None:
    written: list[int] = []

    def slow_writer(item: tuple[str, int]) -> None:
        time.sleep(0.01)  # the writer is the bottleneck: everything upstream must wait, not pile up
        written.append(item[1])

    config = ExecutorConfig(lanes=("a", "b"), compile_workers=compile_workers, queue_size=3)
    stage = SlowStage(lanes=2)
    stats = LocalExecutor(config).run(range(60), abs, stage, slow_writer)
    assert sorted(written) == list(range(60)) and stats.written == 60
    # at most 2 items per lane on the devices, `queue_size` verified ones waiting for the writer
    assert 1 <= stats.prepared_high_water <= 4 and 1 <= stats.verified_high_water <= 3
    assert stats.verified_high_water == 3  # the slow writer really did fill its queue
    assert stats.pool_high_water <= 2 * compile_workers
    assert stage.closed == 1 and len(stage.lanes_used) == 2


class Conversation:
    """Yields item n+1 only once item n's result has been written, as an agent's next turn waits for the
    verdict of this one. An executor that held a prepared item until the next item arrived would wait for ever."""

    def __init__(self, turns: int) -> None:
        self.turns = turns
        self.answers: queue.Queue[int] = queue.Queue()

    def __iter__(self) -> Iterator[int]:
        for turn in range(self.turns):
            yield turn
            self.answers.get(timeout=60)  # raises queue.Empty: the executor never wrote this turn's result

    def write(self, item: tuple[str, int]) -> None:
        self.answers.put(item[1])


def run_within(seconds: float, run: Callable[[], object]) -> object:
    """`run()`'s result, or a failed test (not a hung one) when it takes longer than `seconds`."""
    box: dict[str, object] = {}

    def target() -> None:
        try:
            box["result"] = run()
        except BaseException as error:  # noqa: BLE001 - re-raised on the test's thread
            box["error"] = error

    thread = threading.Thread(target=target, daemon=True)
    thread.start()
    thread.join(seconds)
    assert not thread.is_alive(), f"still running after {seconds:.0f} s"
    if "error" in box:
        raise box["error"]  # type: ignore[misc]
    return box["result"]


@pytest.mark.parametrize("compile_workers", [0, 2])
def test_a_source_that_waits_for_its_results_is_fed_to_the_end(compile_workers: int) -> None:
    conversation = Conversation(turns=6)
    config = ExecutorConfig(lanes=("a", "b"), compile_workers=compile_workers, queue_size=2)
    stats = run_within(
        120,
        lambda: LocalExecutor(config).run(conversation, abs, SlowStage(), conversation.write),
    )
    assert stats.written == 6 and stats.submitted == 6  # type: ignore[attr-defined]


def test_a_failed_run_wakes_a_source_that_waits_for_results() -> None:
    """A lane that raises while trajectories wait for verdicts: the run stops with the lane's error, the
    trajectories are cancelled, and nothing hangs."""
    from kernelvault.pipelines.candidates import Attempt
    from kernelvault.pipelines.trajectory_source import TrajectorySource

    task = load_task_file(ROOT / "tasks" / "relu.py")
    cancelled: list[int] = []

    async def trajectories(verify) -> None:  # noqa: ANN001
        async def one(sample: int) -> None:
            try:
                await verify(Attempt(task, Candidate(task.task_id, "triton", RELU, "test"), sample, 0))
            except asyncio.CancelledError:
                cancelled.append(sample)
                raise

        await asyncio.gather(*(one(sample) for sample in range(3)))

    class BrokenStage(SlowStage):
        def work(self, item: object) -> tuple[str, int]:
            raise RuntimeError("the lane broke")

    source = TrajectorySource(trajectories)
    config = ExecutorConfig(lanes=("a",), compile_workers=0, queue_size=2)
    with pytest.raises(RuntimeError, match="the lane broke"):
        run_within(60, lambda: LocalExecutor(config).run(source, lambda a: a, BrokenStage(1), source.deliver))
    source.close()
    assert sorted(cancelled) == [0, 1, 2]


def test_a_stage_that_raises_stops_the_run_and_is_reraised() -> None:
    def explode(item: int) -> int:
        if item == 7:
            raise ValueError("harness bug")
        return item

    stage = SlowStage(1)
    with pytest.raises(ValueError, match="harness bug"):
        LocalExecutor(ExecutorConfig(lanes=("a",), compile_workers=0, queue_size=2)).run(
            range(1000), explode, stage, lambda item: None
        )
    assert stage.closed == 1


class HungStage(SlowStage):
    """Items from `hang_from` on never finish: a lane busy with a candidate that hangs."""

    def __init__(self, lanes: int, hang_from: int) -> None:
        super().__init__(lanes)
        self.hang_from = hang_from
        self.release = threading.Event()

    def work(self, item: int) -> tuple[str, int]:
        if item >= self.hang_from:
            self.release.wait(60)
        return super().work(item)


def pid_and_item(item: int) -> tuple[int, int]:
    """A prepare stage that says which process ran it (a compile process of the pool)."""
    return os.getpid(), item


@pytest.mark.parametrize("compile_workers", [0, 1])
def test_a_halt_writes_what_finishes_within_the_grace_and_abandons_the_rest(compile_workers: int) -> None:
    """A Ctrl-C mid-run: the run returns within its grace although a lane is stuck, nothing more is handed to a
    lane, and every item it read is either written or counted as abandoned."""
    halt, written = threading.Event(), []
    stage = HungStage(lanes=1, hang_from=2)

    def write(item: tuple[str, int]) -> None:
        written.append(item[1])
        if item[1] == 1:
            halt.set()  # the signal arrives with item 2 on the lane

    config = ExecutorConfig(lanes=("a",), compile_workers=compile_workers, queue_size=2, halt_grace_s=0.5)
    started = time.monotonic()
    try:
        stats = run_within(30, lambda: LocalExecutor(config).run(range(1000), abs, stage, write, halt))
    finally:
        stage.release.set()
    assert time.monotonic() - started < 20  # (a process pool's start on a busy machine included)
    assert written == [0, 1] and stats.written == 2  # type: ignore[attr-defined]
    assert stats.submitted < 1000 and stats.abandoned == stats.submitted - 2  # type: ignore[attr-defined]
    assert stage.closed == 1 and stage.abandoned


def test_a_ctrl_c_that_reaches_the_compile_processes_does_not_break_the_run() -> None:
    """A terminal sends Ctrl-C to the whole process group: the compile processes get it too, and ignore it."""
    pids: set[int] = set()

    def write(item: tuple[str, tuple[int, int]]) -> None:
        pid, number = item[1]
        if number == 0:
            os.kill(pid, signal.SIGINT)
        pids.add(pid)

    config = ExecutorConfig(lanes=("a",), compile_workers=1, queue_size=2)
    stats = run_within(60, lambda: LocalExecutor(config).run(range(20), pid_and_item, SlowStage(1), write))
    assert stats.written == 20 and pids and os.getpid() not in pids  # type: ignore[attr-defined]


def test_devices() -> None:
    assert parse_devices("cpu", 3) == ("cpu", "cpu", "cpu") and parse_devices("0,1", 3) == ("0", "1")
    with pytest.raises(ValueError):
        parse_devices("gpu0", 1)


@pytest.fixture(scope="module")
def relu_task():  # noqa: ANN201
    return load_task_file(ROOT / "tasks" / "relu.py")


def _candidate(task, text: str) -> Candidate:  # noqa: ANN001
    return Candidate(task.task_id, "triton", text, "test")


def test_persistent_workers_serve_many_candidates_and_restart_after_a_patching_one(relu_task) -> None:  # noqa: ANN001
    verifier = Verifier(
        VerifyConfig(platform="cpu", timeout_s=60, static_wall=False)
    )  # the tripwire behind it
    lane = WorkerLane(restart_every=50, spare=True)  # as on a GPU lane (on CPU lanes the default is no spare)
    try:
        first = verifier.complete(verifier.prepare(relu_task, _candidate(relu_task, RELU)), lane)
        pid, reference_pid = lane.workers["candidate"].pid, lane.workers["reference"].pid
        second = verifier.complete(verifier.prepare(relu_task, _candidate(relu_task, RELU)), lane)
        assert first.correct and second.correct
        stats = lane.workers["candidate"].stats
        spare = lane.workers["candidate"].spare_pid
        assert lane.workers["candidate"].pid == pid and stats.jobs == 2
        assert stats.starts == 2 and spare not in (None, pid), "a second process waits, started, beside it"
        assert reference_pid not in (None, pid), "the reference runs in a process of its own"

        hostile = (ROOT / "tests/adversarial/hostile/integrity_reject__relu__patch_timers.py").read_text()
        verdict = verifier.complete(verifier.prepare(relu_task, _candidate(relu_task, hostile)), lane)
        assert verdict.failure_kind == "integrity_reject" and "monkey_patch" in (
            verdict.failure_message or ""
        )
        assert lane.workers["candidate"].pid is None  # replaced: the next candidate gets another process
        after = verifier.complete(verifier.prepare(relu_task, _candidate(relu_task, RELU)), lane)
        assert after.correct and after.failure_kind is None
        # The spare, started before the hostile candidate ran and given no job until now, took over; the
        # next spare is started in its place.
        assert lane.workers["candidate"].pid == spare and stats.restarts["integrity_reject"] == 1
        assert stats.starts == 3 and lane.workers["candidate"].spare_pid not in (None, pid, spare)
        assert lane.workers["reference"].pid == reference_pid, (
            "the reference's worker saw no candidate: it stays"
        )
    finally:
        lane.close()


def test_nothing_a_candidate_writes_in_its_worker_reaches_the_next_candidate(relu_task) -> None:  # noqa: ANN001
    """A persistent worker's caches are written by candidates' processes: a file one candidate plants in
    its Triton cache (a place it may write) is gone before the next candidate runs in the same process."""
    plant = RELU.replace(
        "import torch\n",
        "import os\nimport torch\n"
        "open(os.path.join(os.environ['TRITON_CACHE_DIR'], 'planted.bin'), 'wb').write(b'x')\n",
        1,
    )
    look = RELU.replace(
        "import torch\n",
        "import os\nimport torch\n"
        "assert not os.path.exists(os.path.join(os.environ['TRITON_CACHE_DIR'], 'planted.bin')), 'planted'\n",
        1,
    )
    verifier = Verifier(VerifyConfig(platform="cpu", timeout_s=60, static_wall=False))
    lane = WorkerLane(restart_every=50)
    try:
        planted = verifier.complete(verifier.prepare(relu_task, _candidate(relu_task, plant)), lane)
        pid = lane.workers["candidate"].pid
        looked = verifier.complete(verifier.prepare(relu_task, _candidate(relu_task, look)), lane)
        assert lane.workers["candidate"].pid == pid, "both candidates ran in the same process"
    finally:
        lane.close()
    assert planted.correct, (planted.failure_kind, planted.failure_message)
    assert looked.correct, (looked.failure_kind, looked.failure_message)


def test_every_job_draws_new_seeds_for_its_inputs(relu_task) -> None:  # noqa: ANN001
    """The parent draws the seeds from the OS for every job: nothing a candidate can see predicts them."""
    verifier = Verifier(VerifyConfig(platform="cpu", timeout_s=60))
    lane = WorkerLane(restart_every=50)
    try:
        runs = [
            verifier.complete(verifier.prepare(relu_task, _candidate(relu_task, RELU)), lane)
            for _ in range(2)
        ]
    finally:
        lane.close()
    seeds = [check.seed for verdict in runs for check in verdict.checks]
    assert all(verdict.correct for verdict in runs)
    assert len(set(seeds)) == len(seeds), (
        "a seed came back: inputs are drawn afresh for every check of every job"
    )
    assert all(0 <= seed < 2**63 for seed in seeds) and max(seeds) > 2**40


def test_a_candidate_whose_torch_calls_import_dynamo_is_not_a_patch_and_keeps_its_worker(relu_task) -> None:  # noqa: ANN001
    """A worker starts without torch._dynamo (a second of its start); some PyTorch calls import it on first use (an
    optimiser's constructor here), and that import replaces torch.manual_seed. An honest candidate that makes such
    a call must not read as one that patched PyTorch, nor cost the next candidate its worker."""
    seeding = RELU.replace(
        "import torch\n",
        "import torch\n_OPTIMISER = torch.optim.SGD([torch.nn.Parameter(torch.zeros(1))], lr=0.1)\n",
        1,
    )
    verifier = Verifier(VerifyConfig(platform="cpu", timeout_s=60))
    lane = WorkerLane(restart_every=50)
    try:
        seeded = verifier.complete(verifier.prepare(relu_task, _candidate(relu_task, seeding)), lane)
        pid = lane.workers["candidate"].pid
        after = verifier.complete(verifier.prepare(relu_task, _candidate(relu_task, RELU)), lane)
        assert lane.workers["candidate"].pid == pid, lane.workers["candidate"].stats.restarts
    finally:
        lane.close()
    assert seeded.correct, (seeded.failure_kind, seeded.failure_message)
    assert after.correct, (after.failure_kind, after.failure_message)


def test_a_worker_killed_mid_candidate_is_replaced_and_the_candidate_retried_once(relu_task) -> None:  # noqa: ANN001
    slow = RELU.replace("import torch\n", "import time\nimport torch\n", 1)
    slow += "\n\nclass ModelNew(ModelNew):\n    def forward(self, *args):\n        time.sleep(0.5)\n        return super().forward(*args)\n"
    verifier = Verifier(VerifyConfig(platform="cpu", timeout_s=60))
    lane = WorkerLane()
    try:
        assert verifier.complete(
            verifier.prepare(relu_task, _candidate(relu_task, RELU)), lane
        ).correct  # a warm worker
        victim = lane.workers["candidate"].pid
        assert victim is not None
        killer = threading.Timer(1.0, os.kill, (victim, signal.SIGKILL))
        killer.start()
        verdict = verifier.complete(verifier.prepare(relu_task, _candidate(relu_task, slow)), lane)
        killer.join()
        stats = lane.workers["candidate"].stats
        assert stats.retries == 1 and stats.restarts["crash"] == 1
        assert verdict.correct and verdict.failure_kind is None, (
            verdict.failure_message
        )  # retried on a fresh worker
        assert lane.workers["candidate"].pid not in (None, victim)
    finally:
        lane.close()


def test_spare_workers_are_for_gpu_lanes_unless_asked_for() -> None:
    """A spare saves a GPU lane a start (seconds of the device's time); on CPU lanes its start would compete with
    the check for the same cores, and the fresh mode measures one process per candidate."""
    assert WorkerLane(device="0").spare is True
    assert WorkerLane().spare is False and WorkerLane(spare=True).spare is True
    assert WorkerLane(device="0", restart_every=1).spare is False


def test_a_candidate_that_turns_on_the_interpreters_debug_leaves_its_worker(relu_task) -> None:  # noqa: ANN001
    """Behind the wall, a correct candidate switches Triton's interpreter into debug mode at import (every later
    kernel's device asserts would then run in that process): its verdict stands, its worker is replaced before the
    next candidate, and that candidate runs with the interpreter as the worker set it up."""
    debug = RELU.replace(
        "import torch\n",
        "import dataclasses\nimport torch\nimport triton.runtime.interpreter as _interp\n"
        "_interp.interpreter_builder.options = dataclasses.replace(_interp.interpreter_builder.options, debug=True)\n",
        1,
    )
    look = RELU.replace(
        "import torch\n",
        "import os\nimport torch\nimport triton.runtime.interpreter as _interp\n"
        "assert not _interp.interpreter_builder.options.debug, 'debug left on'\n"
        "assert os.environ.get('TRITON_INTERPRET') != '1' or not _interp.interpreter_builder.options.sanitize_overflow\n",
        1,
    )
    assert debug != RELU and look != RELU
    verifier = Verifier(VerifyConfig(platform="cpu", timeout_s=60, static_wall=False))
    lane = WorkerLane(restart_every=50)
    try:
        switched = verifier.complete(verifier.prepare(relu_task, _candidate(relu_task, debug)), lane)
        worker = lane.workers["candidate"]
        assert worker.pid is None and worker.last_restart == "state_changed: interpreter", worker.last_restart
        looked = verifier.complete(verifier.prepare(relu_task, _candidate(relu_task, look)), lane)
    finally:
        lane.close()
    assert switched.correct, (switched.failure_kind, switched.failure_message)
    assert looked.correct, (looked.failure_kind, looked.failure_message)

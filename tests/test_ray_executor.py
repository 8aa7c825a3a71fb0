"""The Ray executor on a local Ray instance (CPU, interpreter): same rows as the local executor, and a
verification actor killed with SIGKILL mid-run is replaced with nothing lost or written twice."""

from __future__ import annotations

import functools
import json
import os
import signal
import sqlite3
import subprocess
import sys
import threading
import time
from collections.abc import Iterator
from concurrent.futures import Future
from pathlib import Path

import pyarrow.parquet as pq
import pytest

ray = pytest.importorskip(
    "ray", reason="ray is not installed (the 'dist' extra): pip install 'kernelvault[dist]'"
)

from example_suite import SUBSET_EXAMPLES, copy_example_suite  # noqa: E402

from kernelvault.pipelines.corpus_job import run_corpus_job  # noqa: E402
from kernelvault.pipelines.engine import EngineOptions  # noqa: E402
from kernelvault.pipelines.executor import ExecutorConfig  # noqa: E402
from kernelvault.pipelines.ray_executor import ActorWriting, Landed, RayExecutor, RayOptions  # noqa: E402
from kernelvault.toolchain.tasks import load_tasks  # noqa: E402
from kernelvault.toolchain.verify import Verifier, VerifyConfig  # noqa: E402

ROOT = Path(__file__).resolve().parents[1]
FIELDS = (
    "task_id",
    "sample_index",
    "turn",
    "code_hash",
    "compiled",
    "correct",
    "failure_kind",
    "reward",
    "candidate_origin",
)


@pytest.fixture(scope="module")
def local_ray():  # noqa: ANN201
    # Ray's workers cannot import this test module (pytest put tests/ on the path, not them): send its lanes by value.
    ray.cloudpickle.register_pickle_by_value(sys.modules[__name__])
    ray.init(num_cpus=2, include_dashboard=False, log_to_driver=False)
    yield ray
    ray.shutdown()


class SleepyLane:
    """A stand-in for PoolStage: slow enough that a kill lands mid-call."""

    def __init__(self, device: str) -> None:
        self.device = device

    def __call__(self, item: int) -> tuple[int, int]:
        time.sleep(0.3 if item == 5 else 0.02)
        return item, os.getpid()

    def submit(self, item: int) -> Future[tuple[int, int]]:
        done: Future[tuple[int, int]] = Future()
        done.set_result(self(item))  # the actor's one lane, in the actor's thread
        return done

    def close(self) -> None:
        pass


class DoomedLane(SleepyLane):
    """Its process dies whenever it meets item 3, however often it is restarted."""

    def __call__(self, item: int) -> tuple[int, int]:
        if item == 3:
            os._exit(1)
        return super().__call__(item)


def lane_processes(method: str = "", actor: str = "StageActor") -> list[int]:
    """Ray worker processes hosting a lane actor (Ray titles them `ray::StageActor[.method]`)."""
    found = []
    for entry in Path("/proc").iterdir():
        try:
            if entry.name.isdigit() and (entry / "cmdline").read_bytes().startswith(
                f"ray::{actor}{method}".encode()
            ):
                found.append(int(entry.name))
        except OSError:
            continue
    return found


def kill_a_running_lane(deadline_s: float, killed: list[int], children: list[int] | None = None,
                        call: tuple[str, str] = ("StageActor", ".run")) -> None:  # fmt: skip
    """SIGKILL the first lane actor seen running a call; its children (sandboxed workers) go to `children`.

    With `children`, only an actor that has a sandboxed worker is killed: one verifying, not one between
    calls or answering a candidate decided before the device."""
    deadline = time.monotonic() + deadline_s
    while time.monotonic() < deadline and not killed:
        for pid in lane_processes(call[1], call[0]):
            if children is not None:
                found = _children(pid)
                if (
                    not found
                ):  # a call decided before the device (a parse error), or its worker not started yet
                    continue
                children.extend(found)
            os.kill(pid, signal.SIGKILL)
            killed.append(pid)
            return
        time.sleep(0.02)


def test_items_are_written_once_and_a_killed_lane_actor_is_restarted(local_ray) -> None:  # noqa: ANN001
    written: list[tuple[int, int]] = []
    killed: list[int] = []
    killer = threading.Thread(target=kill_a_running_lane, args=(60.0, killed))
    killer.start()
    executor = RayExecutor(ExecutorConfig(lanes=("cpu", "cpu"), compile_workers=1, queue_size=2))
    stats = executor.run(range(40), abs, SleepyLane, written.append)
    killer.join()
    assert killed, "no lane was seen running"
    assert sorted(item for item, _ in written) == list(range(40)), "an item was lost or written twice"
    assert stats.lost >= 1 and stats.given_up == 0
    assert killed[0] not in {pid for _, pid in written[-5:]}  # later items ran in live processes
    restarted = [pids for pids in stats.lane_pids.values() if len(pids) == 2]
    assert restarted and restarted[0][0] == killed[0] and restarted[0][1] != killed[0]
    assert sum(stats.lane_items.values()) == 40 + stats.lost
    # New work waits while 2 × compile_workers prepare or queue_size wait: prepares in flight then land too.
    assert stats.pool_high_water <= 2 and stats.prepared_high_water <= 2 + 2


def test_an_item_that_keeps_killing_its_actor_is_given_up_after_the_cap(local_ray) -> None:  # noqa: ANN001
    written: list[object] = []
    executor = RayExecutor(ExecutorConfig(lanes=("cpu",), compile_workers=1, queue_size=2),
                           RayOptions(max_restarts=5, max_losses=2))  # fmt: skip
    stats = executor.run(
        range(6), abs, DoomedLane, written.append, give_up=lambda item, why: ("gave up", item)
    )
    assert ("gave up", 3) in written and len(written) == 6
    assert sorted(entry[0] for entry in written if entry[0] != "gave up") == [0, 1, 2, 4, 5]
    assert stats.lost == 3 and stats.given_up == 1


def test_too_few_cpus_for_the_lanes_is_one_clear_error(local_ray) -> None:  # noqa: ANN001
    with pytest.raises(ValueError, match="too few for 4 lanes"):
        RayExecutor(ExecutorConfig(lanes=("cpu",) * 4), RayOptions(lane_cpus=1.0)).run(
            [], abs, SleepyLane, print
        )


# ------------------------------------------------------------------------------------------------
# The main job: the same verified rows as the local executor, with and without a killed actor.


@pytest.fixture(scope="module")
def suite(tmp_path_factory: pytest.TempPathFactory) -> tuple[Path, Path]:
    return copy_example_suite(tmp_path_factory.mktemp("suite"))


def corpus(suite: tuple[Path, Path], out: Path, executor: str, work_root: Path | None = None,
           ray_writers: str = "actors") -> dict[str, dict]:  # fmt: skip
    from kernelvault.pipelines.candidates import ExampleCandidates

    tasks, examples = suite
    verifier = Verifier(VerifyConfig(platform="cpu", timeout_s=120, work_root=work_root))
    summary = run_corpus_job(load_tasks(str(tasks)), ExampleCandidates("triton", examples), verifier, out, "triton",
                             EngineOptions(workers=2, compile_workers=2, executor=executor), progress=False,
                             shard_rows=2, ray_writers=ray_writers)  # fmt: skip
    assert not summary.retry_later and not summary.unexpected
    rows = [
        row
        for shard in sorted((out / "data" / "triton").glob("*.parquet"))
        for row in pq.read_table(shard).to_pylist()
    ]
    # An attempt id is `run_id/task_id/sample/turn`: two runs share all but the run id.
    by_id = {row["attempt_id"].partition("/")[2]: {field: row[field] for field in FIELDS} for row in rows}
    assert len(by_id) == len(rows), "an attempt was written twice"
    return by_id


@pytest.fixture(scope="module")
def local_rows(suite: tuple[Path, Path], tmp_path_factory: pytest.TempPathFactory) -> dict[str, dict]:
    rows = corpus(suite, tmp_path_factory.mktemp("local"), "local")
    assert len(rows) == len(SUBSET_EXAMPLES)
    return rows


@pytest.mark.slow
@pytest.mark.parametrize("ray_writers", ["actors", "driver"])
def test_the_main_job_on_ray_writes_the_local_executors_rows(local_ray, suite, local_rows, tmp_path,
                                                             ray_writers) -> None:  # noqa: ANN001  # fmt: skip
    assert corpus(suite, tmp_path / "ray", "ray", ray_writers=ray_writers) == local_rows
    # With actors, each verification actor wrote its own shards (writer ids from 100 up); with driver, the
    # driver's one writer (0) wrote them all. The ledger took every shard either way.
    shards = sorted((tmp_path / "ray" / "data" / "triton").glob("train-*.parquet"))
    writers = {int(shard.stem.split("-")[-2]) for shard in shards}
    if ray_writers == "actors":
        assert len(writers) == 2 and min(writers) >= 100, writers
    else:
        assert writers == {0}
    with sqlite3.connect(tmp_path / "ray" / "ledger.sqlite") as db:
        recorded = {
            name for (name,) in db.execute("SELECT DISTINCT shard FROM attempts WHERE status = 'finished'")
        }
    assert recorded == {shard.name for shard in shards}


@pytest.mark.slow
def test_a_lane_actor_killed_mid_run_is_replaced_and_nothing_is_lost(
    local_ray, suite, local_rows, tmp_path
) -> None:  # noqa: ANN001
    killed: list[int] = []
    children: list[int] = []

    killer = threading.Thread(target=kill_a_running_lane, args=(120.0, killed, children))
    killer.start()
    rows = corpus(suite, tmp_path / "ray", "ray", work_root=tmp_path / "work")
    killer.join()
    # The killed call's prepared folder was discarded on its node, not left behind.
    assert not list((tmp_path / "work").glob("kv-verify-*"))
    assert killed, "no verification actor was seen running a candidate"
    assert children, "the killed actor had no sandboxed worker: it was not verifying"
    assert rows == local_rows  # every attempt once, with the verdict an uninterrupted run gives
    with sqlite3.connect(tmp_path / "ray" / "ledger.sqlite") as db:
        finished = db.execute("SELECT COUNT(*) FROM attempts WHERE status = 'finished'").fetchone()[0]
    assert finished == len(local_rows)
    time.sleep(1)
    assert not [pid for pid in children if _alive(pid)], "the killed actor left sandboxed workers running"


def _children(parent: int) -> list[int]:
    out = subprocess.run(
        ["ps", "-o", "pid=", "--ppid", str(parent)], capture_output=True, text=True, check=False
    )
    return [int(pid) for pid in out.stdout.split()]


def _alive(pid: int) -> bool:
    try:
        return (Path("/proc") / str(pid) / "stat").read_text().rsplit(")", 1)[1].split()[0] != "Z"
    except OSError:
        return False


def test_without_ray_the_cli_names_the_extra(tmp_path: Path) -> None:
    blocker = tmp_path / "ray.py"
    blocker.write_text("raise ImportError('no ray here')\n")
    env = {**os.environ, "PYTHONPATH": f"{tmp_path}{os.pathsep}{ROOT}"}
    run = subprocess.run([sys.executable, "-m", "kernelvault.cli", "corpus", "--executor", "ray", "--platform", "cpu",
                          "--out", str(tmp_path / "out")], capture_output=True, text=True, cwd=ROOT, env=env,
                         timeout=120)  # fmt: skip
    assert run.returncode == 2
    assert run.stderr.strip().splitlines() == [
        "kernelvault: error: the ray executor needs the 'dist' extra (ray is not installed): "
        "pip install 'kernelvault[dist]'"
    ]


def test_ray_writers_without_the_ray_executor_is_a_usage_error(tmp_path: Path) -> None:
    run = subprocess.run([sys.executable, "-m", "kernelvault.cli", "corpus", "--ray-writers", "driver",
                          "--platform", "cpu", "--out", str(tmp_path / "out")], capture_output=True, text=True,
                         cwd=ROOT, timeout=120)  # fmt: skip
    assert run.returncode == 2 and not (tmp_path / "out").exists()
    assert run.stderr.strip().splitlines() == [
        "kernelvault: error: --address and --ray-writers are for --executor ray"
    ]


def test_a_stage_that_raises_stops_the_run_and_is_reraised(local_ray) -> None:  # noqa: ANN001
    def explode(item: int) -> int:
        if item == 3:
            raise ValueError("harness bug")
        return item

    with pytest.raises(ValueError, match="harness bug"):
        RayExecutor(ExecutorConfig(lanes=("cpu",), compile_workers=1)).run(
            range(50), explode, SleepyLane, print
        )


# ------------------------------------------------------------------------------------------------
# Results written by the lane actors themselves (ActorWriting): each actor its own files, nothing lost or
# written twice when one is killed, also when it dies between landing a file and saying so.


class FileSink:
    """A stand-in for the corpus job's ShardSink: every `rows` results land as one JSON file (temporary
    name, then rename) named by the writer. Two deaths, once each: item 13 lands its file and then kills
    the actor (the driver never hears of that file); from item 27 on, the first item that finds an earlier
    row in the buffer kills it with both rows unlanded."""

    def __init__(self, folder: str, writer: int, rows: int = 3) -> None:
        self.folder, self.writer, self.rows = Path(folder), writer, rows
        self.buffer: list[int] = []
        self.count = len(list(self.folder.glob(f"{writer:05d}-*.json")))
        self._landed: list[Landed] = []

    def write(self, result: tuple[int, int]) -> bool:
        item = result[0]
        if item % 10 == 9:  # a verdict with no row (the corpus job's retried failures)
            return False
        self.buffer.append(item)
        if len(self.buffer) >= self.rows or item == 13:
            self.flush()
        if item == 13 and not (self.folder / "died-after-landing").exists():
            (self.folder / "died-after-landing").touch()
            os._exit(1)
        if item >= 27 and len(self.buffer) >= 2 and not (self.folder / "died-holding-rows").exists():
            (self.folder / "died-holding-rows").touch()
            os._exit(1)
        return True

    def landed(self) -> list[Landed]:
        landed, self._landed = self._landed, []
        return landed

    def flush(self) -> None:
        if not self.buffer:
            return
        final = self.folder / f"{self.writer:05d}-{self.count:05d}.json"
        temporary = final.with_suffix(".tmp")
        temporary.write_text(json.dumps(self.buffer))
        os.replace(temporary, final)
        self._landed.append(Landed(final.name, tuple(self.buffer)))
        self.buffer, self.count = [], self.count + 1


def files_of(folder: Path, writer: int) -> list[Landed]:
    return [Landed(path.name, tuple(json.loads(path.read_text())))
            for path in sorted(folder.glob(f"{writer:05d}-*.json"))]  # fmt: skip


def test_lane_actors_write_their_own_files_and_a_killed_one_loses_nothing(local_ray, tmp_path) -> None:  # noqa: ANN001
    committed: list[Landed] = []
    accounted: list[tuple[int, int]] = []
    writing = ActorWriting(open_sink=functools.partial(FileSink, str(tmp_path)), commit=committed.append,
                          recover=functools.partial(files_of, tmp_path), key=lambda item: item)  # fmt: skip
    killed: list[int] = []
    killer = threading.Thread(target=kill_a_running_lane, args=(60.0, killed))
    killer.start()
    executor = RayExecutor(ExecutorConfig(lanes=("cpu", "cpu"), compile_workers=1, queue_size=2))
    stats = executor.run(range(40), abs, SleepyLane, accounted.append, writing=writing)
    killer.join()
    assert killed, "no lane was seen running"
    on_disk = [item for path in tmp_path.glob("*.json") for item in json.loads(path.read_text())]
    with_rows = [item for item in range(40) if item % 10 != 9]
    assert sorted(on_disk) == with_rows, "a row was lost or written twice"
    assert sorted(item for shard in committed for item in shard.keys) == with_rows  # each committed once
    assert sorted({shard.name for shard in committed}) == sorted(p.name for p in tmp_path.glob("*.json"))
    # Every item is accounted for once, except 13, whose result died with its actor after its row landed.
    assert sorted(item for item, _ in accounted) == [item for item in range(40) if item != 13]
    assert (tmp_path / "died-after-landing").exists() and (tmp_path / "died-holding-rows").exists()
    # 13's file was found on disk and committed, not redone; the two unlanded rows were redone (the
    # SIGKILLed call was too, unless the kill landed on an actor already dying by its own hand).
    assert stats.written == 40 and stats.shards_recovered >= 1 and stats.lost >= 2
    writers = {int(shard.name.split("-")[0]) for shard in committed}
    assert len(writers) >= 3  # two lanes, and a new writer for each restarted actor
    assert not list(tmp_path.glob("*.tmp"))


def _task_of(item: int) -> int:
    """Two tasks in pairs (0 0 1 1 0 0 ...): two lanes taking the queue in turn get one item of each task
    per pair, so without affinity each lane switches tasks on nearly every item."""
    return item // 2 % 2


def _switches(written: list[tuple[int, int]]) -> int:
    """Times a lane process ran an item of another task than its previous one."""
    last: dict[int, int] = {}
    switches = 0
    for item, pid in written:
        if pid in last and last[pid] != _task_of(item):
            switches += 1
        last[pid] = _task_of(item)
    return switches


class EvenLane(SleepyLane):
    """Every item takes the lane 0.1 s, far longer than preparing one: the ready queue stays full, so which
    item a lane takes is the executor's choice and not the machine's load (SleepyLane's one slow item lets
    the other lane run a dozen items in a row, which hides or fakes task switches)."""

    def __call__(self, item: int) -> tuple[int, int]:
        time.sleep(0.1)
        return item, os.getpid()


def test_a_lane_keeps_to_the_tasks_it_has_loaded(local_ray) -> None:  # noqa: ANN001
    """Two tasks interleaved in pairs: with affinity each lane stays on one task, so a task's reference is
    built once per actor; without it, two lanes of equal speed take the queue in turn and switch tasks
    nearly every item."""
    config = ExecutorConfig(lanes=("cpu", "cpu"), compile_workers=1, queue_size=8)
    plain: list[tuple[int, int]] = []
    RayExecutor(config).run(range(32), abs, EvenLane, plain.append)
    kept: list[tuple[int, int]] = []
    stats = RayExecutor(config).run(range(32), abs, EvenLane, kept.append, affinity=_task_of)
    assert sorted(item for item, _ in kept) == list(range(32))  # affinity reorders, never drops
    assert _switches(kept) <= 4, _switches(kept)  # a lane may switch while the queue fills at the start
    assert 2 * _switches(kept) < _switches(plain), (_switches(kept), _switches(plain))
    assert stats.affinity_hits >= 24


@pytest.mark.slow
def test_a_model_driven_run_verifies_on_ray_actors_and_survives_a_killed_one(local_ray, tmp_path) -> None:  # noqa: ANN001
    """The agent job on Ray is the same engine as the corpus job's: trajectories and the ledger on the driver,
    each turn an attempt prepared by a Ray task and verified on a lane actor. An actor SIGKILLed mid-verification
    is restarted and the turn prepared and verified again, so every turn is written once."""
    from kernelvault.agents.client import EndpointConfig, SamplingSettings
    from kernelvault.pipelines.agent_job import AgentJobConfig, run_agent_job
    from kernelvault.simulated_openai import Answer, FakeOpenAI
    from kernelvault.toolchain.tasks import LoadedTasks, load_task_file

    examples = ROOT / "examples" / "triton"
    relu, vector_add = (load_task_file(ROOT / "tasks" / f"{name}.py") for name in ("relu", "vector_add"))

    def fenced(path: Path) -> Answer:
        return Answer(f"Here it is.\n\n```python\n{path.read_text()}```\n")

    server = FakeOpenAI(scenarios={
        relu.source: [fenced(examples / "broken" / "compile_error__relu.py"), fenced(examples / "relu.py")],
        vector_add.source: [fenced(examples / "vector_add.py")],
    })  # fmt: skip
    url, stop = server.start()
    config = AgentJobConfig(endpoint=EndpointConfig(url, "qwen3-test", attempts=2, backoff_initial_s=0.01),
                            samples=2, max_turns=3, concurrency=4, engine=EngineOptions(workers=2, executor="ray"),
                            sampling=SamplingSettings(temperature=0.6, top_p=0.95, max_tokens=4096))  # fmt: skip
    killed: list[int] = []
    killer = threading.Thread(target=kill_a_running_lane, args=(120.0, killed))
    killer.start()
    try:
        summary = run_agent_job(LoadedTasks(tasks=[relu, vector_add]), Verifier(VerifyConfig(platform="cpu",
                                timeout_s=120)), tmp_path / "agent", "triton", config, progress=False)  # fmt: skip
    finally:
        killer.join()
        stop()
    assert killed, "no verification actor was seen verifying"
    assert summary.executor.lost >= 1 and not summary.retry_later
    rows = [row for shard in sorted((tmp_path / "agent" / "data" / "triton").glob("*.parquet"))
            for row in pq.read_table(shard).to_pylist()]  # fmt: skip
    turns = sorted((row["task_name"], row["sample_index"], row["turn"], row["failure_kind"]) for row in rows)
    assert turns == [
        ("relu", 0, 0, "compile_error"), ("relu", 0, 1, None), ("relu", 1, 0, "compile_error"), ("relu", 1, 1, None),
        ("vector_add", 0, 0, None), ("vector_add", 1, 0, None),
    ]  # fmt: skip
    assert (
        len({pid for pids in summary.executor.lane_pids.values() for pid in pids} - {os.getpid()}) >= 2
    )  # actors, restarted


def test_the_cli_runs_a_model_driven_job_on_ray(local_ray, tmp_path) -> None:  # noqa: ANN001
    """`kernelvault corpus --base-url … --executor ray` is the agent job with its verifications on actors."""
    import contextlib
    import io

    from kernelvault.cli import main
    from kernelvault.simulated_openai import Answer, FakeOpenAI
    from kernelvault.toolchain.tasks import load_task_file

    task = load_task_file(ROOT / "tasks" / "vector_add.py")
    kernel = (ROOT / "examples" / "triton" / "vector_add.py").read_text()
    server = FakeOpenAI(scenarios={task.source: [Answer(f"```python\n{kernel}```\n")]})
    url, stop = server.start()
    printed = io.StringIO()
    try:
        with contextlib.redirect_stdout(printed):
            code = main(["corpus", "--target", "triton", "--platform", "cpu", "--tasks", str(ROOT / "tasks" / "vector_add.py"),
                         "--base-url", url, "--model", "qwen3-test", "--samples", "2", "--turns", "1",
                         "--executor", "ray", "--workers", "2", "--no-progress", "--out", str(tmp_path / "out")])  # fmt: skip
    finally:
        stop()
    assert code == 0, printed.getvalue()
    assert "correct                    2 (100%)" in printed.getvalue()


def test_a_source_that_waits_for_its_results_is_fed_to_the_end(local_ray) -> None:  # noqa: ANN001
    """The agent job's source yields a trajectory's next turn only once this turn's verdict is written: the
    driver reads it on a thread of its own, so its loop keeps collecting results instead of waiting in next()."""
    import queue

    answers: queue.Queue[int] = queue.Queue()

    def conversation() -> Iterator[int]:
        for turn in range(6):
            yield turn
            answers.get(timeout=60)  # raises queue.Empty: the executor never wrote this turn's result

    written: list[int] = []

    def write(item: tuple[int, int]) -> None:
        written.append(item[0])
        answers.put(item[0])

    config = ExecutorConfig(lanes=("cpu",), compile_workers=1, queue_size=2)
    stats = RayExecutor(config).run(conversation(), abs, SleepyLane, write)
    assert written == list(range(6)) and stats.submitted == 6


class StuckLane(SleepyLane):
    """Item 2 holds its lane for a minute (a candidate that hangs until its timeout)."""

    def __call__(self, item: int) -> tuple[int, int]:
        time.sleep(60 if item == 2 else 0.02)
        return item, os.getpid()


def test_a_halt_on_ray_returns_within_its_grace_and_abandons_what_a_lane_held(local_ray) -> None:  # noqa: ANN001
    """Ctrl-C on a Ray run: nothing more is handed to a lane, a lane stuck on an item does not hold the run past
    the grace, and every item read from the source is written or counted as abandoned."""
    halt, written = threading.Event(), []

    def write(item: tuple[int, int]) -> None:
        written.append(item[0])
        if item[0] == 1:
            halt.set()  # the signal arrives with item 2 on the lane

    config = ExecutorConfig(lanes=("cpu",), compile_workers=1, queue_size=2, halt_grace_s=0.5)
    started = time.monotonic()
    stats = RayExecutor(config).run(range(1000), abs, StuckLane, write, halt=halt)
    assert time.monotonic() - started < 30, "the stuck item held the run"
    assert written == [0, 1] and stats.written == 2
    assert stats.submitted < 1000 and stats.abandoned == stats.submitted - 2

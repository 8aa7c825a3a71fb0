"""RayExecutor: the LocalExecutor's stages on a Ray cluster; the driver keeps the ledger.

    source ──► prepare (Ray CPU tasks, ──► [ready, per node] ──► lane actors (one per GPU,  ──► write
    (driver)    bounded in flight)                                or one per cpu lane; each     (driver:
                                                                  writes its own shards)        accounting)

Same stages, same interface as `kernelvault.pipelines.executor.LocalExecutor.run`: `prepare` runs as a Ray task,
`open_stage(device)` runs in the constructor of a long-lived actor (`num_gpus=1` for a GPU lane, so a GPU
times one candidate at a time). Without `ActorWriting` every result comes back to the driver, which calls
`write` on its own thread. With it (the corpus job's default) each actor also writes its results' rows
into its own shards of the shared output folder, and tells the driver which shard holds which items once
the shard is in place: the driver commits that (the run ledger, SQLite, on the driver, stays the only
source of truth) and only then counts the items done. Each actor incarnation has its own writer id, so a
restarted actor never appends to files of the one that died. When an actor dies, the driver looks in the
folder for shards of its writer that landed without news (the actor died between the rename and its
reply) and commits them; the rows still in its buffer are lost with it, and their items are done again.

Why items are bound to a node: `Verifier.prepare` leaves files in a local temporary folder that
`Verifier.complete` reads. A prepare task is pinned (node affinity) to a node that has lanes, and its
result is only handed to a lane on that node, so no shared filesystem is needed for the workdir.

Back-pressure, as locally: the source is read only while fewer than 2 × `compile_workers` prepare tasks
are in flight and fewer than `queue_size` prepared items wait for a lane, so at most the sum of the two
(plus one per lane) is held at once, however long the source.

Faults. A lane actor is created with `max_restarts`; Ray re-runs its constructor (fresh persistent
workers) when its process dies. Actor calls are at-most-once (`max_task_retries=0`): when a call fails
because the actor died, the driver, not Ray, decides. It sends the item back to the prepare stage (its
workdir may be gone; `discard` removes what is left of it on its node) and counts a loss; an item lost more than `max_losses` times is handed to `give_up`,
whose result is written like any other (the corpus job makes it an `infrastructure_error` verdict, which
the ledger retries on resume). Results reach `write` only from a call that returned, and each item is in
exactly one place at a time (preparing, ready, or on a lane), so nothing is lost and nothing written
twice. A lane whose restarts are used up is dropped; the run fails when no lane is left.

Every node needs the same environment at the same path as the driver (one container image): the lane's
sandboxed workers start with the driver's Python (`VerifyConfig.python`) and import this project.
Untested on GPUs so far: the GPU paths (`num_gpus=1`, the device id handed to the workers) follow Ray's
documented behaviour but have only run on CPU lanes (interpreter platform).

Affinity: with `affinity` (the corpus job passes the task), an idle lane takes from its node's ready
items one of a task it ran lately, so a task's reference is built once per actor where the queue allows.

Model-driven runs use it too: their source (`kernelvault.pipelines.trajectory_source`) yields a trajectory's next
turn only once this one's verdict is back, so the source is read on a thread of its own (`SourceFeed`) and
the driver's loop never blocks on it. What it does NOT do: survive the
driver's own death (the ledger does that: rerun the same command to resume; the shards actors landed are
reconciled then), or fence off an actor Ray declared dead that still runs (a partitioned node): its
writer could still land a shard the driver has already redone, a duplicate a resume would then see.
"""

from __future__ import annotations

import os
import queue
import threading
import time
from collections import OrderedDict, deque
from collections.abc import Callable, Hashable, Iterable
from dataclasses import dataclass, field
from typing import Any, Protocol

from kernelvault.pipelines.executor import DeviceStage, ExecutorConfig, ExecutorStats

MISSING_RAY = (
    "the ray executor needs the 'dist' extra (ray is not installed): pip install 'kernelvault[dist]'"
)


def import_ray() -> Any:
    """ray, or a one-line error naming the extra to install."""
    try:
        import ray
    except ImportError:
        raise RuntimeError(MISSING_RAY) from None
    return ray


def actor_device(device: str) -> str:
    """In an actor: "cpu" stays; "gpu" becomes the physical id of the one GPU Ray gave this process.

    The lane's workers get CUDA/HIP_VISIBLE_DEVICES set to that id by WorkerLane. An inherited
    ROCR_VISIBLE_DEVICES (which Ray sets on AMD nodes) would renumber that GPU as 0 and make the physical id
    point at nothing, so it goes.
    """
    if device != "gpu":
        return device
    import ray

    os.environ.pop("ROCR_VISIBLE_DEVICES", None)
    return str(ray.get_gpu_ids()[0])


@dataclass(frozen=True)
class Landed:
    """A shard a lane actor's writer put in place: its name, and the keys of the items whose rows it holds."""

    name: str
    keys: tuple[Hashable, ...]


class ActorSink(Protocol):
    """A lane actor's own writer (one per actor incarnation; `ActorWriting.open_sink` makes it)."""

    def write(self, result: Any) -> bool:
        """Buffer the result's rows; False when it has none to land (the driver accounts for it at once)."""
        ...

    def landed(self) -> list[Landed]:
        """The shards put in place since the last call."""
        ...

    def flush(self) -> None: ...


@dataclass(frozen=True)
class ActorWriting:
    """Results written by the lane actors themselves, each into its own shards of a shared folder.

    `open_sink(writer)` runs in an actor, `writer` unique per lane and incarnation (a restarted actor
    never appends to a dead one's files); `commit(landed)` runs on the driver once a shard is in place
    (the corpus job: the ledger marks its attempts finished); `recover(writer)` runs on the driver when an
    incarnation died, and returns the shards it put in place whose news never arrived; `key(item)` is an
    item's key as `Landed.keys` names it. The driver's `write(result)` still runs once per item, when its
    row is final (or at once for a result with no row), for the run's accounting.
    """

    open_sink: Callable[[int], ActorSink]
    commit: Callable[[Landed], None]
    recover: Callable[[int], list[Landed]]
    key: Callable[[Any], Hashable]


class StageActor:
    """The body of a lane actor: one PoolStage (a lane pool of its own: persistent workers) for the device
    Ray gave it, and, with `ActorWriting`, the writer of its results."""

    def __init__(self, open_stage: Callable[[str], DeviceStage[Any, Any]], device: str,
                 open_sink: Callable[[int], ActorSink] | None = None) -> None:  # fmt: skip
        import ray

        device = actor_device(device)
        self.device = device
        self.node = ray.get_runtime_context().get_node_id()
        self.lane = open_stage(device)
        self.open_sink = open_sink
        self.sink: ActorSink | None = None
        self.writer = -1

    def where(self) -> tuple[str, str, int]:
        return self.node, self.device, os.getpid()

    def run(self, item: Any, writer: int = -1) -> Any:
        result = self.lane.submit(item).result()  # the actor's one lane: nothing else to do meanwhile
        if self.open_sink is None:
            return result
        sink = self._sink(writer)
        buffered = sink.write(result)
        return result, buffered, sink.landed()

    def flush(self, writer: int) -> list[Landed]:
        sink = self._sink(writer)
        sink.flush()
        return sink.landed()

    def _sink(self, writer: int) -> ActorSink:
        assert self.open_sink is not None
        if self.sink is None or writer != self.writer:  # the driver names the writer of this incarnation
            if self.sink is not None:
                self.sink.flush()
            self.sink, self.writer = self.open_sink(writer), writer
        return self.sink

    def close(self) -> None:
        self.lane.close()


def _prepare_task(prepare: Callable[[Any], Any], item: Any) -> Any:
    return prepare(item)


def _discard_task(discard: Callable[[Any], None], prepared: Any) -> None:
    discard(prepared)


_NOTHING_YET = object()  # the source has no item now, and may have one later
_EXHAUSTED = object()  # the source is done


class SourceFeed:
    """The source read on a thread of its own, one item ahead, so the driver's loop never blocks on it.

    A source may wait until earlier items are verified (the agent job's next turn needs this turn's
    verdict); the driver collects those verdicts, so it must not sit in `next()` meanwhile.
    """

    def __init__(self, source: Iterable[Any]) -> None:
        self._source = source
        self._items: queue.Queue[Any] = queue.Queue(maxsize=1)
        self._error: BaseException | None = None
        self._waiting: Any = _NOTHING_YET  # an item wait() took off the queue, for take() to return
        self._thread = threading.Thread(target=self._read, name="kv-ray-source", daemon=True)
        self._thread.start()

    def _read(self) -> None:
        try:
            for item in self._source:
                self._items.put(item)
        except BaseException as error:  # noqa: BLE001 - raised on the driver by take()
            self._error = error
        self._items.put(_EXHAUSTED)

    def take(self) -> Any:
        """The next item, `_NOTHING_YET`, or `_EXHAUSTED`; raises what the source raised."""
        value, self._waiting = self._waiting, _NOTHING_YET
        if value is _NOTHING_YET:
            try:
                value = self._items.get_nowait()
            except queue.Empty:
                return _NOTHING_YET
        if value is _EXHAUSTED:
            self._waiting = _EXHAUSTED  # stays exhausted
            if self._error is not None:
                raise self._error
        return value

    def wait(self, seconds: float) -> None:
        """Return once an item (or the end) is there to take, or after `seconds`."""
        if self._waiting is _NOTHING_YET:
            try:
                self._waiting = self._items.get(timeout=seconds)
            except queue.Empty:
                return

    def interrupt(self) -> None:
        """The run stopped early: wake a source that waits for verdicts (it has `interrupt`), if any."""
        interrupt = getattr(self._source, "interrupt", None)
        if interrupt is not None:
            interrupt()


@dataclass
class RayExecutorStats(ExecutorStats):
    lost: int = 0  # lane calls or prepare tasks that died with their process, and were redone
    given_up: int = 0  # items lost more than max_losses times, handed to give_up
    lane_pids: dict[str, list[int]] = field(default_factory=dict)  # every process each lane ran in
    affinity_hits: int = 0  # items handed to a lane that had run their affinity key (task) lately
    shards_landed: int = 0  # with ActorWriting: shards the lane actors put in place and the driver committed
    shards_recovered: int = 0  # of those, found on disk after their actor died before saying so


@dataclass
class _Item:
    value: Any
    node: str = ""
    losses: int = 0
    prepared: Any = None
    passed_over: int = 0  # times a lane took a younger item for affinity


@dataclass
class _Actor:
    name: str
    actor: Any
    index: int = 0
    node: str = ""
    busy: bool = True  # until its first `where` answers
    recent: OrderedDict[Hashable, None] = field(default_factory=OrderedDict)  # affinity keys it ran lately
    incarnation: int = -1  # its `where` answers so far, minus one: a restarted actor gets a new writer
    # with ActorWriting: items whose results came back but whose rows are still in its writer's buffer
    pending: dict[Hashable, tuple[_Item, Any]] = field(default_factory=dict)

    @property
    def writer(self) -> int:
        return (self.index + 1) * WRITERS_PER_LANE + self.incarnation  # 0 stays the driver's own writer


# Writer ids per lane: one per incarnation (an actor restarts at most max_restarts times).
WRITERS_PER_LANE = 100


@dataclass(frozen=True)
class RayOptions:
    address: str | None = None  # None: start a local instance; "auto" or "ray://host:10001": join one
    max_restarts: int = 3  # per lane actor
    max_losses: int = 2  # an item lost more often than this is given up
    prepare_retries: int = 2  # Ray's own retries of a prepare task whose process died
    # CPUs reserved per lane actor. It mostly waits on its sandboxed worker (whose CPU is what matters),
    # so a fraction is fine on a small machine; what must be left is a CPU for the prepare tasks.
    lane_cpus: float = 0.5
    # Affinity keys a lane remembers (its persistent worker caches the reference of 8 tasks).
    affinity_memory: int = 8


def _take(queue: deque[_Item], lane: _Actor, others: set[Hashable], affinity: Callable[[Any], Hashable] | None,
          memory: int, stats: RayExecutorStats) -> _Item:  # fmt: skip
    """The lane's next item: the oldest of the task it ran last, else of the one before, ..., else the oldest
    of a task no other lane ran last (`others`), else the oldest.

    The oldest is passed over at most `memory` times, so an item no lane has seen still gets its turn.
    """
    if affinity is None:
        return queue.popleft()
    chosen = queue[0]
    if queue[0].passed_over < memory:
        keys = [affinity(item.value) for item in queue]
        for recent in reversed(lane.recent):  # the task it ran last first: its reference is surely cached
            if recent in keys:
                chosen = queue[keys.index(recent)]
                break
        else:  # nothing it has loaded: a task no other lane is on, so lanes spread over tasks
            chosen = next(
                (item for item, key in zip(queue, keys, strict=True) if key not in others), queue[0]
            )
    if chosen is not queue[0]:
        queue[0].passed_over += 1
        stats.affinity_hits += 1
    elif affinity(chosen.value) in lane.recent:
        stats.affinity_hits += 1
    queue.remove(chosen)
    key = affinity(chosen.value)
    lane.recent[key] = None
    lane.recent.move_to_end(key)
    while len(lane.recent) > memory:
        lane.recent.popitem(last=False)
    return chosen


class RayExecutor:
    def __init__(self, config: ExecutorConfig, options: RayOptions | None = None) -> None:
        self.config, self.options = config, options or RayOptions()
        self.ray = import_ray()
        self._started_ray = False
        self._retry: deque[_Item] = deque()
        self._lane_error = ""
        self._drop: Callable[[_Item], None] = lambda item: (
            None
        )  # set by run: forget an item's prepared result
        if not self.ray.is_initialized():
            self.ray.init(address=self.options.address, include_dashboard=None, log_to_driver=False)
            self._started_ray = True

    def cluster_gpus(self) -> int:
        return int(self.ray.cluster_resources().get("GPU", 0))

    def shutdown(self) -> None:
        if self._started_ray:
            self.ray.shutdown()

    def run(self, source: Iterable[Any], prepare: Callable[[Any], Any], open_stage: Callable[[str], DeviceStage[Any, Any]],
            write: Callable[[Any], None], give_up: Callable[[Any, str], Any] | None = None,
            affinity: Callable[[Any], Hashable] | None = None,
            discard: Callable[[Any], None] | None = None,
            writing: ActorWriting | None = None, halt: threading.Event | None = None) -> RayExecutorStats:  # fmt: skip
        """Feed every item of source through prepare, a lane actor and write; returns when all are written.

        `halt` (the first SIGINT/SIGTERM) stops the run as the local executor's does: nothing more is prepared or
        handed to a lane, what a lane has gets `halt_grace_s` to come back and be written, and the rest is
        abandoned (`stats.abandoned`; the actors are killed with what they held, and the caller's ledger redoes it).

        `writing`: the lane actors write the results themselves (`ActorWriting`); an item is done when the
        shard holding its row is in place and committed, and the rows an actor held when it died are
        recovered from its shards or done again. Without it, results come back to `write` on the driver.

        `affinity(item)` (the corpus job: the task) lets an idle lane take, from its node's ready items,
        one whose key it ran recently (its worker has that task's reference loaded) before the oldest.
        `discard(prepared)` runs, as a task on the item's node, for a prepared item whose lane died with it
        (the corpus job: remove its temporary folder; the item is prepared again).
        """
        from ray.util.scheduling_strategies import NodeAffinitySchedulingStrategy

        ray, config, options = self.ray, self.config, self.options
        stats = RayExecutorStats()
        remote_prepare = ray.remote(num_cpus=1, max_retries=options.prepare_retries)(_prepare_task)
        prepare_ref = ray.put(prepare)
        actor_class = ray.remote(StageActor)
        cpus = ray.cluster_resources().get("CPU", 0)
        if cpus < len(config.lanes) * options.lane_cpus + 1:  # else prepare tasks wait forever for a CPU
            raise ValueError(f"the Ray cluster has {cpus:g} CPUs: too few for {len(config.lanes)} lanes of "
                             f"{options.lane_cpus:g} CPU and one prepare task; use fewer lanes or lane_cpus")  # fmt: skip
        if writing is not None and options.max_restarts >= WRITERS_PER_LANE:
            raise ValueError(f"max_restarts is at most {WRITERS_PER_LANE - 1} when actors write (one writer id "
                             "per incarnation)")  # fmt: skip
        lanes: dict[str, _Actor] = {}
        for index, device in enumerate(config.lanes):
            gpu = device != "cpu"
            actor = actor_class.options(num_cpus=options.lane_cpus, num_gpus=1 if gpu else 0,
                                        max_restarts=options.max_restarts, max_task_retries=0).remote(
                open_stage, "gpu" if gpu else "cpu", writing.open_sink if writing else None)  # fmt: skip
            lanes[f"{device}#{index}"] = _Actor(f"{device}#{index}", actor, index)
        calls: dict[Any, tuple[str, _Item | None, _Actor | None]] = {}  # ref -> (kind, item, lane)
        for lane in lanes.values():
            calls[lane.actor.where.remote()] = ("where", None, lane)
        retry = self._retry  # lost items, prepared again before new ones
        retry.clear()
        ready: dict[str, deque[_Item]] = {}  # per node
        preparing: dict[str, int] = {}  # per node
        feed = SourceFeed(source)
        exhausted = False
        in_flight_limit = 2 * max(1, config.compile_workers)

        remote_discard = ray.remote(num_cpus=0)(_discard_task)
        discard_ref = ray.put(discard) if discard is not None else None
        cleanups: list[Any] = []

        def drop(item: _Item) -> None:
            """Forget an item's prepared result; its files on its node go too."""
            if item.prepared is not None and discard_ref is not None:
                strategy = NodeAffinitySchedulingStrategy(item.node, soft=True)  # the node may be gone
                cleanups.append(
                    remote_discard.options(scheduling_strategy=strategy).remote(discard_ref, item.prepared)
                )
            item.prepared = None

        self._drop = drop

        def lose(item: _Item, why: str) -> None:
            stats.lost += 1
            item.losses += 1
            drop(item)
            if item.losses <= options.max_losses:
                retry.append(item)
                return
            if give_up is None:
                raise RuntimeError(f"an item was lost {item.losses} times ({why}) and nothing can give it up")
            stats.given_up += 1
            write(give_up(item.value, why))
            stats.written += 1

        def pick_node() -> str | None:
            """The live node with the least prepared or preparing work per idle-or-busy lane."""
            per_node: dict[str, int] = {}
            for lane in lanes.values():
                if lane.node:
                    per_node[lane.node] = per_node.get(lane.node, 0) + 1
            if not per_node:
                return None
            return min(per_node, key=lambda n: (preparing.get(n, 0) + len(ready.get(n, ()))) / per_node[n])

        finished = False
        halt = halt or threading.Event()
        halted_at: float | None = None
        try:
            while True:
                if halt.is_set():
                    halted_at = halted_at or time.monotonic()
                    running = [ref for ref, (kind, _, _) in calls.items() if kind == "run"]
                    if not running or time.monotonic() - halted_at >= config.halt_grace_s:
                        break
                # Top up the prepare stage: lost items first, then the source, within the bound.
                while (
                    halted_at is None
                    and sum(preparing.values()) < in_flight_limit
                    and sum(map(len, ready.values())) < config.queue_size
                ):
                    node = pick_node()
                    if node is None:
                        break
                    if retry:
                        item = retry.popleft()
                    elif not exhausted:
                        value = feed.take()
                        if value is _EXHAUSTED:
                            exhausted = True
                            break
                        if value is _NOTHING_YET:  # a source that waits for verdicts: collect some first
                            break
                        item = _Item(value)
                        stats.submitted += 1
                    else:
                        break
                    item.node = node
                    preparing[node] = preparing.get(node, 0) + 1
                    strategy = NodeAffinitySchedulingStrategy(node, soft=False)
                    ref = remote_prepare.options(scheduling_strategy=strategy).remote(prepare_ref, item.value)
                    calls[ref] = ("prepare", item, None)
                    stats.pool_high_water = max(stats.pool_high_water, sum(preparing.values()))
                # Hand ready items to idle lanes of their node.
                for lane in lanes.values():
                    queue = ready.get(lane.node)
                    if not lane.busy and queue and halted_at is None:
                        others = {
                            next(reversed(o.recent)) for o in lanes.values() if o is not lane and o.recent
                        }
                        item = _take(queue, lane, others, affinity, options.affinity_memory, stats)
                        call = lane.actor.run.remote(item.prepared, lane.writer if writing else -1)
                        calls[call] = ("run", item, lane)
                        lane.busy = True
                        stats.lane_items[lane.name] = stats.lane_items.get(lane.name, 0) + 1
                work = [ref for ref, (kind, _, _) in calls.items() if kind != "where"]
                if exhausted and not retry and not work and not any(ready.values()):
                    holding = [lane for lane in lanes.values() if lane.pending]
                    if not holding:
                        finished = True
                        break
                    for lane in holding:  # the last rows wait in the actors' writers: land them
                        if not lane.busy:
                            calls[lane.actor.flush.remote(lane.writer)] = ("flush", None, lane)
                            lane.busy = True
                if not lanes:
                    raise RuntimeError(
                        f"every verification actor died for good; the last: {self._lane_error}"
                    )
                if not calls:  # nothing in flight: only the source can bring work
                    feed.wait(1.0)
                    continue
                # While the source may still bring items, look at it again soon.
                done, _ = ray.wait(
                    list(calls), num_returns=1, timeout=0.25 if exhausted else 0.05
                )  # a halt is seen within it
                for ref in done:
                    kind, item, lane = calls.pop(ref)
                    self._finish(kind, ref, item, lane, lanes, ready, preparing, stats, write, lose, calls,
                                 writing)  # fmt: skip
        finally:
            if not finished:  # a source that waits for verdicts would wait for ever now
                feed.interrupt()
            if cleanups:  # best effort: a node that died took its files with it
                ray.wait(cleanups, num_returns=len(cleanups), timeout=30)
            if finished:
                # A lane restarted after its last item: its new process answers `where` once up, for the record.
                deadline = time.monotonic() + 30
                while (wheres := [ref for ref, (kind, _, _) in calls.items() if kind == "where"]) and (
                    time.monotonic() < deadline
                ):
                    done, _ = ray.wait(wheres, num_returns=1, timeout=max(0.0, deadline - time.monotonic()))
                    for ref in done:
                        kind, item, lane = calls.pop(ref)
                        self._finish(kind, ref, item, lane, lanes, ready, preparing, stats, write, lose, calls,
                                     writing)  # fmt: skip
                # stop the persistent workers cleanly; otherwise they die with their actor
                ray.wait([lane.actor.close.remote() for lane in lanes.values()], num_returns=len(lanes),
                         timeout=60)  # fmt: skip
            for lane in lanes.values():
                ray.kill(lane.actor, no_restart=True)
        if halted_at is not None:
            stats.abandoned = stats.submitted - stats.written
        return stats

    def _finish(self, kind: str, ref: Any, item: _Item | None, lane: _Actor | None, lanes: dict[str, _Actor],
                ready: dict[str, deque[_Item]], preparing: dict[str, int], stats: RayExecutorStats,
                write: Callable[[Any], None], lose: Callable[[_Item, str], None],
                calls: dict[Any, tuple[str, _Item | None, _Actor | None]],
                writing: ActorWriting | None = None) -> None:  # fmt: skip
        """Take one finished call's result: a prepared item, a verified one, landed shards, or a lane
        (re)starting."""
        exceptions = self.ray.exceptions
        if kind == "prepare":
            assert item is not None
            preparing[item.node] -= 1
            try:
                item.prepared = self.ray.get(ref)
            except exceptions.RayTaskError as error:  # the stage raised: a programming error, as locally
                raise error.as_instanceof_cause() from None
            except (
                exceptions.WorkerCrashedError,
                exceptions.NodeDiedError,
                exceptions.ObjectLostError,
            ) as error:
                lose(item, f"prepare task lost: {type(error).__name__}")
                return
            if any(other.node == item.node for other in lanes.values()):
                ready.setdefault(item.node, deque()).append(item)
                stats.prepared_high_water = max(stats.prepared_high_water, sum(map(len, ready.values())))
            else:  # its node has no lane left: prepare it again elsewhere (not the item's fault)
                self._drop(item)
                self._retry.append(item)
            return
        assert lane is not None
        if kind == "where":
            try:
                lane.node, _, pid = self.ray.get(ref)
            except exceptions.ActorUnavailableError:  # still restarting: ask again shortly
                time.sleep(0.2)
                calls[lane.actor.where.remote()] = ("where", None, lane)
                return
            except exceptions.RayActorError as error:  # restarts used up, or its constructor raised
                self._lane_error = str(error).strip().splitlines()[-1] if str(error).strip() else repr(error)
                del lanes[lane.name]
                if lane.node and not any(other.node == lane.node for other in lanes.values()):
                    for orphan in ready.pop(lane.node, deque()):
                        self._drop(orphan)
                        self._retry.append(orphan)
                return
            stats.lane_pids.setdefault(lane.name, []).append(pid)
            lane.incarnation += 1  # a new process: its results go to a writer of its own
            lane.busy = False
            return
        try:
            result = self.ray.get(ref)
        except exceptions.RayTaskError as error:
            raise error.as_instanceof_cause() from None
        except exceptions.RayActorError as error:  # the actor's process died during (or around) the call
            why = f"verification actor {lane.name} died: {type(error).__name__}"
            if writing is None:
                if item is not None:
                    lose(item, why)
            else:  # its writer may have landed the call's own row before it died: look before redoing it
                if item is not None:
                    lane.pending[writing.key(item.value)] = (item, None)
                self._recover(lane, writing, write, lose, stats, why)
            calls[lane.actor.where.remote()] = ("where", None, lane)  # back in service once restarted
            return
        lane.busy = False
        if kind == "flush":
            assert writing is not None
            self._land(lane, result, writing, write, stats)
            return
        assert item is not None
        if writing is None:
            write(result)
            stats.written += 1
            return
        result, buffered, landed = result
        if buffered:  # its row is in the actor's writer: done once the shard holding it is in place
            lane.pending[writing.key(item.value)] = (item, result)
        else:
            write(result)
            stats.written += 1
        self._land(lane, landed, writing, write, stats)

    @staticmethod
    def _land(lane: _Actor, landed: Iterable[Landed], writing: ActorWriting, write: Callable[[Any], None],
              stats: RayExecutorStats) -> None:  # fmt: skip
        """Shards the lane's writer put in place: committed, and their items' results accounted for."""
        for shard in landed:
            entries = [lane.pending.pop(key) for key in shard.keys if key in lane.pending]
            writing.commit(shard)
            stats.shards_landed += 1
            for _, result in entries:
                if result is not None:  # None: the call died after its row landed; the result is gone
                    write(result)
                stats.written += 1

    def _recover(self, lane: _Actor, writing: ActorWriting, write: Callable[[Any], None],
                 lose: Callable[[_Item, str], None], stats: RayExecutorStats, why: str) -> None:  # fmt: skip
        """The lane's actor died: shards its writer put in place before dying are committed (their news
        died with it); rows still in its buffer are lost, and their items done again."""
        if not lane.pending:
            return
        unseen = [
            shard for shard in writing.recover(lane.writer) if any(k in lane.pending for k in shard.keys)
        ]
        stats.shards_recovered += len(unseen)
        self._land(lane, unseen, writing, write, stats)
        for item, result in lane.pending.values():
            lose(item, why if result is None else f"its row was in the writer of {lane.name} when it died")
        lane.pending.clear()

"""RayExecutor: the LocalExecutor's stages on a Ray cluster; the driver keeps the writer and the ledger.

    source ──► prepare (Ray CPU tasks, ──► [ready, per node] ──► lane actors (one per GPU, ──► write
    (driver)    bounded in flight)                                or one per cpu lane)         (driver)

Same stages, same interface as `pipelines.executor.LocalExecutor.run`: `prepare` runs as a Ray task,
`open_lane(device)` runs in the constructor of a long-lived actor (`num_gpus=1` for a GPU lane, so a GPU
times one candidate at a time), and every result comes back to the driver, which calls `write` on its
own thread. So the run ledger (SQLite, on the driver) stays the only source of truth, exactly as locally.

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

Model-driven runs use `pipelines.ray_verify_pool.RayVerifierPool` instead (the agent's trajectories on
the driver, each verification on an actor). What it does NOT do (yet): write
shards per actor (every row passes through the one writer on the driver; not yet measured at scale),
or survive the driver's own death (the ledger does that: rerun the same command to resume).
"""

from __future__ import annotations

import os
import time
from collections import OrderedDict, deque
from collections.abc import Callable, Hashable, Iterable, Iterator
from dataclasses import dataclass, field
from typing import Any

from pipelines.executor import ExecutorConfig, ExecutorStats, Lane

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


class LaneHost:
    """The body of a lane actor: one VerificationLane (persistent workers) for the device Ray gave it."""

    def __init__(self, open_lane: Callable[[str], Lane[Any, Any]], device: str) -> None:
        import ray

        device = actor_device(device)
        self.device = device
        self.node = ray.get_runtime_context().get_node_id()
        self.lane = open_lane(device)

    def where(self) -> tuple[str, str, int]:
        return self.node, self.device, os.getpid()

    def run(self, item: Any) -> Any:
        return self.lane(item)

    def close(self) -> None:
        self.lane.close()


def _prepare_task(prepare: Callable[[Any], Any], item: Any) -> Any:
    return prepare(item)


def _discard_task(discard: Callable[[Any], None], prepared: Any) -> None:
    discard(prepared)


@dataclass
class RayExecutorStats(ExecutorStats):
    lost: int = 0  # lane calls or prepare tasks that died with their process, and were redone
    given_up: int = 0  # items lost more than max_losses times, handed to give_up
    lane_pids: dict[str, list[int]] = field(default_factory=dict)  # every process each lane ran in
    affinity_hits: int = 0  # items handed to a lane that had run their affinity key (task) lately


@dataclass
class _Item:
    value: Any
    node: str = ""
    losses: int = 0
    prepared: Any = None
    passed_over: int = 0  # times a lane took a younger item for affinity


@dataclass
class _Lane:
    name: str
    actor: Any
    node: str = ""
    busy: bool = True  # until its first `where` answers
    recent: OrderedDict[Hashable, None] = field(default_factory=OrderedDict)  # affinity keys it ran lately


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


def _take(queue: deque[_Item], lane: _Lane, others: set[Hashable], affinity: Callable[[Any], Hashable] | None,
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

    def run(self, source: Iterable[Any], prepare: Callable[[Any], Any], open_lane: Callable[[str], Lane[Any, Any]],
            write: Callable[[Any], None], give_up: Callable[[Any, str], Any] | None = None,
            affinity: Callable[[Any], Hashable] | None = None,
            discard: Callable[[Any], None] | None = None) -> RayExecutorStats:  # fmt: skip
        """Feed every item of source through prepare, a lane actor and write; returns when all are written.

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
        actor_class = ray.remote(LaneHost)
        cpus = ray.cluster_resources().get("CPU", 0)
        if cpus < len(config.lanes) * options.lane_cpus + 1:  # else prepare tasks wait forever for a CPU
            raise ValueError(f"the Ray cluster has {cpus:g} CPUs: too few for {len(config.lanes)} lanes of "
                             f"{options.lane_cpus:g} CPU and one prepare task; use fewer lanes or lane_cpus")  # fmt: skip
        lanes: dict[str, _Lane] = {}
        for index, device in enumerate(config.lanes):
            gpu = device != "cpu"
            actor = actor_class.options(num_cpus=options.lane_cpus, num_gpus=1 if gpu else 0,
                                        max_restarts=options.max_restarts, max_task_retries=0).remote(
                open_lane, "gpu" if gpu else "cpu")  # fmt: skip
            lanes[f"{device}#{index}"] = _Lane(f"{device}#{index}", actor)
        calls: dict[Any, tuple[str, _Item | None, _Lane | None]] = {}  # ref -> (kind, item, lane)
        for lane in lanes.values():
            calls[lane.actor.where.remote()] = ("where", None, lane)
        retry = self._retry  # lost items, prepared again before new ones
        retry.clear()
        ready: dict[str, deque[_Item]] = {}  # per node
        preparing: dict[str, int] = {}  # per node
        items: Iterator[Any] = iter(source)
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
        try:
            while True:
                # Top up the prepare stage: lost items first, then the source, within the bound.
                while (
                    sum(preparing.values()) < in_flight_limit
                    and sum(map(len, ready.values())) < config.queue_size
                ):
                    node = pick_node()
                    if node is None:
                        break
                    if retry:
                        item = retry.popleft()
                    elif not exhausted:
                        try:
                            item = _Item(next(items))
                        except StopIteration:
                            exhausted = True
                            break
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
                    if not lane.busy and queue:
                        others = {
                            next(reversed(o.recent)) for o in lanes.values() if o is not lane and o.recent
                        }
                        item = _take(queue, lane, others, affinity, options.affinity_memory, stats)
                        calls[lane.actor.run.remote(item.prepared)] = ("run", item, lane)
                        lane.busy = True
                        stats.lane_items[lane.name] = stats.lane_items.get(lane.name, 0) + 1
                work = [ref for ref, (kind, _, _) in calls.items() if kind != "where"]
                if exhausted and not retry and not work and not any(ready.values()):
                    finished = True
                    break
                if not lanes:
                    raise RuntimeError(
                        f"every verification actor died for good; the last: {self._lane_error}"
                    )
                done, _ = ray.wait(list(calls), num_returns=1)
                for ref in done:
                    kind, item, lane = calls.pop(ref)
                    self._finish(kind, ref, item, lane, lanes, ready, preparing, stats, write, lose, calls)
        finally:
            if cleanups:  # best effort: a node that died took its files with it
                ray.wait(cleanups, num_returns=len(cleanups), timeout=30)
            if finished:  # stop the persistent workers cleanly; otherwise they die with their actor
                ray.wait([lane.actor.close.remote() for lane in lanes.values()], num_returns=len(lanes),
                         timeout=60)  # fmt: skip
            for lane in lanes.values():
                ray.kill(lane.actor, no_restart=True)
        return stats

    def _finish(self, kind: str, ref: Any, item: _Item | None, lane: _Lane | None, lanes: dict[str, _Lane],
                ready: dict[str, deque[_Item]], preparing: dict[str, int], stats: RayExecutorStats,
                write: Callable[[Any], None], lose: Callable[[_Item, str], None],
                calls: dict[Any, tuple[str, _Item | None, _Lane | None]]) -> None:  # fmt: skip
        """Take one finished call's result: a prepared item, a verified one, or a lane (re)starting."""
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
            lane.busy = False
            return
        assert item is not None
        try:
            result = self.ray.get(ref)
        except exceptions.RayTaskError as error:
            raise error.as_instanceof_cause() from None
        except exceptions.RayActorError as error:  # the actor's process died during (or around) the call
            lose(item, f"verification actor {lane.name} died: {type(error).__name__}")
            calls[lane.actor.where.remote()] = ("where", None, lane)  # back in service once restarted
            return
        write(result)
        stats.written += 1
        lane.busy = False

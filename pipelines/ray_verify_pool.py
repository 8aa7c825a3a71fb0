"""RayVerifierPool: the agent job's verification on a Ray cluster, one long-lived actor per GPU.

The model-driven job (`kernelvault.pipelines.agent_job`) runs its trajectories on the driver: model requests are
async and bounded by `--concurrency` there, as locally. Each verification (`verify(task, candidate)`,
the `VerifierPool` interface) goes to an idle verification actor: `num_gpus=1` for a GPU lane, so a GPU
checks and times one candidate at a time; the actor runs every stage (parse, static checks, HIP build,
check, time) in its persistent workers (`kernelvault.toolchain.worker_lane.WorkerLane`) on its own node, so no
shared filesystem is needed. Rows, shards and the run ledger stay on the driver.

Faults: an actor is created with `max_restarts`; a call that fails because the actor died is tried again
on the next idle actor, up to `max_losses` times, then the attempt gets the verdict `Verifier.lost`
gives (an `infrastructure_error`, which the ledger retries on resume). A trajectory never waits on a dead
actor forever, and nothing is written twice: a verdict reaches the trajectory only from a call that returned.
"""

from __future__ import annotations

import os
import queue
import threading
import time
from types import TracebackType
from typing import Any

from kernelvault.contracts import Candidate, Task, Verdict
from kernelvault.pipelines.ray_executor import RayOptions, actor_device, import_ray
from kernelvault.toolchain.lane_pool import DeviceJob
from kernelvault.toolchain.verify import Verifier

_RESTART_WAIT_S = 300.0  # how long a call waits for restarting actors before its attempt is lost


class VerifyHost:
    """The body of a verification actor: a lane pool of one lane on the actor's device (its GPU, or cpu)."""

    def __init__(self, verifier: Verifier, device: str) -> None:
        from kernelvault.toolchain.lane_pool import LanePool

        self.pool = LanePool(verifier, [actor_device(device)])

    def ping(self) -> None:
        pass

    def verify(self, task: Task, candidate: Candidate) -> tuple[Verdict, int]:
        return self.pool.verify(task, candidate), os.getpid()

    def close(self) -> None:
        self.pool.close()


class RayVerifierPool:
    """`verify(task, candidate)` on a Ray actor: one per GPU of the cluster, or `cpu_lanes` on the cpu platform."""

    def __init__(self, verifier: Verifier, cpu_lanes: int, options: RayOptions | None = None) -> None:
        self.verifier, self.options = verifier, options or RayOptions()
        self.ray = import_ray()
        self._started_ray = False
        if not self.ray.is_initialized():
            self.ray.init(address=self.options.address, include_dashboard=None, log_to_driver=False)
            self._started_ray = True
        lanes = cluster_lanes(self.ray, verifier.choice.platform, cpu_lanes)
        actor_class = self.ray.remote(VerifyHost)
        self.actors = [
            actor_class.options(num_cpus=self.options.lane_cpus, num_gpus=1 if device == "gpu" else 0,
                                max_restarts=self.options.max_restarts, max_task_retries=0).remote(verifier, device)
            for device in lanes
        ]  # fmt: skip
        self._idle: queue.Queue[int] = queue.Queue()
        for index in range(len(self.actors)):
            self._idle.put(index)
        self._lock = threading.Lock()
        self.timeline: list[DeviceJob] = []  # whole verifications here (the actor also runs the CPU stages)
        self.lost = 0  # calls that died with their actor and were tried again
        self.pids: dict[int, set[int]] = {}  # per actor: every process it answered from

    def verify(self, task: Task, candidate: Candidate) -> Verdict:
        exceptions = self.ray.exceptions
        losses, first = 0, time.monotonic()
        while True:
            queued = time.monotonic()
            index = self._idle.get()
            actor = self.actors[index]
            try:
                # Alive first (a restarting actor answers ActorUnavailableError at once): an error of the
                # verify call then means the actor died during it.
                self.ray.get(actor.ping.remote())
            except (exceptions.ActorUnavailableError, exceptions.RayActorError):
                self._idle.put(index)
                if time.monotonic() - first > _RESTART_WAIT_S:
                    why = f"verification actor {index} stayed unavailable"
                    return self.verifier.lost(task, candidate.target, why)
                time.sleep(0.2)
                continue
            started = time.monotonic()
            try:
                verdict, pid = self.ray.get(actor.verify.remote(task, candidate))
            except exceptions.RayTaskError as error:  # the verification raised: a programming error
                raise error.as_instanceof_cause() from None
            except (exceptions.RayActorError, exceptions.ActorUnavailableError) as error:  # died in the call
                with self._lock:
                    self.lost += 1
                losses += 1
                if losses > self.options.max_losses:
                    why = f"verification actor {index} died {losses} times: {type(error).__name__}"
                    return self.verifier.lost(task, candidate.target, why)
                continue  # Ray restarts it (up to max_restarts); the call goes to the next idle actor
            finally:
                self._idle.put(index)
            self.timeline.append(DeviceJob(index, queued, started, time.monotonic()))
            with self._lock:
                self.pids.setdefault(index, set()).add(pid)
            return verdict

    def close(self) -> None:
        self.ray.wait(
            [actor.close.remote() for actor in self.actors], num_returns=len(self.actors), timeout=60
        )
        for actor in self.actors:
            self.ray.kill(actor, no_restart=True)
        if self._started_ray:
            self.ray.shutdown()

    def __enter__(self) -> RayVerifierPool:
        return self

    def __exit__(self, kind: type[BaseException] | None, error: BaseException | None,
                 traceback: TracebackType | None) -> None:  # fmt: skip
        self.close()


def cluster_lanes(ray: Any, platform: str, cpu_lanes: int) -> list[str]:
    """One "gpu" lane per GPU of the cluster on a GPU platform; `cpu_lanes` interpreter lanes on cpu."""
    if platform == "cpu":
        return ["cpu"] * max(1, cpu_lanes)
    gpus = int(ray.cluster_resources().get("GPU", 0))
    if gpus == 0:
        raise ValueError(f"the platform is {platform}, but the Ray cluster has no GPUs")
    return ["gpu"] * gpus

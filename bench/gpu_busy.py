"""Device busy fraction during a model-driven run, against a simulated endpoint with realistic latency.

The agent job (`kernelvault.pipelines.agent_job.run_agent_job`) runs over the bundled tasks that have an example
kernel; a real OpenAI-compatible HTTP server on localhost (`kernelvault.simulated_openai`) answers every
request with that task's example after a latency drawn per request from a log-normal distribution
(median `--latency-median-s`, shape `--latency-sigma`: a model answer of a few thousand tokens takes tens
of seconds). The device stages go through the run's `LanePool`, whose timeline says when each
candidate was queued for a lane, started and finished. Printed per lane:

- busy: the share of the run (first queued to last finished) the lane spent in device stages;
- busy while queued: the share of the time work was there for it (a candidate waiting for a lane, or its
  own candidate running) that it was running one. The #7 target is at least 80%: a lane that idles
  while candidates wait is the harness's fault; one that idles because the model has not answered is not.

    python bench/gpu_busy.py --platform cuda --samples 8 --latency-median-s 20 --concurrency 64
    python bench/gpu_busy.py --platform cpu --samples 2 --latency-median-s 2 --lanes 2   # a CPU dry run
"""

from __future__ import annotations

import argparse
import math
import os
import random
import sys
import tempfile
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))

from kernelvault.agents.client import EndpointConfig, SamplingSettings  # noqa: E402
from kernelvault.pipelines.agent_job import AgentJobConfig, run_agent_job  # noqa: E402
from kernelvault.pipelines.engine import EngineOptions  # noqa: E402
from kernelvault.simulated_openai import Answer, FakeOpenAI  # noqa: E402
from kernelvault.toolchain.lane_pool import DeviceJob, LanePool  # noqa: E402
from kernelvault.toolchain.tasks import LoadedTasks, load_task_file  # noqa: E402
from kernelvault.toolchain.verify import Verifier, VerifyConfig  # noqa: E402


def busy_while_queued(jobs: list[DeviceJob], lane: int) -> tuple[float, float]:
    """(seconds the lane ran a job, seconds work was there for it: a job waiting in the queue, or its own running)."""
    events: list[tuple[float, int, int]] = []  # (time, +1/-1, kind: 0 waiting, 1 running on this lane)
    for job in jobs:
        events += [(job.queued, 1, 0), (job.started, -1, 0)]
        if job.lane == lane:
            events += [(job.started, 1, 1), (job.finished, -1, 1)]
    events.sort()
    waiting = running = 0
    available = busy = 0.0
    last = events[0][0] if events else 0.0
    for moment, step, kind in events:
        if waiting or running:
            available += moment - last
        if running:
            busy += moment - last
        last = moment
        if kind == 0:
            waiting += step
        else:
            running += step
    return busy, available


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--target", default="triton", choices=["triton", "hip"])
    parser.add_argument("--platform", default=None, choices=["cpu", "cuda", "rocm"])
    parser.add_argument(
        "--lanes", type=int, default=None, help="verification lanes (default: 1 per GPU, 2 on cpu)"
    )
    parser.add_argument("--samples", type=int, default=4, help="trajectories per task")
    parser.add_argument("--latency-median-s", type=float, default=20.0)
    parser.add_argument("--latency-sigma", type=float, default=0.5)
    parser.add_argument("--concurrency", type=int, default=64, help="model requests in flight")
    parser.add_argument("--seed", type=int, default=0)
    args = parser.parse_args()

    rng = random.Random(args.seed)
    examples = ROOT / "examples" / args.target
    tasks = [
        load_task_file(path)
        for path in sorted((ROOT / "tasks").glob("*.py"))
        if (examples / path.name).exists()
    ]
    server = FakeOpenAI(
        scenarios={
            task.source: [
                Answer(f"Here is the kernel.\n\n```python\n{(examples / f'{task.name}.py').read_text()}```\n")
            ]
            for task in tasks
        },
        latency_s=lambda: rng.lognormvariate(math.log(args.latency_median_s), args.latency_sigma),
    )
    url, stop = server.start()
    os.environ.setdefault("OPENAI_API_KEY", "simulated")
    verifier = Verifier(VerifyConfig(platform=args.platform))
    platform = verifier.choice.platform
    lanes = args.lanes or (2 if platform == "cpu" else 1)
    config = AgentJobConfig(endpoint=EndpointConfig(base_url=url, model="simulated"), samples=args.samples,
                            max_turns=1, concurrency=args.concurrency, engine=EngineOptions(workers=lanes),
                            sampling=SamplingSettings(temperature=0.6, top_p=0.95, max_tokens=4096))  # fmt: skip
    pools: list[LanePool] = []
    started = time.monotonic()
    try:
        with tempfile.TemporaryDirectory(prefix="kv-gpu-busy-") as out:
            summary = run_agent_job(LoadedTasks(tasks=tasks), verifier, Path(out), args.target, config,
                                    progress=False, on_pool=pools.append)  # fmt: skip
    finally:
        stop()
    wall = time.monotonic() - started
    jobs = pools[0].timeline
    span = max(job.finished for job in jobs) - min(job.queued for job in jobs)
    waits = sorted(job.started - job.queued for job in jobs)
    print(f"# Device busy fraction, simulated endpoint ({time.strftime('%Y-%m-%d')})\n")
    print(f"platform {platform}, target {args.target}, {len(tasks)} tasks × {args.samples} samples, {lanes} lane(s); "
          f"endpoint latency log-normal median {args.latency_median_s:g} s sigma {args.latency_sigma:g}, "
          f"{args.concurrency} requests in flight; run {wall:.0f} s, {summary.attempts} attempts, "
          f"{summary.correct} correct, {len(jobs)} device jobs\n")  # fmt: skip
    print("| lane | device jobs | busy s | busy (of the run) | busy while queued | median queue wait s |")
    print("|---|---|---|---|---|---|")
    for lane in range(lanes):
        busy, available = busy_while_queued(jobs, lane)
        count = sum(job.lane == lane for job in jobs)
        print(f"| {lane} | {count} | {busy:.1f} | {busy / span:.0%} | "
              f"{busy / available if available else 0:.0%} | {waits[len(waits) // 2]:.2f} |")  # fmt: skip
    return 0


if __name__ == "__main__":
    sys.exit(main())

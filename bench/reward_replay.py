"""Real completions replayed as GRPO batches through the reward, as each trainer calls it (issue #45).

Batches are built from model answers already written (TritonBench's `LLM_generated/*.jsonl`, or any answers
file `kernelvault corpus --answers` reads): the answers to one task form a GRPO group (up to `--group`, one per
model file in TritonBench's case), and groups are taken in task order until the batch holds `--batch`
completions. Each batch goes, whole and at once, through

- `trl`: `ExecutionReward`, called as GRPOTrainer calls a reward function (prompts, completions and the dataset's
  columns as keyword lists), over a local lane pool (`kernelvault.rl.verifiers.verdict_source`);
- `verl`: `compute_score_async` for every sample, gathered as verl's reward loop awaits them (the pool of
  `verdict_source_from_env`, from KV_PLATFORM, KV_DEVICES, KV_LANES_PER_GPU and KV_REWARD_TIMING),

under each timing mode: `full` (the corpus's protocol: the reference timed in every verification, every sample),
`rl` (the reward path's default: a case's reference figure reused, fewer samples where the case's spread allows;
`reward_verify_config`). A mode named twice is run twice (`full,rl,full`: the second `full` is the first's noise
floor). Printed, per route and mode: seconds for the batch, unique verifications and their rate per GPU-minute,
the lanes' busy share, the share of verdicts that reached timing, and the share correct; then, per route, each
mode against the first: verdicts that differ, and the speedups of completions correct in both (median and
largest difference, share within 3%). A run's seconds include its pool's start (a trainer's first step pays it
too; each lane starts its workers once, side by side with the others).

    python bench/reward_replay.py --answers TritonBench/LLM_generated/Bench_G_general_purpose \
        --tasks TritonBench/data/TritonBench_G_v1 --platform cuda [--batch 512] [--group 10] [--devices 0,1] \
        [--modes full,rl] [--via trl,verl] [--lanes-per-gpu 8]
"""

from __future__ import annotations

import argparse
import asyncio
import os
import statistics
import sys
import time
from collections import defaultdict
from dataclasses import dataclass
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))

from kernelvault.contracts import Task, Verdict  # noqa: E402
from kernelvault.pipelines.answers import AnswerCandidates  # noqa: E402
from kernelvault.rl import verifiers  # noqa: E402
from kernelvault.rl.rewards import ExecutionReward  # noqa: E402
from kernelvault.rl.verl_score import compute_score_async  # noqa: E402
from kernelvault.toolchain.lane_pool import LanePool  # noqa: E402
from kernelvault.toolchain.reference_times import REFERENCE_TIMES  # noqa: E402
from kernelvault.toolchain.tasks import load_tasks  # noqa: E402


@dataclass(frozen=True)
class Completion:
    task: Task
    text: str
    model: str


@dataclass
class Replay:
    route: str
    mode: str
    seconds: float
    verdicts: list[Verdict]  # in the batch's order
    unique: int  # distinct (task, completion) pairs: what was verified
    gpus: int
    busy: float  # the lanes' busy share over the batch


def build_batch(
    answers: Path, tasks_spec: str | None, size: int, group: int, target: str
) -> list[Completion]:
    """GRPO groups of up to `group` answers per task, in task order, until `size` completions."""
    tasks = load_tasks(tasks_spec).tasks
    groups: dict[str, list[Completion]] = defaultdict(list)
    for attempt in AnswerCandidates(answers, target).attempts(tasks):
        found = groups[attempt.task.task_id]
        if len(found) < group:
            found.append(Completion(attempt.task, attempt.candidate.text, attempt.model or "?"))
    batch: list[Completion] = []
    for found in groups.values():
        batch += found[: size - len(batch)]
        if len(batch) >= size:
            break
    return batch


def _busy(pool: LanePool | None, started: float, ended: float) -> float:
    if pool is None or not pool.timeline or ended <= started:
        return float("nan")
    lanes = max(1, len(pool.devices))  # one entry per lane
    held = sum(
        min(job.finished, ended) - max(job.started, started)
        for job in pool.timeline
        if job.finished > started
    )
    return held / (lanes * (ended - started))


def replay(route: str, mode: str, batch: list[Completion], args: argparse.Namespace) -> Replay:
    """One batch through one trainer's reward call, under one timing mode, on a pool of its own."""
    settings = {"KV_REWARD_TIMING": mode, "KV_PLATFORM": args.platform, "KV_DEVICES": args.devices,
                "KV_LANES_PER_GPU": str(args.lanes_per_gpu), "KV_VERIFY_TIMEOUT": str(args.timeout)}  # fmt: skip
    for name, value in settings.items():
        if value:
            os.environ[name] = value
        else:
            os.environ.pop(name, None)
    REFERENCE_TIMES.clear()  # every mode starts cold, as a new service would
    verifiers.verdict_source_from_env.cache_clear()
    source = verifiers.verdict_source_from_env()
    pool = source.pool
    sources = [c.task.source for c in batch]
    names = [c.task.name for c in batch]
    started = time.monotonic()
    if route == "trl":
        reward = ExecutionReward(
            source.verify, args.target, concurrency=max(1, source.slots), group_size=args.group
        )
        verdicts_by_key: dict[tuple[str, str], Verdict] = {}
        original = reward.verify_all

        def keep_verdicts(tasks, texts, targets=None):  # noqa: ANN001, ANN202
            found = original(tasks, texts, targets)
            for task, text, verdict in zip(tasks, texts, found, strict=True):
                verdicts_by_key[(task.task_id, text)] = verdict
            return found

        reward.verify_all = keep_verdicts  # type: ignore[method-assign]
        reward(
            prompts=[""] * len(batch),
            completions=[c.text for c in batch],
            task_source=sources,
            task_name=names,
        )
        verdicts = [verdicts_by_key[(c.task.task_id, c.text)] for c in batch]
    else:
        verdicts = asyncio.run(_verl_batch(batch, args.target, pool))
    ended = time.monotonic()
    unique = len({(c.task.task_id, c.text) for c in batch})
    gpus = len(set(pool.devices)) if pool is not None else 1
    result = Replay(route, mode, ended - started, verdicts, unique, gpus, _busy(pool, started, ended))
    if pool is not None:
        pool.close()
    return result


async def _verl_batch(batch: list[Completion], target: str, pool: LanePool | None) -> list[Verdict]:
    """verl's reward loop: every sample's `compute_score_async` awaited together. The verdicts themselves are
    read back from the pool (the score dict carries only numbers), by the order the pool finished them in."""
    found: dict[tuple[str, str], Verdict] = {}
    assert pool is not None, "the verl route needs a local pool (no KV_REWARD_URL)"
    original = pool.averify

    async def keep(task, candidate):  # noqa: ANN001, ANN202
        verdict = await original(task, candidate)
        found[(task.task_id, candidate.text)] = verdict
        return verdict

    pool.averify = keep  # type: ignore[method-assign]
    await asyncio.gather(*(
        compute_score_async(f"kernelvault/{target}", c.text, c.task.source,
                            {"task_name": c.task.name, "target": target})
        for c in batch
    ))  # fmt: skip
    return [found[(c.task.task_id, c.text)] for c in batch]


def _speedup_agreement(first: Replay, other: Replay) -> str:
    differ = sum((a.failure_kind, a.correct) != (b.failure_kind, b.correct)
                 for a, b in zip(first.verdicts, other.verdicts, strict=True))  # fmt: skip
    ratios = [b.speedup / a.speedup for a, b in zip(first.verdicts, other.verdicts, strict=True)
              if a.correct and b.correct and a.speedup and b.speedup]  # fmt: skip
    if not ratios:
        return f"| {other.route} | {first.mode} → {other.mode} | {differ} | 0 | - | - | - |"
    off = [abs(r - 1) for r in ratios]
    within = sum(o <= 0.03 for o in off) / len(off)
    return (f"| {other.route} | {first.mode} → {other.mode} | {differ} | {len(ratios)} | {statistics.median(off):.1%} "
            f"| {max(off):.1%} | {within:.0%} |")  # fmt: skip


def report(results: list[Replay]) -> str:
    lines = ["| route | mode | completions | verified | seconds | per GPU-minute | lanes busy | reached timing | correct |",
             "|---|---|---|---|---|---|---|---|---|"]  # fmt: skip
    for r in results:
        timed = sum(bool(v.timings) for v in r.verdicts) / len(r.verdicts)
        correct = sum(bool(v.correct) for v in r.verdicts) / len(r.verdicts)
        rate = 60.0 * r.unique / r.seconds / r.gpus
        lines.append(f"| {r.route} | {r.mode} | {len(r.verdicts)} | {r.unique} | {r.seconds:.1f} | {rate:.1f} | "
                     f"{r.busy:.0%} | {timed:.0%} | {correct:.0%} |")  # fmt: skip
    lines += ["", "| route | modes | verdicts that differ | correct in both | median speedup difference | largest | "
              "within 3% |", "|---|---|---|---|---|---|---|"]  # fmt: skip
    for route in dict.fromkeys(r.route for r in results):
        runs = [r for r in results if r.route == route]
        lines += [_speedup_agreement(runs[0], other) for other in runs[1:]]
    return "\n".join(lines)


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument(
        "--answers", type=Path, required=True, help="an answers JSONL file or a folder of them"
    )
    parser.add_argument("--tasks", help="the task suite the answers answer (default: the bundled tasks)")
    parser.add_argument("--batch", type=int, default=512, help="completions per batch (default 512)")
    parser.add_argument("--group", type=int, default=10, help="answers per task, GRPO's group (default 10)")
    parser.add_argument("--target", default="triton")
    parser.add_argument("--platform", help="cpu, cuda or rocm (default: detect)")
    parser.add_argument("--devices", help="GPU ids, like 0,1 (default: every visible GPU)")
    parser.add_argument("--lanes-per-gpu", type=int, default=8)
    parser.add_argument("--timeout", type=float, default=60.0, help="wall-clock seconds per candidate")
    parser.add_argument(
        "--modes", default="full,rl", help="timing modes in order, each a run (default full,rl)"
    )
    parser.add_argument("--via", default="trl,verl", help="the trainers' routes (default trl,verl)")
    args = parser.parse_args()
    batch = build_batch(args.answers, args.tasks, args.batch, args.group, args.target)
    if not batch:
        print(f"no answer in {args.answers} matched a task", file=sys.stderr)
        return 2
    tasks = len({c.task.task_id for c in batch})
    print(f"batch: {len(batch)} completions of {tasks} tasks from {args.answers}", flush=True)
    results = []
    for route in args.via.split(","):
        for mode in args.modes.split(","):
            result = replay(route, mode, batch, args)
            print(f"{route} {mode}: {result.seconds:.1f} s, {result.unique} verified", flush=True)
            results.append(result)
    print(report(results))
    return 0


if __name__ == "__main__":
    sys.exit(main())

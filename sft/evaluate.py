"""Pass rate on held-out tasks, measured by the agents and the toolchain that build the corpus.

SFT is judged by verified kernels, not by loss: the model answers the held-out tasks through
`kernelvault.pipelines.agent_job.run_agent_job` (TritonKernelGen or HIPKernelGen: draft → verify → reflect, the same
prompts and turn budget as corpus generation), every answer goes through the sandboxed verifier, and every turn is written as
a corpus row under `OUTPUT_DIR/pass_rate/` (readable with `kernelvault stats`). The model is reached
through an OpenAI-compatible endpoint: one given in `eval_base_url` (vLLM, SGLang), or `kernelvault.sft.serve`'s
in-process server around the transformers model.

Reported per target: trajectories measured, solved (a correct kernel on any turn: pass@1 with the turn
budget), correct on the first turn, compiled on the first turn, mean trajectory return. A trajectory whose
endpoint failed (`provider_error`) is not a row; it is counted as unmeasured, never as a failure. An
unsolved trajectory whose kernel compiled but could not be run on this platform (HIP on a CPU) is counted
as unchecked beside the rate, since it might have been correct.
"""

from __future__ import annotations

import sys
from collections import defaultdict
from dataclasses import dataclass
from pathlib import Path

import pyarrow.parquet as pq

from kernelvault.contracts import Task
from kernelvault.sft.config import SFTRunConfig


@dataclass(frozen=True)
class PassRate:
    target: str
    tasks: int
    asked: int  # trajectories requested: tasks × samples
    measured: int  # trajectories with rows (the rest failed at the endpoint)
    solved: int  # a correct kernel on some turn
    first_turn_correct: int
    first_turn_compiled: int
    unchecked: int  # unsolved trajectories with a kernel this platform could not run (HIP on a CPU)
    mean_return: float
    rows_dir: Path

    @property
    def rate(self) -> float:
        return self.solved / self.measured if self.measured else 0.0

    def line(self) -> str:
        unmeasured = (
            f", {self.asked - self.measured} unmeasured (endpoint errors)"
            if self.asked > self.measured
            else ""
        )
        if self.unchecked:
            unmeasured += (
                f", {self.unchecked} not run on this platform (correctness unknown, not counted solved)"
            )
        return (f"pass rate {self.target}: {self.solved}/{self.measured} = {self.rate:.1%} over {self.tasks} held-out "
                f"task(s); first turn: {self.first_turn_correct} correct, {self.first_turn_compiled} compiled; "
                f"mean return {self.mean_return:.3f}{unmeasured}")  # fmt: skip

    def as_dict(self) -> dict[str, object]:
        return {"target": self.target, "tasks": self.tasks, "asked": self.asked, "measured": self.measured,
                "solved": self.solved, "pass_rate": self.rate, "first_turn_correct": self.first_turn_correct,
                "first_turn_compiled": self.first_turn_compiled, "unchecked": self.unchecked,
                "mean_return": self.mean_return,
                "rows": str(self.rows_dir)}  # fmt: skip


def summarise(shards: list[Path], target: str, tasks: int, asked: int, rows_dir: Path) -> PassRate:
    trajectories: dict[tuple[str, int], list[dict]] = defaultdict(list)
    for shard in shards:
        columns = ["task_id", "sample_index", "turn", "correct", "compiled", "trajectory_return"]
        for row in pq.read_table(shard, columns=columns).to_pylist():
            trajectories[(row["task_id"], row["sample_index"])].append(row)
    solved = first_correct = first_compiled = unchecked = 0
    returns = []
    for turns in trajectories.values():
        turns.sort(key=lambda row: row["turn"])
        solved_here = any(row["correct"] is True for row in turns)
        solved += solved_here
        first_correct += turns[0]["correct"] is True
        first_compiled += bool(turns[0]["compiled"])
        # A kernel that compiled but could not run here (HIP on a CPU) might have been correct.
        unchecked += not solved_here and any(row["correct"] is None for row in turns)
        returns.append(turns[0]["trajectory_return"] or 0.0)  # the same on every row of a trajectory
    mean_return = sum(returns) / len(returns) if returns else 0.0
    return PassRate(target, tasks, asked, len(trajectories), solved, first_correct, first_compiled, unchecked,
                    mean_return, rows_dir)  # fmt: skip


def measure_pass_rate(prompts: list[tuple[str, Task]], base_url: str, model_name: str, config: SFTRunConfig,
                      out_dir: Path) -> list[PassRate]:  # fmt: skip
    """Run the agents on each (target, task) against the endpoint; one PassRate per target."""
    from kernelvault.agents.client import EndpointConfig, SamplingSettings
    from kernelvault.pipelines.agent_job import AgentJobConfig, run_agent_job
    from kernelvault.toolchain.tasks import LoadedTasks
    from kernelvault.toolchain.verify import Verifier, VerifyConfig

    verifier = Verifier(VerifyConfig(platform=config.eval_platform, timeout_s=config.eval_timeout))
    job = AgentJobConfig(
        endpoint=EndpointConfig(base_url=base_url, model=model_name, attempts=3, backoff_initial_s=0.5),
        samples=config.eval_samples, max_turns=config.eval_turns, concurrency=4,
        # No seed: with one seed for every request, a task's samples would all be the same answer.
        sampling=SamplingSettings(config.eval_temperature, config.eval_top_p, config.eval_max_new_tokens),
    )  # fmt: skip
    results = []
    for target in sorted({target for target, _ in prompts}):
        tasks = [task for t, task in prompts if t == target][: config.eval_max_tasks]
        # A new run each time: the endpoint (a fresh port, a new checkpoint) is part of the run's identity.
        print(f"pass rate {target}: {len(tasks)} held-out task(s) × {config.eval_samples} sample(s), up to "
              f"{config.eval_turns} turns each, through the agents and the verifier", file=sys.stderr, flush=True)  # fmt: skip
        summary = run_agent_job(LoadedTasks(tasks=tasks), verifier, out_dir, target, job, new_run=True)
        results.append(summarise(summary.shards, target, len(tasks), len(tasks) * config.eval_samples,
                                 out_dir / "data" / target))  # fmt: skip
    return results

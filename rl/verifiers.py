"""Where the RL stage's verdicts come from: the toolchain in this process, or a reward service.

Both give `verify(task, candidate) -> Verdict` (the function the agents use) and the platform the verdicts
are obtained on (it picks the agents' prompts: cpu proves compilation for AMD, so it gets the AMD ones).
Processes started by a framework (verl's reward workers and agent loops) read the choice from the
environment: KV_REWARD_URL (+ KV_REWARD_TOKEN) for a service, else KV_PLATFORM, KV_VERIFY_TIMEOUT,
KV_DEVICES (GPU ids, default every visible one), KV_LANES_PER_GPU and KV_REWARD_TIMING (`rl`, the default: a
case's reference figure reused and fewer timed samples where its spread allows; `full`: the corpus's protocol;
`kernelvault.toolchain.verify.reward_verify_config`).

The local toolchain is a `LanePool` (`kernelvault.toolchain.lane_pool`): persistent lanes on every GPU this
process may use, one each by default, so a reward function's concurrent verifications spread over the node's
GPUs and reuse their workers instead of starting a process per completion. Lanes of one process share a
GPU's timing gate; two processes with their own pools on one GPU do not (a reward service, `rl serve`, is
the one pool a node's trainers share).
"""

from __future__ import annotations

import atexit
import os
from dataclasses import dataclass
from functools import cache
from pathlib import Path
from typing import TYPE_CHECKING

from kernelvault.rl.rewards import ExecutionReward, VerifyFunction

if TYPE_CHECKING:
    from kernelvault.toolchain.lane_pool import LanePool


@dataclass(frozen=True)
class VerdictSource:
    verify: VerifyFunction
    platform: str  # "cpu" | "cuda" | "rocm"
    description: str
    slots: int  # verifications worth keeping in flight (a local pool's `LanePool.slots`)
    pool: LanePool | None = None  # the local lane pool (None: a reward service's)


def verdict_source(reward_url: str | None = None, token: str | None = None, platform: str | None = None,
                   timeout_s: float = 60.0, devices: str | None = None, lanes_per_gpu: int = 1) -> VerdictSource:  # fmt: skip
    """A reward service when `reward_url` is given, else a local lane pool (ValueError for a platform this
    machine cannot serve)."""
    if reward_url:
        from kernelvault.rl.reward_service import TOKEN_ENV, RemoteVerifier

        remote = RemoteVerifier(reward_url, token or os.environ.get(TOKEN_ENV))
        health = remote.health()
        # The service queues: at least 16 in flight keep its workers busy.
        return VerdictSource(remote.verify, str(health.get("platform", "cpu")),
                             f"reward service {reward_url} ({health.get('device')})",
                             max(16, int(health.get("workers", 0) or 0)))  # fmt: skip
    from kernelvault.toolchain.lane_pool import LanePool
    from kernelvault.toolchain.verify import Verifier, require_jail_for_model_output, reward_verify_config

    verifier = Verifier(reward_verify_config(platform, timeout_s, os.environ.get("KV_REWARD_TIMING", "rl")))
    require_jail_for_model_output(
        verifier
    )  # GRPO's completions are model output (KV_ALLOW_UNJAILED=1 opts in)
    pool = LanePool.for_verifier(verifier, devices, lanes_per_gpu)
    atexit.register(pool.close)
    return VerdictSource(
        pool.verify, verifier.choice.platform,
        f"local toolchain ({verifier.choice.device}, lanes on {','.join(pool.devices)})", pool.slots, pool,
    )  # fmt: skip


@cache
def verdict_source_from_env() -> VerdictSource:
    return verdict_source(
        reward_url=os.environ.get("KV_REWARD_URL"),
        platform=os.environ.get("KV_PLATFORM"),
        timeout_s=float(os.environ.get("KV_VERIFY_TIMEOUT", "60")),
        devices=os.environ.get("KV_DEVICES") or None,
        lanes_per_gpu=int(os.environ.get("KV_LANES_PER_GPU", "1")),
    )


def execution_reward(
    dataset: str,
    revision: str | None = None,
    *,
    reward_url: str | None = None,
    platform: str | None = None,
    timeout_s: float = 60.0,
    devices: str | None = None,
    lanes_per_gpu: int = 1,
    group_size: int | None = None,
    log_dir: Path | None = None,
    model_name: str = "policy",
) -> ExecutionReward:
    """The reward for a dataset version's `rl` prompts, in one line, with the prompts in `.dataset`:

        reward = execution_reward("hub:ORG/NAME@v1.0.0")   # or a release folder
        GRPOTrainer(model, reward_funcs=reward, train_dataset=reward.dataset["train"], args=...)

    The version is named as in every command (the local hub by default, `KV_HUB=hf` for the Hugging Face
    Hub). Verdicts come from a lane pool on this machine (`platform`, `devices`, `lanes_per_gpu`), or from
    a reward service at `reward_url` (`kernelvault rl serve`), as in `kernelvault rl`. `group_size` (GRPO's
    num_generations) turns on the per-group signal metrics. A one-line ValueError when the dataset or the
    platform cannot be had."""
    from kernelvault.rl.data import load_rl_dataset

    splits = load_rl_dataset(dataset, revision)
    source = verdict_source(reward_url, platform=platform, timeout_s=timeout_s, devices=devices,
                            lanes_per_gpu=lanes_per_gpu)  # fmt: skip
    reward = ExecutionReward(source.verify, concurrency=max(1, source.slots), group_size=group_size, log_dir=log_dir,
                 model_name=model_name)  # fmt: skip
    reward.dataset, reward.platform = splits, source.platform
    return reward

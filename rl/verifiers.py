"""Where the RL stage's verdicts come from: the toolchain in this process, or a reward service.

Both give `verify(task, candidate) -> Verdict` (the function the agents use) and the platform the verdicts
are obtained on (it picks the agents' prompts: cpu proves compilation for AMD, so it gets the AMD ones).
Processes started by a framework (verl's reward workers and agent loops) read the choice from the
environment: KV_REWARD_URL (+ KV_REWARD_TOKEN) for a service, else KV_PLATFORM and KV_VERIFY_TIMEOUT.
"""

from __future__ import annotations

import os
from dataclasses import dataclass
from functools import cache

from kernelvault.rl.rewards import VerifyFunction


@dataclass(frozen=True)
class VerdictSource:
    verify: VerifyFunction
    platform: str  # "cpu" | "cuda" | "rocm"
    description: str


def verdict_source(reward_url: str | None = None, token: str | None = None, platform: str | None = None,
                   timeout_s: float = 60.0) -> VerdictSource:  # fmt: skip
    """A reward service when `reward_url` is given, else a local `Verifier` (which raises ValueError for a
    platform this machine cannot serve)."""
    if reward_url:
        from kernelvault.rl.reward_service import TOKEN_ENV, RemoteVerifier

        remote = RemoteVerifier(reward_url, token or os.environ.get(TOKEN_ENV))
        health = remote.health()
        return VerdictSource(remote.verify, str(health.get("platform", "cpu")),
                             f"reward service {reward_url} ({health.get('device')})")  # fmt: skip
    from kernelvault.toolchain.verify import Verifier, VerifyConfig, require_jail_for_model_output

    verifier = Verifier(VerifyConfig(platform=platform, timeout_s=timeout_s))
    require_jail_for_model_output(
        verifier
    )  # GRPO's completions are model output (KV_ALLOW_UNJAILED=1 opts in)
    return VerdictSource(
        verifier.verify, verifier.choice.platform, f"local toolchain ({verifier.choice.device})"
    )


@cache
def verdict_source_from_env() -> VerdictSource:
    return verdict_source(
        reward_url=os.environ.get("KV_REWARD_URL"),
        platform=os.environ.get("KV_PLATFORM"),
        timeout_s=float(os.environ.get("KV_VERIFY_TIMEOUT", "60")),
    )

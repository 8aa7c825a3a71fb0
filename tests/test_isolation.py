"""Candidate code runs in a worker that cannot see the pipeline's credentials."""

from __future__ import annotations

from pathlib import Path

import pytest

from kernelvault.contracts import Candidate
from kernelvault.toolchain.lane_pool import verify_once
from kernelvault.toolchain.tasks import load_task_file
from kernelvault.toolchain.verify import Verifier, VerifyConfig

ROOT = Path(__file__).resolve().parents[1]

SNOOPING_RELU = """
import os
import torch
import triton
import triton.language as tl


@triton.jit
def relu_kernel(x_ptr, out_ptr, n, BLOCK: tl.constexpr):
    offsets = tl.program_id(0) * BLOCK + tl.arange(0, BLOCK)
    mask = offsets < n
    tl.store(out_ptr + offsets, tl.maximum(tl.load(x_ptr + offsets, mask=mask), 0.0), mask=mask)


class ModelNew(torch.nn.Module):
    def forward(self, x):
        leaked = [k for k in ("OPENAI_API_KEY", "HF_TOKEN", "AWS_SECRET_ACCESS_KEY") if k in os.environ]
        if leaked:
            raise RuntimeError(f"credentials visible: {leaked}")
        x = x.contiguous()
        out = torch.empty_like(x)
        relu_kernel[(triton.cdiv(x.numel(), 1024),)](x, out, x.numel(), BLOCK=1024)
        return out
"""


@pytest.mark.fresh_workers  # workers started after the credentials are set: a session's lanes predate them
def test_worker_environment_has_no_credentials(monkeypatch: pytest.MonkeyPatch) -> None:
    for key in ("OPENAI_API_KEY", "HF_TOKEN", "AWS_SECRET_ACCESS_KEY"):
        monkeypatch.setenv(key, "secret-value")
    task = load_task_file(ROOT / "tasks" / "relu.py")
    verdict = verify_once(
        Verifier(VerifyConfig(platform="cpu")), task, Candidate(task.task_id, "triton", SNOOPING_RELU, "test")
    )
    assert verdict.failure_message is None
    assert verdict.correct is True


def test_model_output_is_refused_without_a_jail_unless_the_user_opts_in(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """Where the machine runs candidates as plain processes, the main job with a model refuses to start, in
    one line, before any request; --allow-unjailed (KV_ALLOW_UNJAILED=1) opts in, and every row then says so."""
    from kernelvault.cli import main
    from kernelvault.toolchain.verify import UnjailedModelOutput, Verifier, require_jail_for_model_output

    monkeypatch.setenv("KV_ISOLATION", "process")  # this machine without a jail, as far as the verifier knows
    monkeypatch.delenv("KV_ALLOW_UNJAILED", raising=False)
    verifier = Verifier(VerifyConfig(platform="cpu"))
    assert verifier.isolation.level == "process" and verifier.environment.isolation == "process"
    with pytest.raises(UnjailedModelOutput, match="without an OS jail"):
        require_jail_for_model_output(verifier)
    require_jail_for_model_output(verifier, allow_unjailed=True)
    monkeypatch.setenv("KV_ALLOW_UNJAILED", "1")
    require_jail_for_model_output(verifier)
    monkeypatch.delenv("KV_ALLOW_UNJAILED")
    # nothing listens there: the refusal comes before any model request would
    code = main(
        [
            "corpus",
            "--target",
            "triton",
            "--base-url",
            "http://127.0.0.1:9/v1",
            "--model",
            "m",
            "--tasks",
            str(ROOT / "tasks" / "relu.py"),
            "--out",
            str(tmp_path / "out"),
            "--no-progress",
        ]
    )
    assert code == 2

"""On a GPU: a few GRPO steps of a small Qwen3 with the toolchain verifying on the device, step time split.

Run on the H200 with `pytest -m gpu tests/test_rl_gpu.py -s` (skipped elsewhere). It writes
rl-step-time.md to $KV_RESULTS_DIR (default /tmp/kv-results):
- the step time of `kernelvault rl --config rl/configs/small-h200.yaml` split into generation,
  verification and optimisation (a random model's answers do not parse, so verification is short);
- what verifying a real group costs on the device: a G = 8 group of bundled kernels (honest and broken)
  scored by the same reward function, with their rewards (timed, so the speed term is live).
"""

from __future__ import annotations

import argparse
import functools
import json
import os
import time
from pathlib import Path

import pytest

from kernelvault.toolchain.lane_pool import verify_once

torch = pytest.importorskip("torch")

pytestmark = [
    pytest.mark.gpu,
    pytest.mark.skipif(not torch.cuda.is_available(), reason="needs a CUDA or ROCm GPU"),
]

ROOT = Path(__file__).resolve().parents[1]
EXAMPLES = ROOT / "examples" / "triton"


def test_grpo_steps_with_verification_on_the_gpu(tmp_path: Path) -> None:
    from kernelvault.cli.rl import register as add_rl_parser
    from kernelvault.rl.rewards import ExecutionReward
    from kernelvault.rl.tiny_model import build_tiny_policy
    from kernelvault.toolchain.tasks import load_task_file
    from kernelvault.toolchain.verify import Verifier, VerifyConfig

    results = Path(os.environ.get("KV_RESULTS_DIR", "/tmp/kv-results"))
    results.mkdir(parents=True, exist_ok=True)
    model = build_tiny_policy(tmp_path / "small-qwen3", shape="small")
    out = tmp_path / "run"
    parser = argparse.ArgumentParser()
    add_rl_parser(parser.add_subparsers(dest="command", required=True))
    args = parser.parse_args(["rl", "--config", str(ROOT / "rl" / "configs" / "small-h200.yaml"), "--model", str(model),
                              "--output-dir", str(out), "--tasks", str(ROOT / "tasks"), "--save-steps", "3"])  # fmt: skip
    assert args.handler(args) == 0
    history = json.loads(sorted(out.glob("checkpoint-*/trainer_state.json"))[-1].read_text())["log_history"]
    steps = [entry for entry in history if "timing/step_s" in entry]

    verifier = Verifier(VerifyConfig(platform="cuda", timeout_s=120))
    names = ["relu", "relu", "silu", "softmax", "rms_norm", "matmul", "vector_add", "layer_norm"]
    broken = {1: "broken/compile_error__relu.py", 5: "broken/mismatch__matmul.py"}
    tasks = [load_task_file(ROOT / "tasks" / f"{name}.py") for name in names]
    texts = [(EXAMPLES / broken.get(i, f"{name}.py")).read_text() for i, name in enumerate(names)]
    reward = ExecutionReward(functools.partial(verify_once, verifier), concurrency=1)
    started = time.perf_counter()
    rewards = reward(
        prompts=[None] * 8, completions=texts, task_source=[t.source for t in tasks], task_name=names
    )
    group_seconds = time.perf_counter() - started

    lines = ["# GRPO step time on the GPU", "",
             f"- device: {verifier.choice.device} ({verifier.choice.arch}); torch {torch.__version__}",
             "- policy: random Qwen3 'small' (rl/tiny_model.py), config rl/configs/small-h200.yaml", "",
             "| step | step s | generation s | verification s | optimisation s | reward | frac_reward_zero_std |",
             "|---|---|---|---|---|---|---|"]  # fmt: skip
    for entry in steps:
        lines.append(f"| {entry.get('step')} | {entry['timing/step_s']:.2f} | {entry['timing/generation_s']:.2f} | "
                     f"{entry['timing/verification_s']:.2f} | {entry['timing/optimisation_s']:.2f} | "
                     f"{entry.get('reward', float('nan')):.3f} | {entry.get('frac_reward_zero_std', float('nan')):.2f} |")  # fmt: skip
    lines += ["", f"A G = 8 group of bundled kernels verified on the device through ExecutionReward (one at a time): "
              f"{group_seconds:.1f} s; rewards {[round(r, 3) for r in rewards]}"]  # fmt: skip
    (results / "rl-step-time.md").write_text("\n".join(lines) + "\n")
    print("\n".join(lines))
    assert steps, "no step logged its time split"
    assert all(entry["timing/generation_s"] > 0 for entry in steps)
    assert rewards[1] == 0.0 and rewards[5] == pytest.approx(0.4) and rewards[0] >= 1.4

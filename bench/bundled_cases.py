"""A bundled Triton example built on one of its task's performance cases, for the GPU timing benches
(`timing_fidelity.py`, `small_case_spread.py`), and where their tables go.

Bundled examples are our own code, so the benches import them directly; user candidates never are.
"""

from __future__ import annotations

import os
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import torch

from kernelvault.contracts import TaskCase
from kernelvault.toolchain.sandboxed.reference import TaskHarness
from kernelvault.toolchain.sandboxed.source_text import load_module

ROOT = Path(__file__).resolve().parents[1]
SEED = 17  # the weights' seed
INPUT_SETS = 4  # as many input sets as the verifier's timing rotates over (`VerifyConfig.input_sets`)
FIRST_INPUT_SEED = 100


@dataclass
class BundledCase:
    harness: TaskHarness  # the task on this case (its reference: `harness.reference(init, SEED)`)
    init: list[Any]
    example: torch.nn.Module  # the bundled example's ModelNew
    input_sets: list[list[Any]]


def bundled_case(
    name: str, case: TaskCase, device: torch.device, input_sets: int = INPUT_SETS
) -> BundledCase:
    """tasks/NAME.py and examples/triton/NAME.py, built on `case` with `input_sets` input sets (call it under
    torch.no_grad())."""
    harness = TaskHarness(load_module(ROOT / "tasks" / f"{name}.py", f"bench_task_{name}"), device)
    example = load_module(ROOT / "examples" / "triton" / f"{name}.py", f"bench_example_{name}")
    harness.apply(case.overrides)
    init = harness.init_inputs()
    model = harness.build(example.ModelNew, init, seed=SEED)
    return BundledCase(
        harness, init, model, [harness.inputs(FIRST_INPUT_SEED + n) for n in range(input_sets)]
    )


def publish(table: str, filename: str) -> None:
    """Print a bench's table, and write it to $KV_RESULTS_DIR/`filename` when that is set (bench/gpu_session.sh)."""
    print(table)
    results = os.environ.get("KV_RESULTS_DIR")
    if results:
        Path(results, filename).write_text(table)

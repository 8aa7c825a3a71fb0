"""What the interpreter's unasserted integer-overflow checks cost (`toolchain.sandboxed.interpreter`): every bundled
Triton example and optimisation baseline, on its task's largest correctness case, run under Triton's interpreter
with the checks (Triton's default) and without them (the workers' setting), alternated in one process. Prints a
markdown table: seconds each way, their ratio, and whether the outputs are bitwise equal.

    TRITON_INTERPRET=1 python bench/interpreter_checks.py [--only NAME ...]
"""

from __future__ import annotations

import argparse
import dataclasses
import math
import os
import statistics
import time
from pathlib import Path
from types import ModuleType
from typing import Any

import torch

from kernelvault.toolchain.sandboxed.source_text import load_module

ROOT = Path(__file__).resolve().parents[1]


def _module(path: Path) -> ModuleType:
    return load_module(path, f"bench_{path.stem.replace('.', '_')}")


def _largest_case(task: ModuleType) -> dict[str, Any]:
    cases = task.KERNELVAULT.get("correctness_cases") or [{}]
    return max(cases, key=lambda case: math.prod(v for v in case.values() if isinstance(v, int)) or 1)


def _candidates(only: set[str]) -> list[tuple[str, Path, Path]]:
    found = []
    for path in sorted((ROOT / "examples" / "triton").glob("*.py")):
        found.append((path.stem, ROOT / "tasks" / f"{path.stem}.py", path))
    for path in sorted((ROOT / "tasks" / "optimise").glob("*.triton.py")):
        task = path.name.split("__")[0]
        found.append((path.name.removesuffix(".triton.py"), ROOT / "tasks" / f"{task}.py", path))
    return [item for item in found if not only or item[0] in only]


def _run(model: torch.nn.Module, inputs: list[Any]) -> tuple[float, Any]:
    started = time.perf_counter()
    with torch.no_grad():
        output = model(*inputs)
    return time.perf_counter() - started, output


def _equal(a: Any, b: Any) -> bool:
    if isinstance(a, torch.Tensor):
        return isinstance(b, torch.Tensor) and torch.equal(a, b)
    if isinstance(a, (list, tuple)):
        return len(a) == len(b) and all(_equal(x, y) for x, y in zip(a, b, strict=True))
    return bool(a == b)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--only", nargs="*", default=[])
    args = parser.parse_args()
    if os.environ.get("TRITON_INTERPRET") != "1":
        raise SystemExit("run with TRITON_INTERPRET=1 (the interpreter is what this measures)")
    import triton.runtime.interpreter as interpreter

    from kernelvault.toolchain.sandboxed.reference import TaskHarness

    builder = interpreter.interpreter_builder
    settings = {
        "checks": builder.options,
        "none": dataclasses.replace(builder.options, sanitize_overflow=False),
    }
    print(f"torch {torch.__version__}, triton {__import__('triton').__version__}, {os.cpu_count()} CPUs\n")
    print("| kernel | case | with checks (s) | without (s) | ratio | outputs equal |")
    print("|---|---|---|---|---|---|")
    ratios = []
    for name, task_path, kernel_path in _candidates(set(args.only)):
        task = _module(task_path)
        harness = TaskHarness(task, torch.device("cpu"))
        case = _largest_case(task)
        harness.apply(case)
        inputs = harness.inputs(seed=1)
        model = _module(kernel_path).ModelNew(*harness.init_inputs())
        _run(model, inputs)  # first call: imports, caches
        seconds: dict[str, float] = {}
        outputs: dict[str, Any] = {}
        for setting in ("checks", "none", "checks", "none"):  # alternated; the faster of two runs each
            builder.options = settings[setting]
            took, outputs[setting] = _run(model, inputs)
            seconds[setting] = min(seconds.get(setting, math.inf), took)
        builder.options = settings["checks"]
        ratio = seconds["checks"] / seconds["none"]
        ratios.append(ratio)
        print(f"| {name} | {case} | {seconds['checks']:.2f} | {seconds['none']:.2f} | {ratio:.2f} | "
              f"{_equal(outputs['checks'], outputs['none'])} |")  # fmt: skip
    print(f"\n{len(ratios)} kernels: ratio min {min(ratios):.2f}, median {statistics.median(ratios):.2f}, "
          f"max {max(ratios):.2f}")  # fmt: skip


if __name__ == "__main__":
    main()

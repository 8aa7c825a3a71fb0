"""The peer harness in the throughput bench (#24 item 4): KernelBench's own `eval_kernel_against_ref`, one fresh
process per candidate, on the same candidates as KernelVault's modes.

    python bench/verify_throughput.py --platform cuda --set mixed --modes fresh,persistent,kernelbench \\
        --kernelbench /path/to/KernelBench            # a checkout (ScalingIntelligence/KernelBench), not vendored
    # on the H200: carry a checkout's src/ (git archive HEAD src | tar x -C .ext/KernelBench), then
    KV_SKIP_TESTS=1 KV_BENCH=throughput KV_BENCH_MODES=fresh,persistent,kernelbench \\
        KV_BENCH_EXTRA="--kernelbench .ext/KernelBench" bash bench/gpu_session.sh

Each candidate KernelBench can take is evaluated the way its users run it: a new Python process imports
`kernelbench.eval` from the checkout's `src/` and calls `eval_kernel_against_ref(reference source, candidate
source, measure_performance=True, backend=...)` on GPU 0 with its own defaults for trials and timing. The
process prints the result (compiled, correctness, runtime and ref_runtime, which are milliseconds: its timing module
says "all timing are in ms", though the result's field comments say µs); nothing of KernelVault runs
inside it. What KernelBench cannot take is listed with the reason, never counted:
- HIP candidates: KernelVault's native HIP form has no KernelBench loader, and KernelBench's `hip` backend
  needs an AMD GPU;
- function and kernel tasks (no `class Model` reference): KernelBench evaluates module programs only.

KernelBench's package imports its LLM clients (litellm, openai, python-dotenv) when it is imported; `eval` does not use
them, so where they are not installed (the H200 image) empty stand-ins are put in their place. Nothing else of
KernelBench is changed. Its process runs in the same jail as KernelVault's workers (KernelBench's users run it
bare, but the set holds hostile candidates that would take the bench down with them); starting a jail costs
milliseconds against the seconds of a Python process that imports torch. Its verdicts are reported beside ours, not judged by our expectations: crediting a
reward hack is KernelBench's result, and the report names each one.
"""

from __future__ import annotations

import json
import shutil
import sys
import tempfile
import time
from pathlib import Path
from typing import Any

from kernelvault.pipelines.candidates import Attempt
from kernelvault.toolchain.extract import extract_code
from kernelvault.toolchain.jail import Isolation, gpu_device_nodes, probe_isolation
from kernelvault.toolchain.sandbox import SandboxLimits, folder_jail, run_sandboxed

RESULT_MARK = "KV-PEER-RESULT "
_DRIVER = r"""
import importlib, json, sys, types
checkout, reference_path, candidate_path, backend = sys.argv[1:5]
sys.path.insert(0, checkout + "/src")
stand_ins = (("litellm", {"completion": None}), ("dotenv", {"load_dotenv": lambda *a, **k: None}),
             ("openai", {"OpenAI": None}))
for name, attributes in stand_ins:
    try:
        importlib.import_module(name)
    except ImportError:  # an LLM client KernelBench imports at package import; eval never calls it
        sys.modules[name] = types.SimpleNamespace(**attributes)
from kernelbench.eval import eval_kernel_against_ref
result = eval_kernel_against_ref(open(reference_path).read(), open(candidate_path).read(), measure_performance=True,
                                 backend=backend, device=0)
dump = result.model_dump() if hasattr(result, "model_dump") else dict(vars(result))
print("KV-PEER-RESULT " + json.dumps({
    "compiled": bool(dump.get("compiled")), "correctness": bool(dump.get("correctness")),
    "runtime_ms": dump.get("runtime"), "ref_runtime_ms": dump.get("ref_runtime"),
    "metadata": {key: str(value)[:300] for key, value in (dump.get("metadata") or {}).items()},
}))
"""


def not_taken(attempt: Attempt) -> str | None:
    """Why KernelBench cannot evaluate this candidate, or None when it can."""
    if attempt.candidate.target == "hip":
        return (
            "HIP: KernelVault's native HIP form has no KernelBench loader (its hip backend needs an AMD GPU)"
        )
    if attempt.task.form != "module":
        return f"a {attempt.task.form} task: KernelBench evaluates `class Model` programs only"
    return None


def outcome_of(result: dict[str, Any]) -> str:
    if not result["compiled"]:
        return "compile_error"
    return "correct" if result["correctness"] else "mismatch"


def evaluate_one(
    checkout: Path, attempt: Attempt, timeout_s: float, isolation: Isolation | None
) -> dict[str, Any]:
    """One candidate in a fresh process: {"got", "seconds", "latency_ms", "message"}."""
    code = extract_code(attempt.candidate.text).code or attempt.candidate.text
    backend = "triton" if attempt.candidate.target == "triton" else "cuda"
    folder = Path(tempfile.mkdtemp(prefix="kv-peer-"))
    try:
        folder.chmod(0o755)
        (folder / "reference.py").write_text(attempt.task.source)
        (folder / "candidate.py").write_text(code)
        argv = [sys.executable, "-c", _DRIVER, str(checkout), "reference.py", "candidate.py", backend]
        jail = folder_jail(isolation, folder, read_only=(str(checkout),), devices=gpu_device_nodes())
        run = run_sandboxed(
            argv, folder, SandboxLimits(timeout_s, memory_bytes=None, cpu_threads=4), jail=jail
        )
    finally:
        shutil.rmtree(folder, ignore_errors=True)
    if run.timed_out:
        return {"got": "timeout", "seconds": run.seconds, "latency_ms": None,
                "message": f"no result within {timeout_s:.0f} s"}  # fmt: skip
    lines = [line for line in run.stdout_tail.splitlines() if line.startswith(RESULT_MARK)]
    if not lines:
        tail = (
            run.stderr_tail.strip().splitlines() or [f"exit {run.returncode or run.signal_name}, no result"]
        )[-1]
        return {"got": "runtime_error", "seconds": run.seconds, "latency_ms": None, "message": tail[:300]}
    result = json.loads(lines[-1][len(RESULT_MARK) :])
    # KernelBench's means are in ms (timing.get_timing_stats); -1 where it timed nothing. Read as µs, the H200
    # run of 2026-12-03 printed every KernelBench latency as 0.0000 ms.
    timed = (result["runtime_ms"] or -1) > 0 and (result["ref_runtime_ms"] or -1) > 0
    latency = (result["runtime_ms"], result["ref_runtime_ms"]) if timed else None
    return {"got": outcome_of(result), "seconds": run.seconds, "latency_ms": latency,
            "message": "; ".join(f"{k}: {v}" for k, v in result["metadata"].items())[:300]}  # fmt: skip


def run_kernelbench(checkout: Path, items: list[Attempt], timeout_s: float,
                    expected: Any) -> tuple[float, list[dict[str, Any]]]:  # fmt: skip
    """Every candidate KernelBench can take, one after another, each in a fresh process. `expected(attempt)`: the
    outcomes the candidate's file expects of KernelVault, kept beside KernelBench's verdict for the report."""
    if not (Path(checkout) / "src" / "kernelbench" / "eval.py").is_file():
        raise SystemExit(f"--kernelbench {checkout}: not a KernelBench checkout (no src/kernelbench/eval.py)")
    isolation = probe_isolation()
    started, rows = time.monotonic(), []
    for attempt in items:
        why_not = not_taken(attempt)
        if why_not is not None:
            rows.append({"origin": attempt.candidate.origin, "kind": "not_taken", "got": "not_taken",
                         "expected": expected(attempt), "as_expected": True, "peer": True, "message": why_not,
                         "latency_ms": None})  # fmt: skip
            continue
        found = evaluate_one(Path(checkout).resolve(), attempt, timeout_s, isolation)
        rows.append({"origin": attempt.candidate.origin, "kind": found["got"], "got": found["got"],
                     "expected": expected(attempt), "as_expected": True, "peer": True, "message": found["message"],
                     "latency_ms": found["latency_ms"], "peer_seconds": found["seconds"]})  # fmt: skip
    return time.monotonic() - started, rows


def peer_lines(rows: list[dict[str, Any]]) -> list[str]:
    """What KernelBench made of the candidates: taken or not (and why), and the credits our verdicts refuse."""
    taken = [row for row in rows if row["got"] != "not_taken"]
    lines = [f"KernelBench took {len(taken)} of {len(rows)} candidates; not taken:"]
    reasons: dict[str, int] = {}
    for row in rows:
        if row["got"] == "not_taken":
            reasons[row["message"]] = reasons.get(row["message"], 0) + 1
    lines += [f"- {count}: {reason}" for reason, count in sorted(reasons.items())] or ["- none"]
    credited = [row for row in taken if row["got"] == "correct" and "correct" not in row["expected"]]
    lines.append(f"KernelBench credits {len(credited)} candidate(s) that KernelVault is expected to refuse:")
    lines += [f"- {row['origin'].removeprefix('bench:')} (KernelVault: {' or '.join(row['expected'])})"
              for row in credited]  # fmt: skip
    return lines

"""Attack class × the layer that stops it: the adversarial suite with every layer, then behind the static wall.

    python bench/attack_layers.py --out bench/results/DATE-attack-layers.md \
        [--gpu-every-layer gpu_adversarial.md --gpu-behind-wall gpu_adversarial_behind_wall.md]

Runs the hostile files of tests/adversarial/hostile through one persistent lane on this machine's CPU
twice: with every layer on, and with the static wall off (`VerifyConfig(static_wall=False)`) for the files
the wall stops, which shows the layer behind it. With the H200 tables of tests/gpu/test_adversarial_on_gpu.py
(`KV_RESULTS_DIR`), their outcomes become columns of the same table. Each row names the layer that answered:

- static wall: `kernelvault.toolchain.static_wall` (the rule);
- tripwires: the dispatch monitor (`torch_compute`), the patch snapshot (`monkey_patch`), the process guards
  (`threads`, `subprocess`, `filesystem_write`), the harness's own checks (`tensor_subclass`,
  `modified_inputs`, `output_aliases_input`, `no_kernel_launched`, `fallback`);
- the parent: its judgement of the output files with seeds the candidate never sees (`mismatch`,
  `nondeterministic`, `cached_results`), its authentication of replies (`forged_result`);
- the jail: what a candidate finds where the harness used to be (nothing: a runtime or import error), its
  PID namespace (`subprocess` after the job), what it cannot write or reach (contained);
- the device record (GPU): `device_record`;
- nothing: `correct` behind the wall; the file's `# note:` says why that is all right (nothing left to
  find) or what remains (host computation a CPU cannot see).
"""

from __future__ import annotations

import argparse
import re
import sys
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))

from kernelvault.contracts import Candidate  # noqa: E402
from kernelvault.pipelines.candidates import expected_options, outcome, outcome_matches  # noqa: E402
from kernelvault.toolchain.tasks import load_task_file  # noqa: E402
from kernelvault.toolchain.verify import Verifier, VerifyConfig  # noqa: E402
from kernelvault.toolchain.worker_lane import WorkerLane  # noqa: E402

HOSTILE = sorted((ROOT / "tests" / "adversarial" / "hostile").glob("*.py"))
LAYERS = {
    "torch_compute": "dispatch monitor", "monkey_patch": "patch snapshot (identity)", "threads": "process guards",
    "filesystem_write": "process guards", "tensor_subclass": "harness check", "modified_inputs": "harness check",
    "output_aliases_input": "harness check", "no_kernel_launched": "harness check", "fallback": "static check",
    "nondeterministic": "parent's judge (a second run)", "cached_results": "parent's judge (new values)",
    "forged_result": "parent (authenticated replies)", "device_record": "device record (CUPTI)",
    "side_stream": "harness check",
}  # fmt: skip


def layer(got: str, message: str) -> str:
    kind, _, sub = got.partition(":")
    if kind == "static_reject":
        return f"static wall ({sub})" if sub else "static check"
    if kind == "integrity_reject" and sub == "subprocess":
        return "jail (PID namespace)" if "still running after its job" in message else "process guards"
    if kind == "integrity_reject":
        return LAYERS.get(sub, sub)
    if kind == "mismatch":
        return "parent's judge (no oracle in the process)"
    if kind == "runtime_error" and ("killed by" in message or "exited with code" in message):
        return "the worker's own process (it dies alone; the verdict is written)"
    if kind in ("compile_error", "runtime_error", "interface_error"):
        return f"jail: nothing to find ({kind})"
    if kind == "timeout":
        return "wall clock"
    return "nothing: the kernel it runs is honest (see the file's note)" if kind == "correct" else kind


def run(files: list[Path], static_wall: bool) -> dict[str, tuple[str, str]]:
    verifier = Verifier(VerifyConfig(platform="cpu", timeout_s=30, static_wall=static_wall))
    lane = WorkerLane(restart_every=50)
    found = {}
    try:
        for path in files:
            task = load_task_file(ROOT / "tasks" / f"{path.stem.split('__')[1]}.py")
            verdict = verifier.complete(
                verifier.prepare(task, Candidate(task.task_id, "triton", path.read_text(), str(path))), lane
            )
            found[path.name] = (
                outcome(verdict.failure_kind, verdict.failure_message),
                verdict.failure_message or "",
            )
    finally:
        lane.close()
    return found


def gpu_table(path: Path | None) -> dict[str, tuple[str, str]]:
    """candidate -> (outcome, message), from a table of tests/gpu/test_adversarial_on_gpu.py."""
    if path is None:
        return {}
    found = {}
    for line in path.read_text().splitlines():
        cells = [cell.strip() for cell in line.strip().strip("|").split(" | ")]
        if len(cells) >= 3 and cells[0].endswith(".py"):
            found[cells[0]] = (cells[2], cells[5] if len(cells) > 5 else "")
    return found


def exploit(path: Path) -> str:
    first = path.read_text().splitlines()[0]
    return re.sub(r"^# exploit:\s*", "", first)[:140]


def main() -> int:
    parser = argparse.ArgumentParser(
        description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter
    )
    parser.add_argument("--out", type=Path)
    parser.add_argument("--gpu-every-layer", type=Path)
    parser.add_argument("--gpu-behind-wall", type=Path)
    args = parser.parse_args()
    started = time.monotonic()
    every = run(HOSTILE, True)
    walled = [path for path in HOSTILE if any(o.startswith("static_reject") for o in expected_options(path))]
    behind = run(walled, False)
    gpu_every, gpu_behind = gpu_table(args.gpu_every_layer), gpu_table(args.gpu_behind_wall)
    lines = [
        "| hostile file | what it tries | every layer: CPU | every layer: H200 | behind the wall: CPU | "
        "behind the wall: H200 | the layer behind the wall: CPU | the layer behind the wall: H200 |",
        "|---|---|---|---|---|---|---|---|",
    ]
    credited, wrong = [], []
    for path in HOSTILE:
        got, message = every[path.name]
        if got == "correct":
            credited.append(path.name)
        if not outcome_matches(got, expected_options(path)):
            wrong.append(f"{path.name}: {got}")
        cpu_behind, why = behind.get(path.name, ("-", ""))
        if path.name in behind and not outcome_matches(cpu_behind, expected_options(path, behind_wall=True)):
            wrong.append(f"{path.name} behind the wall: {cpu_behind}")
        answer = layer(cpu_behind, why) if path.name in behind else layer(got, message)
        on_gpu = gpu_behind.get(path.name) if path.name in behind else gpu_every.get(path.name)
        gpu_answer = layer(*on_gpu) if on_gpu else "-"
        lines.append(f"| {path.name} | {exploit(path)} | {got} | {gpu_every.get(path.name, ('-',))[0]} | {cpu_behind} | "
                     f"{gpu_behind.get(path.name, ('-',))[0]} | {answer} | {gpu_answer} |")  # fmt: skip
    summary = (f"\n{len(HOSTILE)} hostile files, {len(walled)} of them stopped by the static wall; with every layer, "
               f"{len(credited)} credited as correct on CPU; {len(wrong)} outcome(s) not as the files expect "
               f"({time.monotonic() - started:.0f} s on this machine)")  # fmt: skip
    text = "\n".join(lines) + summary + "\n" + "".join(f"- {line}\n" for line in wrong)
    print(text)
    if args.out:
        args.out.write_text(text)
    return 1 if credited or wrong else 0


if __name__ == "__main__":
    sys.exit(main())

"""Verification throughput: a fresh worker process per candidate vs persistent workers, on one candidate set.

    python bench/verify_throughput.py --platform cpu --set small
    python bench/verify_throughput.py --platform cuda --set mixed --devices 0     # the H200 session
    python bench/verify_throughput.py --platform cuda --set mixed --modes persistent@0,persistent@0+1  # 1 → 2 GPUs
    python bench/verify_throughput.py --platform cuda --set mixed --modes persistent@0,persistent@0x3  # 3 lanes, 1 GPU
    python bench/verify_throughput.py ... --chunk 1/3 --save c1.json   # a third of the set, every mode
    python bench/verify_throughput.py --combine c1.json c2.json c3.json  # the tables over the whole set
    python bench/verify_throughput.py ... --modes fresh --chunk 1/2 --save f1.json  # then 2/2, and the lanes
    python bench/verify_throughput.py ... --modes persistent@0x8 --save lanes.json  # whole, in saves of their own
    python bench/verify_throughput.py --combine f1.json f2.json lanes.json

Modes, run one after the other in the same invocation on the same candidates:
- `fresh`: the way common harnesses do it: for each candidate, a new sandboxed process that imports
  torch, builds the reference and the candidate, checks and (on a GPU) times, one after another
  (`verify_once`: a pool of one in the fresh mode);
- `persistent`: the same verification through one `WorkerLane` per device (long-lived workers, reference
  outputs kept per task), fed by the executor (`run_corpus_job` with a compile pool);
- `persistent@DEVICES`: the same on the GPUs named (`0+1`: two lanes, GPUs 0 and 1), for scaling;
  `persistent@0x3`: three lanes on GPU 0 (`--lanes-per-gpu 3`: checks side by side, timings one at a time
  through the device's gate, `kernelvault.toolchain.device_gate`);
- `ray@DEVICES`: the same stages through the Ray executor (a local Ray instance; one verification actor per
  GPU named, compilation as Ray tasks): the 1 → 2 actor scaling of the Ray issue;
- `persistent+shared` (and `persistent@0x3+shared`, ...): the same with outputs judged in shared memory
  (`VerifyConfig.shared_outputs`; on a GPU the parent compares on the device, #24 item 1); `+files`: with
  outputs judged through files. A mode with neither takes the verifier's default: shared on a CUDA GPU, files
  on the CPU (before 2026-12-03 the default was files everywhere, and results of that time name no suffix);
- `...+percase`: one turn alone on the device per performance case (`VerifyConfig.turn_staged_mb` 0), the way
  lanes timed before a verification's cases shared one turn: the before of that change, in the same run;
- `kernelbench`: the peer harness, KernelBench's own `eval_kernel_against_ref` in a fresh process per candidate,
  from a checkout given with `--kernelbench` (bench/kernelbench_peer.py). With it in the modes, every mode runs
  on the candidates KernelBench can take (the others are listed with the reason), so the figures compare.
Candidate sets (`--set`): `small` (honest + broken + hostile Triton examples on a few tasks, CPU-friendly),
`mixed` (every Triton and HIP example and every adversarial case: the ≥60-candidate GPU set). Prints
candidates per minute per mode and per-stage latency (median, p90) from the verdicts' StageRecords, and
each timed candidate's latency in every mode (lanes that shared a GPU must not have changed it).

A run longer than one call allows (the device tool's 10 minutes) goes in parts: `--chunk I/K` verifies the
I-th of K consecutive parts of the set, `--save` keeps a run's results, and `--combine` sums the saves' seconds
and rows per mode and prints the tables over the whole set, provided every mode verified the same candidates
once. Sequential modes (fresh, kernelbench) can be chunked without changing their figures; lanes end each chunk
on its slowest candidate, so run them on the whole set in a save of their own.
"""

from __future__ import annotations

import argparse
import json
import re
import shutil
import statistics
import sys
import tempfile
import time
from collections import Counter
from collections.abc import Iterator, Sequence
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))

from bench.kernelbench_peer import not_taken, peer_lines, run_kernelbench  # noqa: E402
from kernelvault.contracts import FAILURE_KINDS, Candidate, Task  # noqa: E402
from kernelvault.pipelines.candidates import (  # noqa: E402
    Attempt,
    expected_options,
    expected_outcome,
    outcome,
    outcome_matches,
)
from kernelvault.pipelines.corpus_job import percentile  # noqa: E402
from kernelvault.toolchain.lane_pool import verify_once  # noqa: E402
from kernelvault.toolchain.tasks import LoadedTasks, load_task_file  # noqa: E402
from kernelvault.toolchain.verify import Verifier, VerifyConfig  # noqa: E402

SMALL_TASKS = ("relu", "vector_add", "silu", "leaky_relu")
BEHIND_WALL = False  # --static-wall off: the adversarial files' behind-wall expectations apply
STAGES = ("parse", "static", "compile", "check", "time")


# Unbounded host allocation: GPU workers have no address-space limit (CUDA maps huge ranges), so on a
# shared GPU machine it is bounded only by its timeout; the GPU suites leave it out for the same reason.
NOT_ON_GPU = ("unbounded_alloc",)


def candidate_files(which: str, on_gpu: bool = False) -> list[tuple[str, str, Path]]:
    """(target, task name, path) of the set's candidates."""
    found: list[tuple[str, str, Path]] = []
    targets = ("triton",) if which == "small" else ("triton", "hip")
    for target in targets:
        folder = ROOT / "examples" / target
        found += [(target, path.stem, path) for path in sorted(folder.glob("*.py"))]
        for path in sorted((folder / "broken").glob("*")):
            kind, _, task = path.stem.partition("__")
            if kind in FAILURE_KINDS and path.suffix in (".py", ".md"):
                found.append((target, task, path))
    adversarial = ROOT / "tests" / "adversarial"
    for sub, target in (("honest", "triton"), ("hostile", "triton"), ("hip_hostile", "hip")):
        if target not in targets:
            continue
        for path in sorted((adversarial / sub).glob("*.py")):
            # honest/<task>__<name>.py; hostile/<kind>__<task>__<name>.py
            parts = path.stem.split("__")
            task = parts[0] if sub == "honest" else parts[1] if len(parts) >= 3 else None
            if task is not None:
                found.append((target, task, path))
    if which == "small":
        found = [entry for entry in found if entry[1] in SMALL_TASKS]
    if on_gpu:
        found = [entry for entry in found if not any(marker in entry[2].name for marker in NOT_ON_GPU)]
    return found


def listed_files(listing: Path) -> list[tuple[str, str, Path]]:
    """(target, task name, path) from a list of candidate paths (one per line, relative to the project): the
    same candidates for two versions of the code, whichever files each version's set would hold."""
    found = []
    for line in listing.read_text().split():
        path = ROOT / line
        target = "hip" if "/hip" in line else "triton"
        parts = path.stem.split("__")
        if path.parent.name == "broken":
            task = parts[1]
        elif "adversarial" in line:
            task = parts[0] if path.parent.name == "honest" else parts[1]
        else:
            task = path.stem
        found.append((target, task, path))
    return found


def attempts(
    which: str, limit: int | None, on_gpu: bool = False, listing: Path | None = None
) -> list[Attempt]:
    tasks: dict[str, Task] = {}
    result: list[Attempt] = []
    files = listed_files(listing) if listing is not None else candidate_files(which, on_gpu)
    for target, name, path in files:
        task_file = ROOT / "tasks" / f"{name}.py"
        if not task_file.exists():
            continue
        task = tasks.setdefault(name, load_task_file(task_file))
        kind = path.stem.partition("__")[0] if path.parent.name == "broken" else None  # as ExampleCandidates
        candidate = Candidate(task.task_id, target, path.read_text(), f"bench:{path.relative_to(ROOT)}",  # type: ignore[arg-type]
                              expected_failure=kind)  # fmt: skip
        result.append(Attempt(task, candidate, sample_index=len(result)))
    if listing is None and limit and limit < len(result):  # evenly spaced: a shorter set keeps the mix
        result = [result[index * len(result) // limit] for index in range(limit)]
    return result


def chunk_of(items: list[Attempt], chunk: str | None) -> list[Attempt]:
    """`I/K`: the I-th (from 1) of K consecutive parts of items; None: all of them."""
    if not chunk:
        return items
    index, _, count = chunk.partition("/")
    i, k = int(index), int(count)
    if not 1 <= i <= k:
        raise SystemExit(f"--chunk I/K needs 1 <= I <= K, not {chunk!r}")
    return items[(i - 1) * len(items) // k : i * len(items) // k]


class FixedSource:
    description = "bench candidate set"

    def __init__(self, items: Sequence[Attempt]) -> None:
        self.items = items

    def attempts(self, tasks: Sequence[Task]) -> Iterator[Attempt]:
        yield from self.items

    def identity(self) -> dict[str, Any]:
        return {"kind": "bench", "count": len(self.items)}


def stage_table(rows: list[dict[str, Any]]) -> str:
    lines = ["| stage | median s | p90 s | n |", "|---|---|---|---|"]
    for stage in STAGES:
        values = [r[f"{stage}_s"] for r in rows if r.get(f"{stage}_s") is not None]
        if values:
            lines.append(
                f"| {stage} | {statistics.median(values):.3f} | {percentile(values, 0.9):.3f} | {len(values)} |"
            )
    return "\n".join(lines)


_CHECK_COSTS = re.compile(
    r"check protocol: \d+ request\(s\), ([\d.]+) MB of tensor files(?:, ([\d.]+) MB shared(?: \(\d+ values\))?)?, reading ([\d.]+) s, "
    r"comparing ([\d.]+) s, reference ([\d.]+) s(?:; waited ([\d.]+) s at the device's gate)?"
)


_REQUEST_KINDS = re.compile(r"seconds per request kind: ([^;\n]*)")
_CASE_PARTS = re.compile(r"seconds per case: ([^;\n]*)")
_STARTS = re.compile(r"workers starting ([\d.]+) s")


def _named_seconds(text: str, separator: str) -> dict[str, float]:
    """`name 1.23<separator>other 0.40` (`ProtocolCosts.summary`) as a dict."""
    pairs = (item.rsplit(" ", 1) for item in text.split(separator) if " " in item)
    return {name: float(seconds) for name, seconds in pairs}


def stage_seconds(stages: Sequence[Any]) -> dict[str, Any]:
    """Seconds per stage that ran, plus the check protocol's parent-measured costs from the check's log: its
    parts, the seconds of each kind of request (`requests`) and of each case of the plan (`parts`)."""
    row: dict[str, Any] = {f"{s['name']}_s": s["seconds"] for s in stages if s["outcome"] != "skipped"}
    for stage in stages:
        log = stage["log"] or ""
        found = _CHECK_COSTS.search(log) if stage["name"] == "check" else None
        if found:
            row |= {"judge_mb": float(found[1]), "judge_shared_mb": float(found[2] or 0.0),
                    "judge_transfer_s": float(found[3]), "judge_compare_s": float(found[4]),
                    "reference_s": float(found[5]), "gate_wait_s": float(found[6] or 0.0)}  # fmt: skip
            parts = _CASE_PARTS.search(log)
            row["requests"] = request_kinds(log)
            row["parts"] = _named_seconds(parts.group(1), " | ") if parts else {}
            starts = _STARTS.search(log)
            row["worker_start_s"] = float(starts.group(1)) if starts else 0.0
    return row


def part_group(part: str) -> str:
    """A case part of the plan (`check c0:batch=1,dim=17`, `time p0:defaults`) by what it does: the
    correctness cases' checks, the performance cases' checks, their timing."""
    step, _, case = part.partition(" ")
    if step == "time":
        return "time (staging, turn, spot checks)"
    return "check, performance cases" if case.startswith("p") else "check, correctness cases"


def our_modes(results: Results) -> list[str]:
    """The modes KernelVault ran, in run order: not the peer harness, whose rows carry its own verdicts and no
    stages or latencies of ours."""
    return [mode for mode, (_, rows) in results.items() if not any(row.get("peer") for row in rows)]


def time_breakdown(results: Results) -> str:
    """Where each mode's time went: seconds in all per stage, per kind of request and per part of the plan
    (requests, parts and worker starts are inside the check and time stages, answers included, gate waits
    left out); a check whose worker timed out or died has no record of its parts, only its whole."""
    modes = our_modes(results)
    if not modes:
        return "only the peer harness ran: it records no stages"
    extra = ("gate_wait", "worker_start", "judge_transfer", "judge_compare")

    def totals(rows: list[dict[str, Any]]) -> dict[str, float]:
        found: dict[str, float] = {"unrecorded": 0.0}
        for row in rows:
            for stage in (*STAGES, *extra):
                found[stage] = found.get(stage, 0.0) + float(row.get(f"{stage}_s") or 0.0)
            if "requests" not in row:  # its worker timed out or died: no protocol record, its whole check
                found["unrecorded"] += float(row.get("check_s") or 0.0) + float(row.get("time_s") or 0.0)
            for kind, seconds in (row.get("requests") or {}).items():
                found[kind] = found.get(kind, 0.0) + seconds
            for part, seconds in (row.get("parts") or {}).items():
                found[part_group(part)] = found.get(part_group(part), 0.0) + seconds
        return found

    per_mode = {mode: totals(results[mode][1]) for mode in modes}
    names = [*STAGES, *extra, "unrecorded"]
    names += sorted({name for found in per_mode.values() for name in found if "." in name})
    names += sorted(
        {name for found in per_mode.values() for name in found if name.startswith(("check,", "time ("))}
    )
    lines = ["| seconds in all | " + " | ".join(modes) + " |", "|---|" + "---|" * len(modes)]
    for name in names:
        label = {"gate_wait": "gate wait (lanes)", "worker_start": "waiting for workers to start",
                 "judge_transfer": "parent reading outputs", "judge_compare": "parent comparing",
                 "unrecorded": "checks that timed out or crashed (no record of their parts)"}.get(name, name)  # fmt: skip
        lines.append(
            f"| {label} | " + " | ".join(f"{per_mode[mode].get(name, 0.0):.1f}" for mode in modes) + " |"
        )
    return "\n".join(lines)


def judge_line(rows: list[dict[str, Any]], seconds: float) -> str:
    """The check protocol's share of the mode's wall time (what the parent spent reading and comparing)."""
    moved = sum(r.get("judge_mb", 0.0) for r in rows)
    shared = sum(r.get("judge_shared_mb", 0.0) for r in rows)
    transfer = sum(r.get("judge_transfer_s", 0.0) for r in rows)
    compare = sum(r.get("judge_compare_s", 0.0) for r in rows)
    reference = sum(r.get("reference_s", 0.0) for r in rows)
    waited = sum(r.get("gate_wait_s", 0.0) for r in rows)
    return (f"check protocol: {moved / 1e3:.2f} GB of tensor files, {shared / 1e3:.2f} GB judged in shared memory, "
            f"the parent reading (or mapping) {transfer:.1f} s and comparing "
            f"{compare:.1f} s ({100 * (transfer + compare) / seconds:.0f}% of the mode's {seconds:.0f} s); the "
            f"reference's worker {reference:.1f} s; lanes waited {waited:.1f} s in all at the device's gate")  # fmt: skip


def expected_outcomes(candidate: Candidate, platform: str, correct: bool | None) -> list[str]:
    """What a candidate of the set must come back as on `platform`: an adversarial file's `# expect:`
    alternatives, else the example's kind (its file name, or its `expect-<platform>:` line), else correct."""
    path = ROOT / candidate.origin.removeprefix("bench:")
    if "adversarial" in path.relative_to(ROOT).parts:  # honest files carry no expect line
        return ["correct"] if path.parent.name == "honest" else expected_options(path, platform, BEHIND_WALL)
    return [expected_outcome(candidate, platform, correct) or "correct"]


def verdict_row(attempt: Attempt, platform: str, failure_kind: str | None, failure_message: str | None,
                correct: bool | None, stages: Sequence[Any], timings: Sequence[Any] = ()) -> dict[str, Any]:  # fmt: skip
    got, wanted = (
        outcome(failure_kind, failure_message),
        expected_outcomes(attempt.candidate, platform, correct),
    )
    # a bare "integrity_reject" (a broken example's file name) accepts any sub-reason
    as_expected = outcome_matches(got, wanted)
    # Σ over performance cases of the medians (ms): one latency per timed candidate, to compare across modes
    latency = (
        (sum(t["candidate_ms"] for t in timings), sum(t["reference_ms"] for t in timings))
        if timings
        else None
    )
    return {"origin": attempt.candidate.origin, "kind": failure_kind or "success", "got": got,
            "expected": wanted, "as_expected": as_expected, "latency_ms": latency, **stage_seconds(stages)}  # fmt: skip


def run_fresh(verifier: Verifier, items: list[Attempt]) -> tuple[float, list[dict[str, Any]]]:
    started, rows = time.monotonic(), []
    for attempt in items:
        verdict = verify_once(verifier, attempt.task, attempt.candidate)
        stages = [
            {"name": s.name, "outcome": s.outcome, "seconds": s.seconds, "log": s.log} for s in verdict.stages
        ]
        rows.append(verdict_row(attempt, verifier.choice.platform, verdict.failure_kind, verdict.failure_message,
                                verdict.correct, stages, [vars(t) for t in verdict.timings]))  # fmt: skip
    return time.monotonic() - started, rows


def run_persistent(verifier: Verifier, items: list[Attempt], devices: str, lanes: int, compile_workers: int,
                   executor: str = "local", lanes_per_gpu: int = 1) -> tuple[float, list[dict[str, Any]]]:  # fmt: skip
    from kernelvault.corpus.shards import read_columns, run_shards
    from kernelvault.pipelines.corpus_job import run_corpus_job
    from kernelvault.pipelines.engine import EngineOptions

    tasks = LoadedTasks(tasks=list({a.task.task_id: a.task for a in items}.values()))
    with tempfile.TemporaryDirectory() as out:
        started = time.monotonic()
        summary = run_corpus_job(tasks, FixedSource(items), verifier, Path(out), "triton",
                                 EngineOptions(workers=lanes, devices=devices, compile_workers=compile_workers,
                                               executor=executor, lanes_per_gpu=lanes_per_gpu), progress=False)  # fmt: skip
        seconds = time.monotonic() - started
        table = read_columns(
            run_shards(Path(out) / "data" / "triton", summary.run_id),
            ["candidate_origin", "failure_kind", "failure_message", "correct", "stages", "timings"],
        )
        by_origin = {attempt.candidate.origin: attempt for attempt in items}
        rows = [verdict_row(by_origin[origin], verifier.choice.platform, *verdict)
                for origin, *verdict in zip(*table.to_pydict().values(), strict=True)]  # fmt: skip
    return seconds, rows


Results = dict[str, tuple[float, list[dict[str, Any]]]]  # mode -> (seconds, one row per candidate)


# mode suffixes, in any order: they change the verifier, not the lanes
OPTIONS = ("+shared", "+files", "+percase")


def mode_options(mode: str) -> tuple[str, set[str]]:
    """(the mode without its option suffixes, the options): `persistent@0x3+shared+percase`."""
    options: set[str] = set()
    while found := next((option for option in OPTIONS if mode.endswith(option)), None):
        options.add(found.lstrip("+"))
        mode = mode.removesuffix(found)
    return mode, options


def option_settings(mode: str) -> dict[str, Any]:
    """The `VerifyConfig` fields a mode's suffixes set: `+shared` judges outputs in shared memory (on the device,
    on a GPU), `+files` through files (neither: the verifier's default), `+percase` takes one turn alone on the
    device per performance case (`turn_staged_mb` 0)."""
    options = mode_options(mode)[1]
    if {"shared", "files"} <= options:
        raise ValueError(f"{mode}: +shared and +files together")
    shared = True if "shared" in options else False if "files" in options else None
    return {"shared_outputs": shared,
            "turn_staged_mb": 0.0 if "percase" in options else VerifyConfig.turn_staged_mb}  # fmt: skip


def request_kinds(log: str) -> dict[str, float]:
    """The check log's seconds per request kind (`ProtocolCosts.summary`) as a dict."""
    found = _REQUEST_KINDS.search(log)
    return _named_seconds(found.group(1), ", ") if found else {}


def run_mode(mode: str, verifier: Verifier, items: list[Attempt], devices: str, args: argparse.Namespace
             ) -> tuple[float, list[dict[str, Any]]]:  # fmt: skip
    """`fresh`, `persistent`, `persistent@0+1`, `persistent@0x3` (three lanes on GPU 0) or `ray@0+1`."""
    if mode == "fresh":
        return run_fresh(verifier, items)
    if mode == "kernelbench":
        if not args.kernelbench:
            raise SystemExit("the kernelbench mode needs --kernelbench PATH (a KernelBench checkout)")
        return run_kernelbench(args.kernelbench, items, args.timeout_s,
                               lambda attempt: expected_outcomes(attempt.candidate, verifier.choice.platform, None))  # fmt: skip
    executor, _, named = mode_options(mode)[0].partition("@")
    gpus, _, per_gpu = named.partition("x")
    return run_persistent(verifier, items, gpus.replace("+", ",") or devices, args.lanes, args.compile_workers,
                          "ray" if executor == "ray" else "local", int(per_gpu or 1))  # fmt: skip


def latency_table(results: Results) -> str:
    """Each timed candidate's latency (Σ of its cases' medians) per mode, and each mode's against the fresh
    process (else the first mode): lanes sharing a GPU through its gate must leave the figures where a process
    alone on the device put them (#24: within 2%). The peer harness is left out: it times other inputs (the
    tasks' `get_inputs`, not their performance cases), so its latencies do not compare."""
    modes = our_modes(results)
    if "fresh" in modes:  # the baseline first, wherever the run put it
        modes.remove("fresh")
        modes.insert(0, "fresh")
    by_mode = {mode: {r["origin"]: r["latency_ms"] for r in results[mode][1] if r.get("latency_ms")}
               for mode in modes}  # fmt: skip
    origins = sorted(set().union(*(set(found) for found in by_mode.values())))
    if not origins:
        return "no candidate was timed"
    lines = ["| candidate | " + " | ".join(f"{m} ms (cand / ref)" for m in modes) + " |",
             "|---|" + "---|" * len(modes)]  # fmt: skip
    ratios: dict[str, list[float]] = {mode: [] for mode in modes[1:]}
    for origin in origins:
        cells = []
        for mode in modes:
            found = by_mode[mode].get(origin)
            cells.append(f"{found[0]:.4f} / {found[1]:.4f}" if found else "-")
            first = by_mode[modes[0]].get(origin)
            if mode != modes[0] and found and first:
                ratios[mode].append(found[0] / first[0])
        lines.append(f"| {origin.removeprefix('bench:')} | " + " | ".join(cells) + " |")
    for mode, values in ratios.items():
        if values:
            off = sorted(abs(v - 1) for v in values)
            lines.append(f"\n{mode} against {modes[0]}, candidate latency: median |ratio − 1| "
                         f"{100 * statistics.median(off):.1f}%, largest {100 * off[-1]:.1f}% ({len(values)} candidates)")  # fmt: skip
    return "\n".join(lines)


def report(results: Results) -> int:
    """Print the tables; 1 when any verdict is not what its file expects (the figures would not count)."""
    print("\n| mode | candidates | seconds | candidates / min | speed-up |\n|---|---|---|---|---|")
    base = results.get("fresh", next(iter(results.values())))[0]
    for mode, (seconds, rows) in results.items():
        print(
            f"| {mode} | {len(rows)} | {seconds:.1f} | {60 * len(rows) / seconds:.1f} | {base / seconds:.2f}× |"
        )
    for mode, (seconds, rows) in results.items():
        if mode not in our_modes(results):  # the peer harness: its own verdicts, no stages of ours
            print(f"\n{mode} (the peer harness)\n" + "\n".join(peer_lines(rows)))
            continue
        print(f"\nper-stage latency, {mode}\n{stage_table(rows)}\n{judge_line(rows, seconds)}")
    print(f"\nwhere the time went, per mode\n{time_breakdown(results)}")
    print(f"\nlatency of the timed candidates per mode\n{latency_table(results)}")
    # A throughput figure counts only if the verdicts are right: every candidate as its file expects (ours; the
    # peer harness's verdicts are its own and listed above).
    wrong = [(mode, row) for mode, (_, rows) in results.items() for row in rows if not row["as_expected"]]
    count = sum(len(results[mode][1]) for mode in our_modes(results))
    print(f"\nverdicts as expected: {count - len(wrong)}/{count}")
    for mode, row in wrong:
        print(f"- {mode}: {row['origin']} came back {row['got']}, expected {' or '.join(row['expected'])}")
    return 1 if wrong else 0


def combine(paths: Sequence[str]) -> Results:
    """Saved runs as one: per mode, seconds summed and rows concatenated over the saves that ran it. A save may
    hold every mode on a chunk (`--chunk`), or some modes on the whole set, or one mode on a chunk: what counts
    is that, combined, every mode verified the same candidates, each once (else the figures would not compare).
    A sequential mode (fresh, the peer) sums to its whole-run time; lanes split over chunks end each chunk on its
    slowest candidate, so run them whole."""
    saves = [json.loads(Path(path).read_text()) for path in paths]
    combined: Results = {}
    for save, path in zip(saves, paths, strict=True):
        print(f"{path}: {', '.join(save['results'])} on {save['candidates']} candidates of {save['set']}"
              f"{', chunk ' + save['chunk'] if save.get('chunk') else ''}, {save['where']}")  # fmt: skip
        for mode, (seconds, rows) in save["results"].items():
            before_seconds, before_rows = combined.get(mode, (0.0, []))
            combined[mode] = (before_seconds + seconds, before_rows + rows)
    covered = {mode: Counter(row["origin"] for row in rows) for mode, (_, rows) in combined.items()}
    for mode, origins in covered.items():
        twice = sorted(origin for origin, times in origins.items() if times > 1)
        if twice:
            raise SystemExit(
                f"{mode} verified {len(twice)} candidate(s) twice (e.g. {twice[0]}): overlapping saves"
            )
    first, *others = covered
    for mode in others:
        if covered[mode].keys() != covered[first].keys():
            raise SystemExit(f"{mode} verified {len(covered[mode])} candidates and {first} {len(covered[first])}, "
                             "not the same ones: the saves cannot be combined")  # fmt: skip
    return combined


def main() -> int:
    parser = argparse.ArgumentParser(
        description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter
    )
    parser.add_argument("--platform", default="cpu", choices=["cpu", "cuda", "rocm"])
    parser.add_argument("--set", default="small", choices=["small", "mixed"], dest="which")
    parser.add_argument("--limit", type=int, help="N candidates of the set, evenly spaced over it")
    parser.add_argument(
        "--chunk",
        help="I/K: only the I-th of K consecutive parts of the (limited) set, of what the peer takes with kernelbench",
    )
    parser.add_argument("--save", help="write this run's results as JSON, for --combine")
    parser.add_argument(
        "--combine",
        nargs="+",
        metavar="JSON",
        help="print the tables over saved runs (chunks, or modes run apart)",
    )
    parser.add_argument("--devices", default=None, help="`cpu` or GPU ids (default: cpu, or 0 on a GPU)")
    parser.add_argument("--lanes", type=int, default=1, help="interpreter lanes on cpu (default 1)")
    parser.add_argument("--compile-workers", type=int, default=1)
    parser.add_argument("--modes", default="fresh,persistent")
    parser.add_argument(
        "--candidates", type=Path, help="a list of candidate paths to verify instead of --set"
    )
    parser.add_argument("--list", type=Path, help="write the (limited) set's candidate paths here, and stop")
    parser.add_argument(
        "--static-wall", default="on", choices=["on", "off"], help="off: the layers behind it"
    )
    parser.add_argument(
        "--timeout-s", type=float, default=60.0, help="per candidate (the hanging ones wait it out)"
    )
    parser.add_argument("--kernelbench", type=Path, help="a KernelBench checkout, for the kernelbench mode")
    args = parser.parse_args()
    if args.combine:
        return report(combine(args.combine))
    global BEHIND_WALL
    BEHIND_WALL = args.static_wall == "off"
    caches = Path(tempfile.mkdtemp(prefix="kv-bench-caches-"))

    def fresh_verifier(mode: str) -> Verifier:
        # Each mode starts with an empty HIP build cache (and each worker with an empty Triton cache of its
        # own): a mode run after another must not find its kernels already compiled. Its suffixes set the rest
        # (`option_settings`).
        return Verifier(VerifyConfig(platform=args.platform, timeout_s=args.timeout_s, static_wall=args.static_wall == "on",
                                     hip_cache=caches / re.sub(r"[@+x]", "-", mode) / "hip",
                                     **option_settings(mode)))  # fmt: skip

    if args.list:
        chosen = attempts(args.which, args.limit, on_gpu=args.platform != "cpu")
        args.list.write_text("".join(f"{a.candidate.origin.removeprefix('bench:')}\n" for a in chosen))
        print(f"{len(chosen)} candidate paths written to {args.list}")
        return 0
    verifier = fresh_verifier("probe")
    items = attempts(args.which, args.limit, on_gpu=args.platform != "cpu", listing=args.candidates)
    if "kernelbench" in args.modes.split(","):  # every mode on the candidates the peer harness can take
        reasons = [(attempt, not_taken(attempt)) for attempt in items]
        skipped = [(attempt, why) for attempt, why in reasons if why]
        items = [attempt for attempt, why in reasons if not why]
        print(f"not taken by KernelBench, left out of every mode: {len(skipped)}")
        for attempt, why in skipped:
            print(f"- {attempt.candidate.origin.removeprefix('bench:')}: {why}")
    items = chunk_of(items, args.chunk)  # after the peer's filter: chunks of equal size
    devices = args.devices or ("cpu" if args.platform == "cpu" else "0")
    where = f"{verifier.choice.platform} {verifier.choice.device}, devices {devices}, lanes {args.lanes}"
    chosen = f"listed in {args.candidates}" if args.candidates else args.which
    print(f"{len(items)} candidates ({chosen}{', chunk ' + args.chunk if args.chunk else ''}) on {where}; "
          "build caches empty at the start of each mode")  # fmt: skip
    results: Results = {}
    for mode in args.modes.split(","):
        verifier = fresh_verifier(mode)
        results[mode] = run_mode(mode, verifier, items, devices, args)
        seconds, rows = results[mode]  # as it finishes, so a run cut short still reports its first modes
        wrong = sum(not row["as_expected"] for row in rows)
        print(
            f"{mode}: {len(rows)} candidates in {seconds:.1f} s, {wrong} verdict(s) not as expected",
            flush=True,
        )
        if args.save:  # after every mode: a call cut short keeps the modes it finished
            Path(args.save).write_text(json.dumps({"set": args.which, "limit": args.limit, "chunk": args.chunk,
                                                   "candidates": len(items), "where": where, "results": results}))  # fmt: skip
    shutil.rmtree(caches, ignore_errors=True)
    return report(results)


if __name__ == "__main__":
    sys.exit(main())

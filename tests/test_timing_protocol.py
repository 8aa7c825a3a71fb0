"""The timing protocol that measures work, not a cache (`kernelvault.toolchain.sandboxed.timing`, `timed_values`).

Every timed call runs on values never used before in the run, every timed output is checksummed against the
reference's on the same values, and two kept outputs, drawn by the parent after the run, are judged in full. The
hostile files in `tests/adversarial/timing/` (`<kind>__<task>__<name>.py`, headed `# exploit:` and `# expect:`, as
`tests/adversarial/hostile/`) cache by address, content, version, by telling being timed from being checked,
on the device, do only the work that is left to check, or patch the events' clock; each honest twin
(`<task>__<name>.py`, `# honest:`) does what its hostile twin does short of returning a kept result, and must stay
correct. They all run here on the CPU
(`VerifyConfig.time_on_cpu`: the protocol through the interpreter, several calls per sample) through one
persistent lane; the same files run on a GPU in tests/gpu/test_timing_adversarial_on_gpu.py.
"""

from __future__ import annotations

import math
import re
from collections.abc import Callable, Iterator
from pathlib import Path

import pytest
import torch

from kernelvault.contracts import Candidate, Task, Verdict
from kernelvault.pipelines.candidates import expected_options, outcome, outcome_matches
from kernelvault.toolchain.sandboxed import timing
from kernelvault.toolchain.sandboxed.timed_values import (
    ChecksumWeights,
    FreshInputs,
    OutputChecks,
    Tolerance,
    aggregate_limit,
    compare_checksums,
)
from kernelvault.toolchain.tasks import load_task_file
from kernelvault.toolchain.verify import Verifier, VerifyConfig
from kernelvault.toolchain.worker_lane import WorkerLane

ROOT = Path(__file__).resolve().parents[1]
FOLDER = ROOT / "tests" / "adversarial" / "timing"
HOSTILE = sorted(path for path in FOLDER.glob("*.py") if path.stem.count("__") == 2)
HONEST = sorted(path for path in FOLDER.glob("*.py") if path.stem.count("__") == 1)
REPETITIONS = 12
# Performance cases the interpreter runs in milliseconds a call, so that 12 samples of several calls stay cheap.
SMALL_CASES = {
    "relu": '[{"batch": 4, "dim": 1024}, {"batch": 2, "dim": 2048}]',
    "softmax": '[{"batch": 4, "dim": 256}, {"batch": 3, "dim": 1000}]',
    "matmul": '[{"M": 48, "K": 40, "N": 33}]',
}


def _task_of(path: Path) -> str:
    return path.stem.split("__")[1 if path.stem.count("__") == 2 else 0]


def _header(path: Path) -> dict[str, str]:
    fields = {}
    for line in path.read_text().splitlines():
        if not line.startswith("# "):
            break
        key, _, value = line[2:].partition(":")
        fields[key.strip()] = value.strip()
    return fields


def _small_task(name: str, folder: Path) -> Task:
    source = (ROOT / "tasks" / f"{name}.py").read_text()
    source = re.sub(r'"performance_cases": \[.*?\],', f'"performance_cases": {SMALL_CASES[name]},', source,
                    flags=re.S)  # fmt: skip
    path = folder / f"{name}.py"
    path.write_text(source)
    return load_task_file(path)


def _config(**changes: object) -> VerifyConfig:
    # 0.1 ms a sample: several calls per sample on the tiny cases, so that the calls of a sample, their buffers and
    # their checks are exercised as on a GPU (`calls_for`); a generous limit for a loaded 2-core CI machine
    return VerifyConfig(platform="cpu", time_on_cpu=True, repetitions=REPETITIONS, warmup=2, input_sets=2,
                        sample_ms=0.1, timeout_s=180, **changes)  # type: ignore[arg-type]  # fmt: skip


@pytest.fixture(scope="module")
def tasks(tmp_path_factory: pytest.TempPathFactory) -> dict[str, Task]:
    folder = tmp_path_factory.mktemp("timing-tasks")
    return {name: _small_task(name, folder) for name in SMALL_CASES}


@pytest.fixture(scope="module")
def lane() -> Iterator[WorkerLane]:
    # One lane for the module: a worker costs seconds to start, and every hostile file retires its candidate's
    # worker (an integrity reject); the spare is started while the next check runs.
    lane = WorkerLane(spare=True)
    yield lane
    lane.close()


@pytest.fixture(scope="module")
def verdicts(tasks: dict[str, Task], lane: WorkerLane) -> dict[str, Verdict]:
    """Every file of the folder verified once with every layer on (and those the wall stops, once behind it)."""
    verifier, behind = Verifier(_config()), Verifier(_config(static_wall=False))
    found: dict[str, Verdict] = {}
    for path in HOSTILE + HONEST:
        task = tasks[_task_of(path)]
        candidate = Candidate(task.task_id, "triton", path.read_text(), f"timing:{path.name}")
        found[path.name] = verifier.complete(verifier.prepare(task, candidate), lane)
        if path in HOSTILE and any(o.startswith("static_reject") for o in expected_options(path)):
            found[f"behind-wall:{path.name}"] = behind.complete(behind.prepare(task, candidate), lane)
    return found


def _got(verdict: Verdict) -> str:
    return outcome(verdict.failure_kind, verdict.failure_message)


def test_the_folder_holds_hostile_files_of_every_class_and_their_honest_twins() -> None:
    assert len(HOSTILE) >= 6 and len(HONEST) >= 4
    for path in HOSTILE:
        header = _header(path)
        assert header.get("exploit") and header.get("expect"), path.name
        assert _task_of(path) in SMALL_CASES, path.name
    for path in HONEST:
        twin = re.search(r"the twin of (\S+?)[.,;\s]", _header(path).get("honest", "") + " ")
        assert twin is not None and (FOLDER / f"{twin.group(1)}.py") in HOSTILE, path.name


@pytest.mark.parametrize("path", HOSTILE, ids=lambda path: path.stem)
def test_a_hostile_timing_file_gets_no_credit_for_work_it_skipped(
    path: Path, verdicts: dict[str, Verdict]
) -> None:
    verdict = verdicts[path.name]
    wanted = expected_options(path)
    assert outcome_matches(_got(verdict), wanted), (path.name, verdict.failure_kind, verdict.failure_message)
    if wanted != ["correct"]:
        assert verdict.correct is not True and verdict.reward.total <= 0.4, path.name
    elif "expect-cpu" in _header(path):  # a route only a GPU's figures can close; the CPU gives no speed term
        assert verdict.reward.speed == 0 and expected_options(path, "cuda") != ["correct"], path.name
    else:  # credited only for work it did: timed one call per sample, every call checked
        assert verdict.timings and all(t.calls_per_sample == 1 for t in verdict.timings), verdict.timings
        assert all(t.checked_calls == t.repetitions == REPETITIONS for t in verdict.timings)
    behind = verdicts.get(f"behind-wall:{path.name}")
    if behind is not None:  # the wall stops it; behind the wall the timing protocol does
        wanted = expected_options(path, behind_wall=True)
        assert outcome_matches(_got(behind), wanted), (path.name, behind.failure_kind, behind.failure_message)
        # behind the wall a route only a GPU's figures close: no speed term on the CPU, a refusal on the GPU
        if wanted == ["correct"]:
            gpu = expected_options(path, "cuda", behind_wall=True)
            assert behind.reward.speed == 0 and "correct" not in gpu, path.name
        else:
            assert behind.correct is not True


def test_a_cached_result_is_named_by_the_timed_call_that_returned_it(verdicts: dict[str, Verdict]) -> None:
    messages = [
        v.failure_message or "" for v in verdicts.values() if _got(v) == "integrity_reject:cached_results"
    ]
    assert messages
    assert all(re.match(r"cached_results: timed call \d+/\d+", message) for message in messages), messages


@pytest.mark.parametrize("path", HONEST, ids=lambda path: path.stem)
def test_an_honest_twin_is_correct_and_every_timed_call_is_checked(
    path: Path, verdicts: dict[str, Verdict]
) -> None:
    verdict = verdicts[path.name]
    assert verdict.correct is True, (path.name, verdict.failure_kind, verdict.failure_message)
    assert verdict.reward.total == pytest.approx(1.4)  # the interpreter's wall clock is never a speedup
    for timing_row in verdict.timings:
        assert timing_row.inputs == "fresh"
        assert timing_row.checked_calls == timing_row.repetitions * timing_row.calls_per_sample


def test_without_checksums_the_launch_count_still_refuses_a_memo(
    tasks: dict[str, Task], lane: WorkerLane, verdicts: dict[str, Verdict]
) -> None:
    """The legacy switch (`timing_inputs="rotate"`, for fidelity benchmarks: fixed input sets, no checksums) once
    credited a memo by pointer; the timed calls' launch count (`own_work`), which needs no checksums, refuses it
    there too. With fresh values its cached results are named first."""
    path = FOLDER / "integrity_reject__relu__memo_by_pointer.py"
    task = tasks["relu"]
    verifier = Verifier(_config(timing_inputs="rotate"))
    rotating = verifier.complete(
        verifier.prepare(task, Candidate(task.task_id, "triton", path.read_text(), "rotate")), lane
    )
    assert _got(rotating) == "integrity_reject:unwatched_launches", rotating.failure_message
    assert _got(verdicts[path.name]) == "integrity_reject:cached_results"


def test_a_patched_timing_harness_retires_the_worker_before_the_next_candidate(
    tasks: dict[str, Task], lane: WorkerLane
) -> None:
    """Behind the wall, a candidate that patches the events' clock at import is timed with the harness's own bound
    objects, rejected when its worker finds the patch, and the worker is replaced: the next candidate is timed in a
    process where nothing is patched."""
    task = tasks["relu"]
    path = FOLDER / "integrity_reject__relu__patch_event_clock.py"
    behind_wall = Verifier(_config(static_wall=False))
    patched = behind_wall.complete(
        behind_wall.prepare(task, Candidate(task.task_id, "triton", path.read_text(), "patch")), lane
    )
    assert _got(patched) == "integrity_reject:monkey_patch", patched.failure_message
    assert "the timing harness was replaced (torch.cuda.Event.elapsed_time)" in (
        patched.failure_message or ""
    )
    worker = lane.workers["candidate"]
    assert worker.last_restart == "integrity_reject" and worker.pid is None  # replaced when its job ended
    example = (ROOT / "examples" / "triton" / "relu.py").read_text()
    verifier = Verifier(_config())
    honest = verifier.complete(
        verifier.prepare(task, Candidate(task.task_id, "triton", example, "after")), lane
    )
    assert honest.correct is True, honest.failure_message


def test_a_timing_protocol_that_is_not_known_is_refused() -> None:
    with pytest.raises(ValueError, match="timing_inputs"):
        Verifier(VerifyConfig(platform="cpu", timing_inputs="cached"))


# -- the refresh ---------------------------------------------------------------------------------------------


def _bases() -> list[list[object]]:
    torch.manual_seed(0)
    values = torch.randn(257)
    values[::7] = 0.0
    values[3], values[5] = float("inf"), float("nan")
    nested = {"half": torch.randn(4, 3).half(), "flag": torch.tensor([True, False])}
    return [[values, torch.arange(10), 3.5, nested]]


def test_the_same_seed_sample_and_call_give_bit_identical_inputs_on_both_sides() -> None:
    first = FreshInputs(_bases(), 3, 1234, torch.device("cpu"))
    second = FreshInputs(_bases(), 3, 1234, torch.device("cpu"))
    for sample in (0, 5):
        mine, theirs = first.sample_inputs(sample, 3), second.sample_inputs(sample, 3)
        for call in range(3):
            left, right = mine[call], theirs[call]
            assert torch.equal(left[0].nan_to_num(), right[0].nan_to_num())
            assert torch.equal(left[3]["half"], right[3]["half"])
    other = FreshInputs(_bases(), 1, 1235, torch.device("cpu")).sample_inputs(0, 1)[0]
    assert not torch.equal(other[0].nan_to_num(), first.sample_inputs(0, 1)[0][0].nan_to_num())


def test_every_sample_and_call_sees_new_values_never_compounded() -> None:
    fresh = FreshInputs(_bases(), 2, 99, torch.device("cpu"))
    seen = []
    for sample in range(3):
        calls = fresh.sample_inputs(sample, 2)
        seen += [call[0].clone() for call in calls]
        assert calls[0][0].data_ptr() != calls[1][0].data_ptr()  # a sample's calls use buffers of their own
    finite = torch.isfinite(seen[0]) & (seen[0] != 0)
    for index, first in enumerate(seen):
        for second in seen[index + 1 :]:
            assert not torch.equal(first[finite], second[finite])
    again = fresh.sample_inputs(1, 2)[0][0]  # from the pristine base, not from the last values
    assert torch.equal(again.nan_to_num(), seen[2].nan_to_num())


def test_a_refresh_keeps_signs_zeros_non_finite_values_and_integers() -> None:
    bases = _bases()
    base = bases[0][0]
    fresh = FreshInputs(bases, 1, 7, torch.device("cpu"))
    working = fresh.sample_inputs(0, 1)[0]
    working[1].add_(5)  # a candidate that writes into its integer input does not change the next call's
    working = fresh.sample_inputs(1, 1)[0]
    values = working[0]
    assert torch.equal(torch.sign(values).nan_to_num(), torch.sign(base).nan_to_num())
    assert torch.equal(values == 0, base == 0) and torch.equal(torch.isnan(values), torch.isnan(base))
    assert bool(torch.isinf(values[3])) and float(values[3]) > 0
    ratio = values[torch.isfinite(base) & (base != 0)] / base[torch.isfinite(base) & (base != 0)]
    assert float(ratio.min()) >= 0.5 and float(ratio.max()) <= 2.0 and float(ratio.std()) > 0.1
    assert torch.equal(working[1], torch.arange(10)) and working[2] == 3.5
    assert torch.equal(working[3]["flag"], bases[0][3]["flag"]) and working[3]["half"].dtype == torch.float16
    assert torch.equal(base.nan_to_num(), _bases()[0][0].nan_to_num())  # the base is never written


# -- the checksums -------------------------------------------------------------------------------------------


def _sums(output: object, tolerance: Tolerance | None, seed: int = 5) -> list[object]:
    """One sample of one call that returned `output`, checksummed as a worker does."""
    checks = OutputChecks(ChecksumWeights(seed, torch.device("cpu")), tolerance, strict=True)
    checks.queue(0, [output])
    checks.collect()
    return checks.records


def test_an_output_within_the_task_s_tolerance_passes_and_a_stale_one_fails() -> None:
    torch.manual_seed(1)
    atol, rtol = 1e-4, 1e-4
    reference = (torch.randn(100_000), torch.randn(3, 5000))
    expected = _sums(reference, Tolerance(atol, rtol))
    for trial in range(20):  # honest: each element anywhere within its own tolerance, any sign
        honest = tuple(r + (torch.rand_like(r) * 2 - 1) * (atol + rtol * r.abs()) for r in reference)
        assert compare_checksums(_sums(honest, None), expected) == (None, 1), trial
    stale = (torch.randn(100_000), torch.randn(3, 5000))  # another call's result: right shape, wrong values
    problem, _ = compare_checksums(_sums(stale, None), expected)
    assert problem is not None and problem.startswith("timed call 0/0: output 0: checksum"), problem
    almost = (reference[0].clone(), reference[1].clone())
    almost[1][2, 17] += 0.5  # one element of 115 000 off by far more than its tolerance
    assert compare_checksums(_sums(almost, None), expected)[0] is not None


def test_non_finite_values_are_compared_by_position_and_integers_exactly() -> None:
    values = torch.randn(1000)
    values[10], values[20], values[30] = float("nan"), float("inf"), -float("inf")
    expected = _sums((values, torch.arange(50)), Tolerance(None, None))
    assert compare_checksums(_sums((values.clone(), torch.arange(50)), None), expected) == (None, 1)
    moved = values.clone()
    moved[10], moved[11] = moved[11], float("nan")
    problem, _ = compare_checksums(_sums((moved, torch.arange(50)), None), expected)
    assert problem == "timed call 0/0: output 0: NaN/Inf at other positions than the reference's"
    off_by_one = torch.arange(50)
    off_by_one[7] += 1
    problem, _ = compare_checksums(_sums((values, off_by_one), None), expected)
    assert problem is not None and "an exact output" in problem


def _run_sums(outputs: list[list[torch.Tensor]], tolerance: Tolerance | None) -> list[object]:
    """A run of samples (each a list of its calls' outputs), checksummed as a worker does."""
    checks = OutputChecks(ChecksumWeights(11, torch.device("cpu")), tolerance, strict=True)
    for sample, calls in enumerate(outputs):
        checks.queue(sample, calls)
        checks.collect()
    return checks.records


def test_outputs_a_few_tolerances_off_pass_each_call_but_not_the_run() -> None:
    """Outputs the size of their atol (a softmax over 32 000 values: about 3e-5 against 1e-5): another call's result
    is off by only a few tolerances, which one call's checksum lets through (its bound is 8 T); the run's sum of
    squared deviations does not."""
    atol, rtol = 1e-5, 1e-4
    torch.manual_seed(2)
    reference = [[torch.softmax(torch.randn(32_000) * 0.1, 0) for _ in range(25)] for _ in range(4)]
    bounds = [[atol + rtol * r.abs() for r in calls] for calls in reference]
    expected = _run_sums(reference, Tolerance(atol, rtol))

    def moved(scale: Callable[[torch.Tensor], torch.Tensor]) -> list[list[torch.Tensor]]:
        return [
            [r + scale(r) * t for r, t in zip(rs, ts, strict=True)]
            for rs, ts in zip(reference, bounds, strict=True)
        ]

    within = moved(lambda r: torch.rand_like(r) * 2 - 1)  # anywhere within tolerance
    assert compare_checksums(_run_sums(within, None), expected) == (None, 100)
    off = moved(lambda r: torch.randint_like(r, 0, 2) * 4 - 2)  # twice the tolerance, either way
    problem, _ = compare_checksums(_run_sums(off, None), expected)
    assert problem is not None and "the checksums of the run's 100 timed outputs differ" in problem, problem
    assert re.match(r"timed call \d+/\d+ output: ", problem)


def test_the_run_limit_holds_false_alarms_to_one_in_a_trillion() -> None:
    for terms in (1, 12, 100, 1200, 12_800):
        alpha = aggregate_limit(terms)
        assert alpha > 1 and math.exp(-terms / 2 * (alpha - 1 - math.log(alpha))) == pytest.approx(1e-12)
    assert aggregate_limit(12) > aggregate_limit(100) > aggregate_limit(1200)


def test_calls_that_return_one_buffer_are_timed_one_call_per_sample() -> None:
    buffer = torch.empty(64)

    def reuses(inputs: list[torch.Tensor]) -> torch.Tensor:
        return buffer.copy_(inputs[0].relu())

    stats = timing.time_staged(reuses, [[torch.randn(64)]], repetitions=5, warmup=1, device=torch.device("cpu"),
                               calls_per_sample=4, timing_seed=3, keep=timing.RandomKeep(), strict=True)  # fmt: skip
    assert stats.calls_per_sample == 1 and stats.checked_calls == 5 and stats.inputs == "fresh"
    assert 1 <= len(stats.outputs) <= timing.KEPT_SAMPLES


def test_kept_samples_are_drawn_within_the_memory_budget() -> None:
    stats = timing.time_staged(lambda inputs: inputs[0] * 2, [[torch.randn(1000)]], repetitions=40, warmup=0,
                               device=torch.device("cpu"), timing_seed=1,
                               keep=timing.RandomKeep(most=8, budget_bytes=3 * 4000))  # fmt: skip
    assert len(stats.outputs) == 3 and all(0 <= sample < 40 for sample in stats.outputs)
    many = [sorted(timing.time_staged(lambda inputs: inputs[0] + 1, [[torch.randn(8)]], repetitions=40, warmup=0,
                                      device=torch.device("cpu"), keep=timing.RandomKeep()).outputs)
            for _ in range(3)]  # fmt: skip
    assert all(len(kept) == timing.KEPT_SAMPLES for kept in many) and len({tuple(k) for k in many}) > 1


def test_a_replaced_harness_object_is_named(monkeypatch: pytest.MonkeyPatch) -> None:
    assert timing.harness_replaced() == []
    monkeypatch.setattr(torch.cuda.Event, "elapsed_time", lambda self, end: 1.0)
    monkeypatch.setattr(torch.cuda, "synchronize", lambda device=None: None)
    assert timing.harness_replaced() == ["torch.cuda.Event.elapsed_time", "torch.cuda.synchronize"]
    monkeypatch.undo()
    assert timing.harness_replaced() == []

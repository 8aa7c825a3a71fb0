"""The timing protocol's hostile files on a real GPU (marked `gpu`; bench/gpu_session.sh runs it on the H200).

The files of `tests/adversarial/timing/` (see tests/test_timing_protocol.py, which runs them on the CPU) are
verified on the bundled tasks' own performance cases with the verifier's defaults: device events, an L2 flush and
a spin before each sample, calls per sample chosen from the reference's pilot, fresh values for every timed call
and every timed output checksummed. Expectations are the files' `# expect-cuda:` / `# behind-wall-cuda:` lines
where they have one. A hostile file gets no speed term (nor correctness credit) unless its `# expect:` is
`correct`, which it may only be for work it did; an honest twin keeps its correctness and its speedup. The legacy
protocol (`timing_inputs="rotate"`, no checksums) runs beside it for one file: the launch count refuses its memo. The table
goes to $KV_RESULTS_DIR/gpu_timing_adversarial.md.
"""

from __future__ import annotations

import os
from collections.abc import Iterator
from pathlib import Path

import pytest

torch = pytest.importorskip("torch")
pytestmark = [pytest.mark.gpu, pytest.mark.skipif(not torch.cuda.is_available(), reason="needs a GPU")]

from kernelvault.contracts import Candidate, Verdict  # noqa: E402
from kernelvault.pipelines.candidates import expected_options, outcome, outcome_matches  # noqa: E402
from kernelvault.toolchain.tasks import load_task_file  # noqa: E402
from kernelvault.toolchain.verify import Verifier, VerifyConfig  # noqa: E402
from kernelvault.toolchain.worker_lane import WorkerLane  # noqa: E402

ROOT = Path(__file__).resolve().parents[2]
FOLDER = ROOT / "tests" / "adversarial" / "timing"
HOSTILE = sorted(path for path in FOLDER.glob("*.py") if path.stem.count("__") == 2)
HONEST = sorted(path for path in FOLDER.glob("*.py") if path.stem.count("__") == 1)


def _task_of(path: Path) -> str:
    return path.stem.split("__")[1 if path.stem.count("__") == 2 else 0]


def _stopped_by_the_wall(path: Path) -> bool:
    return any(option.startswith("static_reject") for option in expected_options(path, "cuda"))


def _got(verdict: Verdict) -> str:
    return outcome(verdict.failure_kind, verdict.failure_message)


def _verify(verifier: Verifier, path: Path, lane: WorkerLane) -> Verdict:
    task = load_task_file(ROOT / "tasks" / f"{_task_of(path)}.py")
    return verifier.complete(
        verifier.prepare(task, Candidate(task.task_id, "triton", path.read_text(), f"timing:{path.name}")),
        lane,
    )


@pytest.fixture(scope="module")
def lane() -> Iterator[WorkerLane]:
    lane = WorkerLane(device="0")
    yield lane
    lane.close()


@pytest.fixture(scope="module")
def verdicts(lane: WorkerLane) -> dict[str, Verdict]:
    every_layer, behind = (
        Verifier(VerifyConfig(timeout_s=120)),
        Verifier(VerifyConfig(timeout_s=120, static_wall=False)),
    )
    found: dict[str, Verdict] = {}
    for path in HOSTILE + HONEST:
        found[path.name] = _verify(every_layer, path, lane)
        if path in HOSTILE and _stopped_by_the_wall(path):
            found[f"behind-wall:{path.name}"] = _verify(behind, path, lane)
    _write_table(found)
    return found


def _write_table(found: dict[str, Verdict]) -> None:
    results = os.environ.get("KV_RESULTS_DIR")
    if not results:
        return
    lines = ["| candidate | got | reward | speedup | per case: calls per sample, checked calls, timed/own | message |",
             "|---|---|---|---|---|---|"]  # fmt: skip
    for name, verdict in found.items():
        cases = "; ".join(f"{t.calls_per_sample}, {t.checked_calls}, "
                          f"{t.candidate_ms / t.own_kernel_ms if t.own_kernel_ms else float('nan'):.2f}"
                          for t in verdict.timings)  # fmt: skip
        speedup = f"{verdict.speedup:.2f}" if verdict.speedup is not None else "-"
        message = (verdict.failure_message or "").replace("|", "/")[:160]
        lines.append(
            f"| {name} | {_got(verdict)} | {verdict.reward.total:.2f} | {speedup} | {cases} | {message} |"
        )
    Path(results, "gpu_timing_adversarial.md").write_text("\n".join(lines) + "\n")


@pytest.mark.parametrize("path", HOSTILE, ids=lambda path: path.stem)
def test_a_hostile_timing_file_gets_no_speed_for_work_it_skipped_on_the_device(
    path: Path, verdicts: dict[str, Verdict]
) -> None:
    verdict = verdicts[path.name]
    wanted = expected_options(path, "cuda")
    assert outcome_matches(_got(verdict), wanted), (path.name, verdict.failure_kind, verdict.failure_message)
    if wanted != ["correct"]:
        assert verdict.correct is not True and verdict.reward.speed == 0.0, path.name
    else:  # credited for the work it did: timed one call per sample, every call checked
        assert all(t.calls_per_sample == 1 and t.checked_calls == t.repetitions for t in verdict.timings)
    behind = verdicts.get(f"behind-wall:{path.name}")
    if behind is not None:
        wanted = expected_options(path, "cuda", behind_wall=True)
        assert outcome_matches(_got(behind), wanted), (path.name, behind.failure_kind, behind.failure_message)
        assert behind.correct is not True and behind.reward.speed == 0.0


@pytest.mark.parametrize("path", HONEST, ids=lambda path: path.stem)
def test_an_honest_twin_keeps_its_correctness_and_speedup_on_the_device(
    path: Path, verdicts: dict[str, Verdict]
) -> None:
    verdict = verdicts[path.name]
    assert verdict.correct is True, (path.name, verdict.failure_kind, verdict.failure_message)
    assert verdict.speedup is not None and verdict.speedup > 0
    for timing in verdict.timings:
        assert timing.inputs == "fresh"
        assert timing.checked_calls == timing.repetitions * timing.calls_per_sample


def test_the_next_candidate_after_a_patched_clock_is_timed_as_before_it(lane: WorkerLane) -> None:
    """Behind the wall, a candidate patches `torch.cuda.Event.elapsed_time` at import: rejected, its worker
    replaced, and the bundled ReLU timed after it keeps the speedup it had before it (not 100x more)."""
    relu = ROOT / "examples" / "triton" / "relu.py"
    every_layer, behind = (
        Verifier(VerifyConfig(timeout_s=120)),
        Verifier(VerifyConfig(timeout_s=120, static_wall=False)),
    )
    task = load_task_file(ROOT / "tasks" / "relu.py")
    before = every_layer.complete(
        every_layer.prepare(task, Candidate(task.task_id, "triton", relu.read_text(), "before")), lane
    )
    patched = _verify(behind, FOLDER / "integrity_reject__relu__patch_event_clock.py", lane)
    after = every_layer.complete(
        every_layer.prepare(task, Candidate(task.task_id, "triton", relu.read_text(), "after")), lane
    )
    assert _got(patched) == "integrity_reject:monkey_patch", patched.failure_message
    assert before.speedup is not None and after.speedup is not None
    assert 0.8 < after.speedup / before.speedup < 1.25, (before.speedup, after.speedup)


def test_without_checksums_the_launch_count_still_refuses_a_memo(
    lane: WorkerLane, verdicts: dict[str, Verdict]
) -> None:
    """The legacy rotating protocol (no checksums) once credited this memo with a speedup; the timed calls'
    launch count refuses it there too."""
    path = FOLDER / "integrity_reject__relu__memo_by_pointer.py"
    rotating = _verify(Verifier(VerifyConfig(timeout_s=120, timing_inputs="rotate")), path, lane)
    assert _got(rotating) == "integrity_reject:unwatched_launches", rotating.failure_message
    assert _got(verdicts[path.name]) == "integrity_reject:cached_results"


def test_work_queued_when_the_model_is_dropped_does_not_slow_the_reference(lane: WorkerLane) -> None:
    """A candidate whose generator's `finally` queues seconds of device work when the worker drops its timed model
    gets the speedup of the same file with a `finally` that does nothing: the worker waits for the device before it
    replies, so the reference (timed next, on the same GPU) does not share the device with that work."""
    hog = ROOT / "tests" / "gpu" / "hostile" / "relu__reference_hog_at_teardown.py"
    inert = hog.read_text().replace("if state[0] > 60 and", "if False and")
    assert inert != hog.read_text()
    verifier = Verifier(VerifyConfig(timeout_s=120))
    task = load_task_file(ROOT / "tasks" / "relu.py")
    found = {
        name: verifier.complete(verifier.prepare(task, Candidate(task.task_id, "triton", text, name)), lane)
        for name, text in (("inert", inert), ("hog", hog.read_text()))
    }
    for name, verdict in found.items():
        assert verdict.correct is True and verdict.speedup is not None, (name, verdict.failure_message)
    assert found["hog"].speedup / found["inert"].speedup < 1.25, (
        found["hog"].speedup,
        found["inert"].speedup,
    )

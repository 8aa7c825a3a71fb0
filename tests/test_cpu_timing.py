"""The timing stage's protocol, run on CPU through the interpreter (`VerifyConfig.time_on_cpu`).

On a GPU every performance case is timed under the timing protocol (`kernelvault.toolchain.sandboxed.timing`): every
timed call runs on fresh values and its output is checksummed against the reference's, and two kept outputs, drawn
by the parent after the run, are judged in full (`kernelvault.toolchain.judge`); a success needs all of it. This runs that code path in CI, where no GPU is; the
interpreter's wall clock is no kernel measurement, so it never becomes a speedup.
"""

from __future__ import annotations

import re
from pathlib import Path

import pytest
import small_tasks

from kernelvault.contracts import Candidate
from kernelvault.toolchain.lane_pool import verify_once
from kernelvault.toolchain.verify import Verifier, VerifyConfig

ROOT = Path(__file__).resolve().parents[1]

# Honest for the first five calls of a shape (the checks call a shape at most four times: run, run again,
# new values, second seed), then replays the fifth call's result: a candidate that skips work while timed.
REPLAYS_WHILE_TIMED = (ROOT / "examples" / "triton" / "relu.py").read_text().replace(
    "    def forward(self, x: torch.Tensor) -> torch.Tensor:\n",
    "    def forward(self, x: torch.Tensor) -> torch.Tensor:\n"
    "        calls = _CALLS[tuple(x.shape)] = _CALLS.get(tuple(x.shape), 0) + 1\n"
    "        if calls > 5:\n"
    "            return _SEEN[tuple(x.shape)]\n"
    "        _SEEN[tuple(x.shape)] = y = self._forward(x)\n"
    "        return y\n\n"
    "    def _forward(self, x: torch.Tensor) -> torch.Tensor:\n",
) + "\n\n_SEEN: dict = {}\n_CALLS: dict = {}\n"


@pytest.fixture(scope="module")
def small_relu(tmp_path_factory: pytest.TempPathFactory):  # noqa: ANN201
    return small_tasks.small_relu(tmp_path_factory.mktemp("task"), small_tasks.TINY_CASES)


@pytest.fixture(scope="module")
def verifier(tmp_path_factory: pytest.TempPathFactory) -> Verifier:
    caches = tmp_path_factory.mktemp("caches")
    return Verifier(VerifyConfig(platform="cpu", time_on_cpu=True, repetitions=6, warmup=1, input_sets=2,
                                 hip_cache=caches / "hip"))  # fmt: skip


def test_an_honest_kernel_is_timed_per_case_and_spot_checked_but_gets_no_speedup(
    small_relu, verifier
) -> None:  # noqa: ANN001
    code = (ROOT / "examples" / "triton" / "relu.py").read_text()
    verdict = verify_once(verifier, small_relu, Candidate(small_relu.task_id, "triton", code, "test"))
    assert verdict.correct is True and verdict.failure_kind is None, verdict.failure_message
    assert [t.case for t in verdict.timings] == [case.name for case in small_relu.performance_cases]
    assert all(t.repetitions == 6 and t.candidate_ms > 0 and t.reference_ms > 0 for t in verdict.timings)
    # every timed call of every case was checked, on fresh inputs, and the rows say so
    assert all(t.inputs == "fresh" and t.checked_calls == 6 * t.calls_per_sample for t in verdict.timings)
    assert verdict.speedup is None and verdict.reward.total == pytest.approx(1.4)
    stages = {stage.name: stage for stage in verdict.stages}
    assert stages["time"].outcome == "passed" and "not a kernel measurement" in stages["time"].log
    # The time stage is its own span, as the parent saw it (its timed requests to the candidate's worker),
    # not folded into the check stage; the check's log says what the check protocol cost.
    assert stages["time"].seconds > 0 and stages["check"].seconds > 0
    costs = re.search(r"check protocol: (\d+) request\(s\), ([\d.]+) MB", stages["check"].log)
    assert costs is not None, stages["check"].log
    # per case: the reference's inputs, the candidate's timed request, the reference's timing
    assert int(costs.group(1)) >= 3 * len(small_relu.performance_cases)


def test_a_kernel_that_replays_results_while_timed_is_caught_by_the_checksums(small_relu, verifier) -> None:  # noqa: ANN001
    verdict = verify_once(
        verifier, small_relu, Candidate(small_relu.task_id, "triton", REPLAYS_WHILE_TIMED, "test")
    )
    assert verdict.failure_kind == "integrity_reject" and verdict.correct is False
    # its sixth call of the case's shape, the first timed one (the case's check ran it three times, its staging once,
    # the warm-up once): every timed call is checked, not only the spot-checked ones
    assert verdict.failure_message.startswith("cached_results: timed call 0/0: output: checksum")
    assert verdict.reward.total <= 0.4


# Keeps one output buffer per shape and writes every call's result into it: legitimate, but an earlier call's
# result is overwritten by the later ones of its sample, so it is timed one call per sample (every call checked).
REUSES_ITS_OUTPUT = (ROOT / "examples" / "triton" / "relu.py").read_text().replace(
    "    def forward(self, x: torch.Tensor) -> torch.Tensor:\n",
    "    def forward(self, x: torch.Tensor) -> torch.Tensor:\n"
    "        out = _BUFFERS.setdefault(tuple(x.shape), torch.empty_like(x))\n"
    "        out.copy_(self._forward(x))\n"
    "        return out\n\n"
    "    def _forward(self, x: torch.Tensor) -> torch.Tensor:\n",
) + "\n\n_BUFFERS: dict = {}\n"


def test_calls_per_sample_cover_the_sample_time_and_stop_at_the_cap() -> None:
    from kernelvault.toolchain.sandboxed.timing import MAX_CALLS_PER_SAMPLE, calls_for

    assert calls_for(0.5, 0.25) == 1 and calls_for(0.25, 0.25) == 1  # long enough alone
    assert calls_for(0.005, 0.25) == 50 and calls_for(0.006, 0.25) == 42  # 5 µs, 6 µs kernels
    assert calls_for(0.0001, 0.25) == MAX_CALLS_PER_SAMPLE
    assert calls_for(0.005, 0.0) == 1  # off


def test_a_samples_kept_output_is_its_last_call_on_the_input_set_the_parent_judges_it_against() -> None:
    import torch

    from kernelvault.toolchain.sandboxed.timing import time_on_device

    input_sets = [[torch.full((3,), float(k))] for k in range(4)]
    buffer = torch.empty(3)

    def run(inputs):  # noqa: ANN001, ANN202 - writes every call's result into one buffer
        return buffer.copy_(inputs[0] * 2)

    stats = time_on_device(run, input_sets, repetitions=6, warmup=1, device=torch.device("cpu"),
                           keep_outputs={0, 2, 5}, calls_per_sample=3)  # fmt: skip
    assert stats.calls_per_sample == 3 and stats.repetitions == 6
    # the parent judges sample i against input set i % 4, as with one call per sample
    assert {index: float(out[0]) for index, out in stats.outputs.items()} == {0: 0.0, 2: 4.0, 5: 2.0}


@pytest.fixture(scope="module")
def batching_verifier(tmp_path_factory: pytest.TempPathFactory) -> Verifier:
    # 0.1 ms a sample: several times what the CPU reference's relu takes on the tiny cases (about 6 µs here), so
    # each case is timed several calls per sample, and the interpreter's calls stay within the job's time limit on
    # a slow CI machine (1 ms a sample on the larger cases took 45 s of the 60 s limit here, and timed out in CI)
    caches = tmp_path_factory.mktemp("caches")
    return Verifier(VerifyConfig(platform="cpu", time_on_cpu=True, repetitions=6, warmup=1, input_sets=2,
                                 sample_ms=0.1, hip_cache=caches / "hip"))  # fmt: skip


def test_a_short_case_is_timed_several_calls_per_sample_the_same_way_for_every_candidate(
    small_relu, batching_verifier
) -> None:  # noqa: ANN001
    code = (ROOT / "examples" / "triton" / "relu.py").read_text()
    first = verify_once(batching_verifier, small_relu, Candidate(small_relu.task_id, "triton", code, "test"))
    assert first.correct is True, first.failure_message
    calls = [t.calls_per_sample for t in first.timings]
    assert all(1 < k <= 128 for k in calls), calls
    log = {stage.name: stage for stage in first.stages}["time"].log
    assert f", {'/'.join(map(str, sorted(set(calls))))} calls per sample;" in log, log
    # A candidate that writes every result into one buffer is correct, and timed one call per sample (the reference
    # too): with several, only a sample's last output would be there to check, and a candidate that computes only
    # the last call (its input buffer says which it is) would be credited with a fraction of the work.
    reusing = verify_once(
        batching_verifier, small_relu, Candidate(small_relu.task_id, "triton", REUSES_ITS_OUTPUT, "test")
    )
    assert reusing.correct is True, reusing.failure_message
    assert [t.calls_per_sample for t in reusing.timings] == [1] * len(calls)
    assert all(t.checked_calls == t.repetitions for t in reusing.timings)
    # the next candidate is timed with the case's calls per sample again
    again = verify_once(batching_verifier, small_relu, Candidate(small_relu.task_id, "triton", code, "again"))
    assert [t.calls_per_sample for t in again.timings] == calls


def test_replaying_results_while_timed_is_caught_with_several_calls_per_sample(
    small_relu, batching_verifier
) -> None:  # noqa: ANN001
    verdict = verify_once(
        batching_verifier, small_relu, Candidate(small_relu.task_id, "triton", REPLAYS_WHILE_TIMED, "test")
    )
    assert verdict.failure_kind == "integrity_reject" and verdict.correct is False
    assert verdict.failure_message.startswith("cached_results: timed call")


def test_with_shared_outputs_every_case_of_a_turn_is_checked_after_it(
    small_relu, tmp_path_factory: pytest.TempPathFactory
) -> None:  # noqa: ANN001
    """Both performance cases are timed in one turn, then judged: with `shared_outputs` the reference keeps the
    first case's kept outputs while it prepares the second (`Prepare.keep_earlier`), so an honest kernel's spot
    checks all pass and a replaying one is caught, as with files."""
    caches = tmp_path_factory.mktemp("caches")
    verifier = Verifier(VerifyConfig(platform="cpu", time_on_cpu=True, repetitions=6, warmup=1, input_sets=2,
                                     shared_outputs=True, hip_cache=caches / "hip"))  # fmt: skip
    code = (ROOT / "examples" / "triton" / "relu.py").read_text()
    honest = verify_once(verifier, small_relu, Candidate(small_relu.task_id, "triton", code, "test"))
    assert honest.correct is True and len(honest.timings) == 2, honest.failure_message
    check = next(stage for stage in honest.stages if stage.name == "check")
    assert "MB shared" in check.log
    replaying = verify_once(
        verifier, small_relu, Candidate(small_relu.task_id, "triton", REPLAYS_WHILE_TIMED, "test")
    )
    assert replaying.failure_kind == "integrity_reject", replaying.failure_message
    assert replaying.failure_message.startswith("cached_results: timed call 0/0: output: checksum")

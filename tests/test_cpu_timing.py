"""The timing stage's protocol, run on CPU through the interpreter (`VerifyConfig.time_on_cpu`).

On a GPU every performance case is timed and two timed calls are spot-checked by the parent
(`kernelvault.toolchain.judge`): the timed calls' inputs reach the candidate's worker only when it is timed, and a
success needs every case's spot checks judged by the parent. This runs that code path in CI, where no GPU is; the
interpreter's wall clock is no kernel measurement, so it never becomes a speedup.
"""

from __future__ import annotations

import re
from pathlib import Path

import pytest
import small_tasks

from kernelvault.contracts import Candidate
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
    return small_tasks.small_relu(tmp_path_factory.mktemp("task"))


@pytest.fixture(scope="module")
def verifier(tmp_path_factory: pytest.TempPathFactory) -> Verifier:
    caches = tmp_path_factory.mktemp("caches")
    return Verifier(VerifyConfig(platform="cpu", time_on_cpu=True, repetitions=6, warmup=1, input_sets=2,
                                 hip_cache=caches / "hip"))  # fmt: skip


def test_an_honest_kernel_is_timed_per_case_and_spot_checked_but_gets_no_speedup(
    small_relu, verifier
) -> None:  # noqa: ANN001
    code = (ROOT / "examples" / "triton" / "relu.py").read_text()
    verdict = verifier.verify(small_relu, Candidate(small_relu.task_id, "triton", code, "test"))
    assert verdict.correct is True and verdict.failure_kind is None, verdict.failure_message
    assert [t.case for t in verdict.timings] == [case.name for case in small_relu.performance_cases]
    assert all(t.repetitions == 6 and t.candidate_ms > 0 and t.reference_ms > 0 for t in verdict.timings)
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


def test_a_kernel_that_replays_results_while_timed_is_caught_by_the_spot_checks(small_relu, verifier) -> None:  # noqa: ANN001
    verdict = verifier.verify(
        small_relu, Candidate(small_relu.task_id, "triton", REPLAYS_WHILE_TIMED, "test")
    )
    assert verdict.failure_kind == "integrity_reject" and verdict.correct is False
    assert verdict.failure_message.startswith("cached_results: timed call 5 returned a wrong result")
    assert verdict.reward.total <= 0.4

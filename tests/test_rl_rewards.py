"""The reward adapters score completions with the real toolchain (cpu: Triton interpreter + AMD cross-compile)."""

from __future__ import annotations

import asyncio
import json
import threading
import time
from collections import defaultdict
from pathlib import Path

import pytest

from kernelvault.contracts import Candidate, Task, Verdict
from kernelvault.rl import verl_score
from kernelvault.rl.rewards import ExecutionReward, TrajectoryReward
from kernelvault.rl.verifiers import verdict_source_from_env
from kernelvault.toolchain.lane_pool import verify_once
from kernelvault.toolchain.tasks import load_task_file
from kernelvault.toolchain.verify import Verifier, VerifyConfig

ROOT = Path(__file__).resolve().parents[1]
EXAMPLES = ROOT / "examples" / "triton"
RELU = load_task_file(ROOT / "tasks" / "relu.py")


def fenced(path: Path) -> list[dict[str, str]]:
    return [{"role": "assistant", "content": f"Here it is.\n\n```python\n{path.read_text()}```\n"}]


class Recorder:
    def __init__(self) -> None:
        self.metrics: dict[str, list[float]] = defaultdict(list)
        self.extra: dict[str, list] = {}

    def log_metric(self, name: str, value: float) -> None:
        self.metrics[name].append(value)

    def log_extra(self, name: str, values: list) -> None:
        self.extra[name] = values


class CountingVerifier:
    """The real verifier, counting calls and how many run at once."""

    def __init__(self) -> None:
        self.verifier = Verifier(VerifyConfig(platform="cpu", timeout_s=120))
        self.calls = 0
        self.running = 0
        self.most = 0
        self.lock = threading.Lock()

    def verify(self, task: Task, candidate: Candidate) -> Verdict:
        with self.lock:
            self.calls += 1
            self.running += 1
            self.most = max(self.most, self.running)
        try:
            return verify_once(self.verifier, task, candidate)
        finally:
            with self.lock:
                self.running -= 1


def test_execution_reward_verifies_a_batch_and_logs_each_component(tmp_path: Path) -> None:
    counting = CountingVerifier()
    reward = ExecutionReward(counting.verify, concurrency=4, group_size=2, log_dir=tmp_path)
    completions = [
        fenced(EXAMPLES / "relu.py"),  # correct: 0.4 + 1.0 (no speed term on cpu)
        fenced(EXAMPLES / "relu.py"),  # the same answer again: verified once
        fenced(EXAMPLES / "broken" / "static_reject__relu.py"),  # rejected before it runs: 0
        [{"role": "assistant", "content": "ReLU keeps the positive part."}],  # no code: parse_error, 0
    ]
    recorder = Recorder()
    # Called as GRPOTrainer calls a reward function it finds synchronous: the floats come back, not a coroutine.
    assert not pytest.importorskip("trl.trainer.utils").is_async_callable(reward)
    rewards = reward(
        prompts=[[{"role": "user", "content": "relu"}]] * 4, completions=completions, completion_ids=[[1]] * 4,
        task_source=[RELU.source] * 4, task_name=["relu"] * 4, log_metric=recorder.log_metric,
        log_extra=recorder.log_extra, trainer_state=None,
    )  # fmt: skip
    assert rewards == [pytest.approx(1.4), pytest.approx(1.4), 0.0, 0.0]
    assert counting.calls == 3  # the duplicate shared one verification
    assert recorder.extra["failure_kind"] == ["correct", "correct", "static_reject", "parse_error"]
    assert recorder.metrics["reward/compile"] == [pytest.approx(0.2)]
    assert recorder.metrics["reward/correct"] == [pytest.approx(0.5)]
    assert recorder.metrics["reward/speed"] == [0.0]
    assert recorder.metrics["verify/frac_parsed"] == [0.75]
    # Groups of two: [1.4, 1.4] is dead under both rewards, [0, 0] too.
    assert recorder.metrics["signal/graded_zero_spread"] == [1.0]
    lines = [json.loads(line) for line in (tmp_path / "rewards-rank0.jsonl").read_text().splitlines()]
    assert [line["graded"] for line in lines] == rewards and [line["group"] for line in lines] == [0, 0, 1, 1]
    assert lines[0]["binary"] == 1.0 and lines[2]["failure_kind"] == "static_reject"


def test_a_batch_goes_out_as_wide_as_the_lane_pool_behind_the_reward() -> None:
    """No fixed small in-flight limit: by default a pool's reward keeps every one of its slots busy."""

    class Pool:
        slots = 24

        def verify(self, task: Task, candidate: Candidate) -> Verdict:
            raise AssertionError("not called")

    assert ExecutionReward(Pool().verify).concurrency == 24
    assert (
        ExecutionReward(lambda task, candidate: None).concurrency == 16
    )  # a service's: its own queue decides
    assert ExecutionReward(Pool().verify, concurrency=3).concurrency == 3


def test_execution_reward_runs_verifications_concurrently() -> None:
    started: list[float] = []

    def slow_verify(task: Task, candidate: Candidate) -> Verdict:
        started.append(time.monotonic())
        time.sleep(0.5)
        return verify_once(Verifier(VerifyConfig(platform="cpu")), task, candidate)  # a parse error: instant

    reward = ExecutionReward(slow_verify, concurrency=4)
    batch = {
        "prompts": [None] * 4,
        "completions": [f"answer {i}" for i in range(4)],
        "task_source": [RELU.source] * 4,
    }
    begin = time.monotonic()
    assert reward(**batch) == [0.0] * 4
    assert time.monotonic() - begin < 1.5, "four 0.5 s verifications should overlap"

    async def beside_other_work() -> tuple[list[float], int]:  # the awaitable path leaves the event loop free
        ticks = 0

        async def tick() -> None:
            nonlocal ticks
            while True:
                ticks += 1
                await asyncio.sleep(0.05)

        ticker = asyncio.ensure_future(tick())
        rewards = await reward.acall(**batch)
        ticker.cancel()
        return rewards, ticks

    rewards, ticks = asyncio.run(beside_other_work())
    assert rewards == [0.0] * 4 and ticks >= 5


def test_execution_reward_from_a_dataset_version_in_one_line(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """`execution_reward("hub:ORG/NAME@vX.Y.Z")`: the version's rl prompts and a reward that scores
    completions of them with the toolchain, each row verified as its own target."""
    from corpus_rows import example_code, row_for

    from kernelvault.corpus.release import build_release
    from kernelvault.corpus.shards import ShardWriter
    from kernelvault.hub import LocalHub, publish

    monkeypatch.setenv("KV_HUB_DIR", str(tmp_path / "hub"))
    monkeypatch.delenv("KV_HUB", raising=False)
    with ShardWriter(tmp_path / "corpus", "triton", "run1") as writer:
        writer.write_many(
            [row_for("relu", example_code("relu"), True, 0), row_for("silu", example_code("silu"), True, 0)]
        )
    build_release(tmp_path / "corpus", tmp_path / "release")
    publish(tmp_path / "release", "acme/kernels", "0.1.0", LocalHub(tmp_path / "hub"))

    from kernelvault.rl.verifiers import execution_reward

    reward = execution_reward("hub:acme/kernels@v0.1.0", platform="cpu", devices="cpu", group_size=2)
    assert reward.platform == "cpu" and set(reward.dataset) == {"train", "validation"}
    rows = [*reward.dataset["train"], *reward.dataset["validation"]]
    relu = next(row for row in rows if row["task_name"] == "relu")
    columns = {key: [relu[key]] * 2 for key in relu if key != "prompt"}
    completions = [fenced(EXAMPLES / "relu.py"), [{"role": "assistant", "content": "no code"}]]
    assert reward(prompts=[relu["prompt"]] * 2, completions=completions, **columns) == [
        pytest.approx(1.4),
        0.0,
    ]
    with pytest.raises(ValueError, match="no dataset acme/missing in the local hub"):
        execution_reward("hub:acme/missing@v0.1.0", platform="cpu")


def test_trajectory_reward_returns_the_rollout_return() -> None:
    recorder = Recorder()
    reward = TrajectoryReward(group_size=2)
    rewards = reward(
        prompts=[None] * 2, completions=[None] * 2, task_id=["t", "t"], task_name=["relu", "relu"],
        trajectory_return=[0.84, 0.4 * 1.96], turn_rewards=[[0.0, 1.4], [0.4, 0.4, 0.4]],
        turn_compile=[[0.0, 0.4], [0.4] * 3], turn_correct=[[0.0, 1.0], [0.0] * 3], turn_speed=[[0.0, 0.0], [0.0] * 3],
        turn_failure_kinds=[["parse_error", "correct"], ["mismatch"] * 3], solved=[True, False],
        final_speedup=[None, None], feedback_tokens=[120, 240], generation_seconds=[1.0, 1.0],
        verification_seconds=[2.0, 2.0], log_metric=recorder.log_metric, log_extra=recorder.log_extra,
    )  # fmt: skip
    assert rewards == [0.84, pytest.approx(0.784)]
    assert recorder.metrics["rollout/turns"] == [2.5] and recorder.metrics["rollout/masked_tokens"] == [180.0]
    assert recorder.metrics["signal/binary_zero_spread"] == [0.0]  # one solved, one not


def test_verl_compute_score_uses_the_toolchain(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.delenv("KV_REWARD_URL", raising=False)
    monkeypatch.setenv("KV_PLATFORM", "cpu")
    verdict_source_from_env.cache_clear()
    extra = {"index": 0, "task_id": RELU.task_id, "task_name": "relu", "target": "triton"}
    score = verl_score.compute_score("kernelvault/triton", "no code here", RELU.source, extra)
    assert score == {"score": 0.0, "compile": 0.0, "correct": 0.0, "speed": 0.0, "binary": 0.0, "parsed": 0.0}
    rejected = (EXAMPLES / "broken" / "static_reject__relu.py").read_text()

    async def both() -> list[dict[str, float]]:  # as verl's reward loop awaits them: side by side
        return await asyncio.gather(*(verl_score.compute_score_async("kernelvault/triton", text, RELU.source, extra)
                                      for text in (rejected, "```python\n```")))  # fmt: skip

    batch = asyncio.run(both())
    assert [s["parsed"] for s in batch] == [1.0, 0.0] and all(s["score"] == 0.0 for s in batch)
    # The multi-turn agent loop already verified every turn: its return is used as is.
    rollout = {**extra, "rollout_reward_scores": {"trajectory_return": 0.84}}
    assert verl_score.compute_score("kernelvault/triton", "anything", RELU.source, rollout)["score"] == 0.84
    with pytest.raises(ValueError, match="target must be one of"):
        verl_score.compute_score("kernelvault/cuda", "x", RELU.source, {})
    verdict_source_from_env.cache_clear()

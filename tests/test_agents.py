"""The agent graph end to end against a real OpenAI-compatible HTTP server on localhost.

Scripted answers run through the real toolchain on the cpu platform (Triton interpreter + AMD
cross-compile), and the rows land in real shards with a real ledger.
"""

from __future__ import annotations

import re
import sqlite3
from pathlib import Path
from typing import Any

import pyarrow.parquet as pq
import pytest

from kernelvault.agents.client import EndpointConfig, SamplingSettings
from kernelvault.pipelines.agent_job import AgentJobConfig, run_agent_job
from kernelvault.pipelines.engine import EngineOptions
from kernelvault.simulated_openai import Answer, FakeOpenAI
from kernelvault.toolchain.tasks import LoadedTasks, load_task_file
from kernelvault.toolchain.verify import Verifier, VerifyConfig

ROOT = Path(__file__).resolve().parents[1]
EXAMPLES = ROOT / "examples" / "triton"
MARKERS = {
    "relu": "ReLU activation, max(x, 0)",
    "silu": "SiLU (swish) activation",
    "softmax": "Softmax over the last dimension",
    "vector_add": "Sum of two 1-D float32 vectors",
}


def fenced(path: Path, note: str = "Here is the kernel.") -> str:
    return f"{note}\n\n```python\n{path.read_text()}```\n"


def tasks(*names: str) -> LoadedTasks:
    return LoadedTasks(tasks=[load_task_file(ROOT / "tasks" / f"{name}.py") for name in names])


def endpoint(url: str) -> EndpointConfig:
    return EndpointConfig(
        base_url=url, model="qwen3-test", attempts=4, backoff_initial_s=0.01, backoff_max_s=0.05
    )


def rows_of(out: Path) -> list[dict]:
    return [
        row
        for shard in sorted((out / "data" / "triton").glob("*.parquet"))
        for row in pq.read_table(shard).to_pylist()
    ]


@pytest.fixture(scope="module")
def scripted_run(tmp_path_factory: pytest.TempPathFactory) -> tuple[FakeOpenAI, Path, object, Any]:
    server = FakeOpenAI(
        scenarios={
            MARKERS["relu"]: [
                Answer(fenced(EXAMPLES / "broken" / "compile_error__relu.py"), reasoning="try a loop"),
                Answer(fenced(EXAMPLES / "relu.py"), reasoning="remove the break"),
            ],
            MARKERS["silu"]: [Answer(fenced(EXAMPLES / "broken" / "mismatch__silu.py"))] * 3,
            MARKERS["softmax"]: [Answer("Softmax subtracts the row max, exponentiates and normalises.")] * 3,
            MARKERS["vector_add"]: [
                Answer(
                    "```python\nimport torch\nimport triton\n\n@triton.jit\ndef add(", finish_reason="length"
                ),
                Answer(fenced(EXAMPLES / "vector_add.py")),
            ],
        },  # fmt: skip
        faults=[429, 500, "drop"],
    )
    url, stop = server.start()
    out = tmp_path_factory.mktemp("agents")
    verifier = Verifier(VerifyConfig(platform="cpu", timeout_s=60))
    # Two fake devices (GPU ids on the CPU platform): the job's lanes go on both, as `--devices 0,1` would
    # put them on two GPUs, and two compile processes prepare the turns (test_the_model_job_runs_on_the_engine).
    config = AgentJobConfig(endpoint=endpoint(url), samples=1, max_turns=3, concurrency=4,
                            engine=EngineOptions(devices="0,1", compile_workers=2),
                            sampling=SamplingSettings(temperature=0.6, top_p=0.95, max_tokens=4096))  # fmt: skip
    pools: list[Any] = []
    try:
        summary = run_agent_job(tasks("relu", "silu", "softmax", "vector_add"), verifier, out, "triton", config,
                                progress=False, on_pool=pools.append)  # fmt: skip
    finally:
        stop()
    return server, out, summary, pools[0]


def test_the_model_job_runs_on_the_engine(scripted_run) -> None:  # noqa: ANN001
    """With a model, `--devices 0,1` and `--compile-workers 2` do what they do without one: every turn is an
    attempt of the engine, prepared in the compile processes and verified on lanes of both devices."""
    _, out, summary, pool = scripted_run
    assert pool.devices == ("0", "1")
    lanes = pool.lane_jobs()
    assert set(lanes) == {"0#0", "1#1"} and all(count >= 1 for count in lanes.values()), lanes
    turns = len(rows_of(out))
    assert summary.executor.submitted == summary.executor.written == turns
    # the device jobs per lane (a turn its CPU stages already failed needs none)
    assert summary.executor.lane_items == {name: count for name, count in lanes.items() if count}
    assert 1 <= sum(lanes.values()) <= turns
    assert summary.executor.pool_high_water >= 1  # the turns went through the compile processes
    assert summary.verified_here == turns and "stage compile" in summary.table()


def by_task(rows: list[dict]) -> dict[str, list[dict]]:
    grouped: dict[str, list[dict]] = {}
    for row in sorted(rows, key=lambda r: (r["task_name"], r["turn"])):
        grouped.setdefault(row["task_name"], []).append(row)
    return grouped


def test_each_scripted_scenario_produces_its_turns(scripted_run) -> None:  # noqa: ANN001
    _, out, summary, _ = scripted_run
    turns = by_task(rows_of(out))
    outcome = {name: [r["failure_kind"] or "correct" for r in rows] for name, rows in turns.items()}
    assert outcome == {
        "relu": ["compile_error", "correct"],  # fixed on turn 2, then stops (stop on first correct)
        "silu": ["mismatch", "mismatch", "mismatch"],  # wrong three times: the budget ends it
        "softmax": ["parse_error", "parse_error", "parse_error"],  # no code at all
        "vector_add": ["parse_error", "correct"],  # cut off at max_tokens, then a full answer
    }
    assert summary.attempts == 10 and not summary.retry_later
    relu = turns["relu"]
    assert relu[0]["trajectory_return"] == pytest.approx(
        0.0 + 0.6 * 1.4
    )  # r1 + 0.6 r2, cpu has no speed term
    assert turns["silu"][0]["trajectory_return"] == pytest.approx(0.4 * (1 + 0.6 + 0.36))
    assert "cut off at max_tokens" in turns["vector_add"][0]["failure_message"]
    assert turns["vector_add"][0]["finish_reason"] == "length"
    assert turns["softmax"][0]["answer"].startswith("Softmax subtracts")  # the raw text is kept


def test_rows_carry_the_conversation_reasoning_and_sampling(scripted_run) -> None:  # noqa: ANN001
    _, out, _, _ = scripted_run
    relu = by_task(rows_of(out))["relu"]
    second = relu[1]
    roles = [m["role"] for m in second["messages"]]
    assert roles[0] == "system" and roles[-1] == "assistant" and roles.count("assistant") >= 2
    assert second["messages"][-1]["reasoning_content"] == "remove the break"
    assert second["model"] == "qwen3-test" and '"temperature": 0.6' in second["sampling"]
    assert second["completion_tokens"] > 0 and second["platform"] == "cpu"


def test_each_turn_prompt_carries_the_previous_verdict(scripted_run) -> None:  # noqa: ANN001
    server, _, _, _ = scripted_run
    answered = [r for r in server.requests if r.status == 200]

    def follow_up(marker: str) -> str:
        conversations = [
            r.body["messages"] for r in answered if any(marker in m["content"] for m in r.body["messages"])
        ]
        longest = max(conversations, key=len)
        return longest[-1]["content"]

    assert "gfx942" in follow_up(MARKERS["relu"])  # the compiler error of turn 1
    silu = follow_up(MARKERS["silu"])
    assert "c0:" in silu and "max abs error" in silu.lower() or "max_abs_error" in silu.lower()
    assert "cut off" in follow_up(MARKERS["vector_add"])
    for request in answered:  # reasoning never goes back over the wire
        assert all(set(m) == {"role", "content"} for m in request.body["messages"])


def test_transport_faults_are_retried_once_each_by_one_layer(scripted_run) -> None:  # noqa: ANN001
    server, out, _, _ = scripted_run
    statuses = [r.status for r in server.requests]
    assert statuses[:3] == [429, 500, 0]  # injected: rate limit, server error, dropped connection
    assert (
        statuses.count(200) == 10
    )  # every turn answered once: no duplicate requests from a second retry layer
    with sqlite3.connect(out / "ledger.sqlite") as db:
        states = dict(db.execute("SELECT status, COUNT(*) FROM attempts GROUP BY status").fetchall())
    assert states == {"finished": 10}


def test_an_endpoint_that_stays_down_is_resumed_by_a_later_run(tmp_path: Path) -> None:
    down = FakeOpenAI(always_fail=503)
    url, stop = down.start()
    config = AgentJobConfig(endpoint=endpoint(url), samples=2, max_turns=1)
    verifier = Verifier(VerifyConfig(platform="cpu"))
    try:
        summary = run_agent_job(tasks("softmax"), verifier, tmp_path, "triton", config, progress=False)
    finally:
        stop()
    assert summary.attempts == 0 and len(summary.retry_later) == 2
    assert "provider_error" in summary.retry_later[0]
    with sqlite3.connect(tmp_path / "ledger.sqlite") as db:
        assert (
            db.execute("SELECT status, failure_kind FROM attempts").fetchall()
            == [("failed", "provider_error")] * 2
        )

    healthy = FakeOpenAI(scenarios={MARKERS["softmax"]: [Answer("no code")]})
    url2, stop2 = healthy.start(port=int(url.rsplit(":", 1)[1].split("/")[0]))  # the same endpoint, back up
    assert url2 == url
    try:
        summary2 = run_agent_job(tasks("softmax"), verifier, tmp_path, "triton", config, progress=False)
    finally:
        stop2()
    assert summary2.resumed and summary2.attempts == 2 and not summary2.retry_later
    with sqlite3.connect(tmp_path / "ledger.sqlite") as db:
        assert db.execute("SELECT status, tries FROM attempts").fetchall() == [("finished", 2)] * 2


def test_many_trajectories_against_a_slow_server_run_concurrently(tmp_path: Path) -> None:
    slow = FakeOpenAI(scenarios={MARKERS["softmax"]: [Answer("no code here")]}, delay_s=0.5)
    url, stop = slow.start()
    config = AgentJobConfig(endpoint=endpoint(url), samples=64, max_turns=1, concurrency=64)
    try:
        summary = run_agent_job(tasks("softmax"), Verifier(VerifyConfig(platform="cpu")), tmp_path, "triton", config,
                                progress=False)  # fmt: skip
    finally:
        stop()
    assert summary.attempts == 64
    # Concurrency as the server saw it, not a wall-clock bound (which failed on a loaded 2-core machine: 12.5 s
    # against 8). Each request waits 0.5 s there; a sequential client shows 1. On that loaded machine the
    # trajectories' starts spread out and 25 were in flight at most (more on an idle one): 8 leaves a margin.
    assert slow.most_in_flight >= 8, slow.most_in_flight


@pytest.mark.skipif(__import__("shutil").which("hipcc") is None, reason="needs Debian's hipcc")
def test_hip_kernel_gen_drafts_native_hip_and_reads_the_compiler_feedback(tmp_path: Path) -> None:
    """HIPKernelGen on a CPU-only machine: the HIP prompt, a compile error fed back, the fix compiled."""
    hip = ROOT / "examples" / "hip"
    server = FakeOpenAI(scenarios={MARKERS["relu"]: [Answer(fenced(hip / "broken" / "compile_error__relu.py")),
                                                      Answer(fenced(hip / "relu.py"))]})  # fmt: skip
    url, stop = server.start()
    config = AgentJobConfig(endpoint=endpoint(url), samples=1, max_turns=2)
    verifier = Verifier(VerifyConfig(platform="cpu", hip_cache=tmp_path / "hip-cache"))
    try:
        summary = run_agent_job(tasks("relu"), verifier, tmp_path / "out", "hip", config, progress=False)
    finally:
        stop()
    assert summary.attempts == 2 and not summary.retry_later
    rows = sorted(
        (row for shard in sorted((tmp_path / "out" / "data" / "hip").glob("*.parquet"))
         for row in pq.read_table(shard).to_pylist()),
        key=lambda row: row["turn"],
    )  # fmt: skip
    assert [(row["target"], row["failure_kind"], row["compiled"], row["correct"]) for row in rows] == [
        ("hip", "compile_error", False, False),
        ("hip", None, True, None),  # compiled for gfx90a; nothing runs without an AMD GPU
    ]
    assert [row["reward"] for row in rows] == [0.0, pytest.approx(0.4)]
    first_request, second_request = (record.body["messages"] for record in server.requests[:2])
    assert "load_hip" in first_request[0]["content"] and "HIP_SOURCE" in first_request[0]["content"]
    assert "gfx90a" in second_request[-1]["content"]  # the compiler's diagnosis reaches the next turn


@pytest.mark.skipif(__import__("shutil").which("hipcc") is None, reason="needs Debian's hipcc")
def test_the_main_job_with_an_endpoint_runs_hip_kernel_gen_and_names_it(tmp_path: Path) -> None:
    """What `make corpus TARGET=hip ARGS="--base-url … --model …"` runs: the CLI says which agent, model and
    endpoint it uses, and the model's HIP answer is compiled and written as a hip row with its turn."""
    import contextlib
    import io

    from kernelvault.cli import main

    server = FakeOpenAI(scenarios={MARKERS["relu"]: [Answer(fenced(ROOT / "examples" / "hip" / "relu.py"))]})
    url, stop = server.start()
    printed = io.StringIO()
    try:
        with contextlib.redirect_stdout(printed):
            code = main(["corpus", "--target", "hip", "--platform", "cpu", "--tasks", str(ROOT / "tasks" / "relu.py"),
                         "--base-url", url, "--model", "qwen3-test", "--samples", "1", "--turns", "1",
                         "--no-progress", "--out", str(tmp_path / "out")])  # fmt: skip
    finally:
        stop()
    assert code == 0, printed.getvalue()
    assert f"HIPKernelGen with model qwen3-test at {url}" in printed.getvalue()
    [row] = [row for shard in sorted((tmp_path / "out" / "data" / "hip").glob("*.parquet"))
             for row in pq.read_table(shard).to_pylist()]  # fmt: skip
    expected = ("hip", "qwen3-test", 0, True, None)  # turns count from 0; compiled for gfx90a, not run
    assert (row["target"], row["model"], row["turn"], row["compiled"], row["failure_kind"]) == expected
    assert "load_hip" in server.requests[0].body["messages"][0]["content"]  # the HIP prompt


# ----------------------------------------------------------------------------------------------------
# Function tasks (TritonBench-T's layout): the prompt asks for the reference's functions, not ModelNew.

TRITONBENCH = ROOT / "tests" / "fixtures" / "tritonbench"
FUNCTION_TASK = TRITONBENCH / "data" / "TritonBench_T_v1" / "scaled_add.py"


def fixture_answers() -> list[str]:
    import json

    path = TRITONBENCH / "LLM_generated" / "Bench_T_general_purpose" / "output_fixture-model.jsonl"
    return [json.loads(line)["predict"] for line in path.read_text().splitlines()]


def test_a_function_task_is_asked_for_its_function_and_runs_through_the_graph_to_a_correct_row(
    tmp_path: Path,
) -> None:
    """Turn 1 does not compile, turn 2 is correct. Every message the model sees shows the reference function
    and the test's calls and asks for `scaled_add` with its signature; none of them mentions ModelNew (the
    system prompt, the task, the compile-error feedback and the reflection)."""
    good, _, broken = fixture_answers()
    marker = "Adds 'other' scaled by 'alpha' to 'input'"
    server = FakeOpenAI(scenarios={marker: [Answer(broken), Answer(good)]})
    url, stop = server.start()
    task = load_task_file(FUNCTION_TASK)
    assert task.form == "function"
    config = AgentJobConfig(endpoint=endpoint(url), samples=1, max_turns=3, concurrency=1)
    try:
        summary = run_agent_job(LoadedTasks(tasks=[task]), Verifier(VerifyConfig(platform="cpu", timeout_s=120)),
                                tmp_path, "triton", config, progress=False)  # fmt: skip
    finally:
        stop()
    rows = sorted(rows_of(tmp_path), key=lambda row: row["turn"])
    assert [row["failure_kind"] or "correct" for row in rows] == ["compile_error", "correct"]
    assert rows[-1]["correct"] is True and summary.attempts == 2
    answered = [r for r in server.requests if r.status == 200]
    last = answered[-1].body["messages"]
    system, prompt, feedback = last[0]["content"], last[1]["content"], last[-1]["content"]
    assert "`scaled_add(input, other, alpha=1.0, out=None)`" in prompt and "def test_scaled_add" in prompt
    assert "@triton.jit" in system and "same names and signatures" in system
    assert "did not compile" in feedback and "Turn 1" in feedback
    assert len(last) == 4, "no few-shot exchange: the bundled one teaches ModelNew"
    for request in answered:
        assert not any("ModelNew" in message["content"] for message in request.body["messages"])


def test_hip_for_a_function_task_is_refused_before_any_model_request(tmp_path: Path) -> None:
    from kernelvault.agents.prompting import UnsupportedPrompt

    server = FakeOpenAI(scenarios={})
    url, stop = server.start()
    config = AgentJobConfig(endpoint=endpoint(url), samples=1, max_turns=1)
    try:
        with pytest.raises(
            UnsupportedPrompt, match=r"1 function task\(s\) \(scaled_add\) take Triton candidates"
        ):
            run_agent_job(LoadedTasks(tasks=[load_task_file(FUNCTION_TASK)]),
                          Verifier(VerifyConfig(platform="cpu", timeout_s=60)), tmp_path, "hip", config,
                          progress=False)  # fmt: skip
    finally:
        stop()
    assert server.requests == []


def test_function_task_feedback_and_prompts_never_ask_for_modelnew() -> None:
    """Every feedback kind, both prompt families, and the prompt the release's sft/rl configs build from
    a row's task source alone (corpus.release, rl/train.py): the function form throughout; module tasks
    keep theirs."""
    from kernelvault.agents.feedback import feedback_message
    from kernelvault.agents.prompting import feedback_templates, system_prompt, task_prompt
    from kernelvault.contracts import FAILURE_KINDS, StageRecord, Verdict
    from kernelvault.corpus.release import rl_rows

    kinds = [kind for kind in FAILURE_KINDS if kind != "provider_error"]
    for kind in kinds:
        verdict = Verdict("t", "triton", "", "", kind not in ("parse_error", "compile_error"), False, kind, "why",
                          (StageRecord("check", "failed", 0.0, "log"),))  # fmt: skip
        assert "ModelNew" not in feedback_message(verdict, 1, 3, "function"), kind
    rejected = Verdict("t", "triton", "", "", False, False, "static_reject", "why", ())
    assert "ModelNew" in feedback_message(rejected, 1, 3, "module")
    assert all(
        not name.endswith("(function tasks)") or name.split()[0] in kinds for name in feedback_templates()
    )
    for platform in ("cpu", "cuda"):
        assert "ModelNew" not in system_prompt("triton", platform, "function")
        assert "ModelNew" in system_prompt("triton", platform)
    source = FUNCTION_TASK.read_text()
    assert "ModelNew" not in task_prompt(source, "triton") and "`scaled_add(" in task_prompt(source, "triton")
    assert "class ModelNew" in task_prompt((ROOT / "tasks" / "relu.py").read_text(), "triton")
    import pyarrow as pa

    table = pa.table({"task_id": ["t"], "task_name": ["scaled_add"], "task_category": [None],
                      "task_source": [source], "target": ["triton"], "platform": ["cpu"], "correct": [True],
                      "speedup": [None]})  # fmt: skip
    (row,) = rl_rows({"triton": table})
    assert row["prompt"][1]["content"] == task_prompt(source, "triton")  # no few-shot exchange for a function
    assert not any("ModelNew" in message["content"] for message in row["prompt"])


def test_the_corpus_bar_counts_rows_with_the_trajectories_beside_them(tmp_path: Path) -> None:
    """One trajectory of three turns is three rows: the bar says so, not `1/1`."""
    import contextlib
    import io

    from kernelvault.cli import main

    prose = Answer("Softmax subtracts the row max, exponentiates and normalises.")  # no code: parse_error
    server = FakeOpenAI(scenarios={MARKERS["softmax"]: [prose] * 3})
    url, stop = server.start()
    stderr = io.StringIO()
    try:
        with contextlib.redirect_stderr(stderr), contextlib.redirect_stdout(io.StringIO()):
            code = main(["corpus", "--platform", "cpu", "--tasks", str(ROOT / "tasks" / "softmax.py"),
                         "--base-url", url, "--model", "qwen3-test", "--turns", "3", "--allow-unjailed",
                         "--out", str(tmp_path / "out")])  # fmt: skip
    finally:
        stop()
    assert code == 0, stderr.getvalue()
    assert len(rows_of(tmp_path / "out")) == 3
    final = stderr.getvalue().replace("\r", "\n").strip().splitlines()[-1]
    assert re.match(r"verifying: 3 rows \[\d\d:\d\d, trajectories 1/1\]$", final.strip()), final

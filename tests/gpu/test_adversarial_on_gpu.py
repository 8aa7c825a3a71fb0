"""The adversarial suite on a real GPU (marked `gpu`; bench/gpu_session.sh runs it on the H200).

Two passes through the main job, as on CPU (tests/test_adversarial.py): every layer on (all files), then
the static wall off (the hostile files it stops), where the jail, the tripwires, the parent's judge and the
device's own record of which kernels ran must answer instead. Expectations are the files' `# expect-cuda:`
/ `# behind-wall-cuda:` lines where they have one. The tables go to $KV_RESULTS_DIR/gpu_adversarial.md.
"""

from __future__ import annotations

import os
from pathlib import Path

import pyarrow.parquet as pq
import pytest

from kernelvault.pipelines.candidates import expected_options, outcome, outcome_matches

torch = pytest.importorskip("torch")
pytestmark = [pytest.mark.gpu, pytest.mark.skipif(not torch.cuda.is_available(), reason="needs a GPU")]

ROOT = Path(__file__).resolve().parents[2]
SUITE = ROOT / "tests" / "adversarial"
SECRETS = {"OPENAI_API_KEY": "sk-kv-gpu-adversarial", "HF_TOKEN": "hf_kv_gpu_adversarial",
           "MY_SERVICE_TOKEN": "kv-gpu-adversarial-token"}  # fmt: skip

# GPU workers run without an address-space limit (CUDA maps huge ranges), so a candidate that allocates
# host memory without bound is bounded only by its timeout: not run on a shared GPU machine.
NOT_ON_GPU = ("unbounded_alloc",)


# "i/n": this run takes every n-th file from the i-th (0-based), so that the suite fits in device calls of 600 s
# (on an H100 the every-layer run of all 180 files did not: bench/results/2026-12-07-h100-timing-suite-18527dd.md)
SHARD = os.environ.get("KV_GPU_SHARD")


def suite_files() -> list[Path]:
    files = sorted((SUITE / "hostile").glob("*.py")) + sorted((SUITE / "honest").glob("*.py"))
    files = [f for f in files if not any(marker in f.name for marker in NOT_ON_GPU)]
    if SHARD:
        index, count = (int(part) for part in SHARD.split("/"))
        files = files[index::count]
    return files


def _task_name(path: Path) -> str:
    return path.stem.split("__")[1] if path.parent.name == "hostile" else path.stem.split("__")[0]


def _wanted(path: Path, behind_wall: bool) -> list[str]:
    return ["correct"] if path.parent.name == "honest" else expected_options(path, "cuda", behind_wall)


def _stopped_by_the_wall(path: Path) -> bool:
    return path.parent.name == "hostile" and any(
        o.startswith("static_reject") for o in expected_options(path, "cuda")
    )


def _run(files: list[Path], static_wall: bool, out: Path) -> dict[str, dict]:
    from kernelvault.contracts import Candidate
    from kernelvault.pipelines.candidates import Attempt
    from kernelvault.pipelines.corpus_job import run_corpus_job
    from kernelvault.toolchain.tasks import LoadedTasks, load_task_file
    from kernelvault.toolchain.verify import Verifier, VerifyConfig

    tasks = {name: load_task_file(ROOT / "tasks" / f"{name}.py") for name in {_task_name(f) for f in files}}

    class Suite:
        description = "adversarial suite"

        def identity(self) -> dict:
            return {"kind": "adversarial", "static_wall": static_wall}

        def attempts(self, _tasks):  # noqa: ANN001, ANN202
            for index, path in enumerate(files):
                task = tasks[_task_name(path)]
                yield Attempt(
                    task, Candidate(task.task_id, "triton", path.read_text(), f"suite:{path.name}"), index
                )

    verifier = Verifier(VerifyConfig(timeout_s=60, static_wall=static_wall))
    summary = run_corpus_job(
        LoadedTasks(tasks=list(tasks.values())), Suite(), verifier, out, "triton", progress=True
    )
    assert not summary.retry_later, summary.retry_later
    return {row["candidate_origin"].removeprefix("suite:"): row
            for shard in summary.shards for row in pq.read_table(shard).to_pylist()}  # fmt: skip


def _write_table(label: str, files: list[Path], rows: dict[str, dict]) -> None:
    results = os.environ.get("KV_RESULTS_DIR")
    if not results:
        return
    lines = [
        f"## {label}\n",
        "| candidate | expected | got | reward | isolation | message |",
        "|---|---|---|---|---|---|",
    ]
    for path in files:
        row = rows.get(path.name)
        if row is None:
            continue
        got = outcome(row["failure_kind"], row["failure_message"])
        want = "|".join(_wanted(path, label != "every layer"))
        message = (row["failure_message"] or "").replace("|", "/")[:160]
        lines.append(
            f"| {path.name} | {want} | {got} | {row['reward']:.1f} | {row['isolation']} | {message} |"
        )
    name = "gpu_adversarial.md" if label == "every layer" else "gpu_adversarial_behind_wall.md"
    if SHARD:
        name = name.replace(".md", f"-{SHARD.replace('/', '-of-')}.md")
    Path(results, name).write_text("\n".join(lines) + "\n")


def _with_secrets(run):  # noqa: ANN001, ANN202
    patcher = pytest.MonkeyPatch()
    try:
        for key, value in SECRETS.items():
            patcher.setenv(key, value)
        return run()
    finally:
        patcher.undo()


@pytest.fixture(scope="module")
def every_layer(tmp_path_factory: pytest.TempPathFactory) -> dict[str, dict]:
    files = suite_files()
    rows = _with_secrets(lambda: _run(files, True, tmp_path_factory.mktemp("gpu-adversarial")))
    _write_table("every layer", files, rows)
    return rows


@pytest.fixture(scope="module")
def behind_the_wall(tmp_path_factory: pytest.TempPathFactory) -> dict[str, dict]:
    files = [f for f in suite_files() if _stopped_by_the_wall(f)]
    rows = _with_secrets(lambda: _run(files, False, tmp_path_factory.mktemp("gpu-behind-wall")))
    _write_table("behind the wall", files, rows)
    return rows


def test_hostile_candidates_get_no_correctness_credit_on_the_device(every_layer: dict[str, dict]) -> None:
    rows = every_layer
    hostile = [f for f in suite_files() if f.parent.name == "hostile"]
    assert len(hostile) >= (50 if not SHARD else 1)
    wrong = []
    for path in hostile:
        row = rows[path.name]
        got = outcome(row["failure_kind"], row["failure_message"])
        if row["correct"] is True or row["reward"] > 0.4 or not outcome_matches(got, _wanted(path, False)):
            wrong.append((path.name, got, row["failure_message"]))
    assert not wrong, wrong


def test_behind_the_static_wall_the_jail_the_tripwires_and_the_device_record_answer(
    behind_the_wall: dict[str, dict],
) -> None:
    rows = behind_the_wall
    wrong = []
    for path in [f for f in suite_files() if _stopped_by_the_wall(f)]:
        row = rows[path.name]
        got = outcome(row["failure_kind"], row["failure_message"])
        if not outcome_matches(got, _wanted(path, True)):
            wrong.append((path.name, got, row["failure_message"]))
    assert not wrong, wrong


def test_honest_candidates_pass_on_the_device(every_layer: dict[str, dict]) -> None:
    for path in [f for f in suite_files() if f.parent.name == "honest"]:
        row = every_layer[path.name]
        assert row["correct"] is True, (path.name, row["failure_kind"], row["failure_message"])


def test_no_credential_reaches_a_row_on_the_device(every_layer: dict[str, dict]) -> None:
    for name, row in every_layer.items():
        assert not any(value in repr(row) for value in SECRETS.values()), name


def test_no_credential_reaches_a_row_behind_the_wall(behind_the_wall: dict[str, dict]) -> None:
    for name, row in behind_the_wall.items():
        assert not any(value in repr(row) for value in SECRETS.values()), name

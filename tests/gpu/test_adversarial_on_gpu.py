"""The adversarial suite on a real GPU (marked `gpu`; bench/gpu_session.sh runs it on the H200).

Every hostile candidate must get no correctness credit, every honest one must pass, on the device,
through the main job. The table of outcomes goes to $KV_RESULTS_DIR/gpu_adversarial.md when set.
"""

from __future__ import annotations

import os
from pathlib import Path

import pyarrow.parquet as pq
import pytest

from pipelines.candidates import expected_options, outcome

torch = pytest.importorskip("torch")
pytestmark = [pytest.mark.gpu, pytest.mark.skipif(not torch.cuda.is_available(), reason="needs a GPU")]

ROOT = Path(__file__).resolve().parents[2]
SUITE = ROOT / "tests" / "adversarial"


# GPU workers run without an address-space limit (CUDA maps huge ranges), so a candidate that allocates
# host memory without bound is bounded only by its timeout: not run on a shared GPU machine.
NOT_ON_GPU = ("unbounded_alloc",)


def suite_files() -> list[Path]:
    files = sorted((SUITE / "hostile").glob("*.py")) + sorted((SUITE / "honest").glob("*.py"))
    return [f for f in files if not any(marker in f.name for marker in NOT_ON_GPU)]


@pytest.fixture(scope="module")
def gpu_rows(
    tmp_path_factory: pytest.TempPathFactory, monkeypatch_module: pytest.MonkeyPatch
) -> dict[str, dict]:
    from kernelvault.contracts import Candidate
    from pipelines.candidates import Attempt
    from pipelines.corpus_job import run_corpus_job
    from toolchain.tasks import LoadedTasks, load_task_file
    from toolchain.verify import Verifier, VerifyConfig

    for key in ("OPENAI_API_KEY", "HF_TOKEN", "MY_SERVICE_TOKEN"):
        monkeypatch_module.setenv(key, "secret-for-the-env-probe")
    files = suite_files()
    task_names = {
        f.stem.split("__")[1] if f.parent.name == "hostile" else f.stem.split("__")[0] for f in files
    }
    tasks = {name: load_task_file(ROOT / "tasks" / f"{name}.py") for name in task_names}

    class Suite:
        description = "adversarial suite"

        def identity(self) -> dict:
            return {"kind": "adversarial"}

        def attempts(self, _tasks):  # noqa: ANN001, ANN202
            for index, path in enumerate(files):
                name = path.stem.split("__")[1] if path.parent.name == "hostile" else path.stem.split("__")[0]
                task = tasks[name]
                yield Attempt(
                    task, Candidate(task.task_id, "triton", path.read_text(), f"suite:{path.name}"), index
                )

    out = tmp_path_factory.mktemp("gpu-adversarial")
    summary = run_corpus_job(LoadedTasks(tasks=list(tasks.values())), Suite(), Verifier(VerifyConfig(timeout_s=60)),
                             out, "triton", progress=True)  # fmt: skip
    rows = {row["candidate_origin"].removeprefix("suite:"): row
            for shard in summary.shards for row in pq.read_table(shard).to_pylist()}  # fmt: skip
    results = os.environ.get("KV_RESULTS_DIR")
    if results:
        lines = ["| candidate | expected | got | reward |", "|---|---|---|---|"]
        for path in files:
            row = rows.get(path.name)
            got = "missing" if row is None else outcome(row["failure_kind"], row["failure_message"])
            want = "correct" if path.parent.name == "honest" else "|".join(expected_options(path))
            lines.append(f"| {path.name} | {want} | {got} | {row['reward'] if row else '-'} |")
        Path(results, "gpu_adversarial.md").write_text("\n".join(lines) + "\n")
    assert not summary.retry_later
    return rows


@pytest.fixture(scope="module")
def monkeypatch_module():  # noqa: ANN201
    patcher = pytest.MonkeyPatch()
    yield patcher
    patcher.undo()


def test_hostile_candidates_get_no_correctness_credit_on_the_device(gpu_rows: dict[str, dict]) -> None:
    hostile = [f for f in suite_files() if f.parent.name == "hostile"]
    assert len(hostile) >= 20
    for path in hostile:
        row = gpu_rows[path.name]
        assert row["correct"] is not True and row["reward"] <= 0.4, (path.name, row["failure_message"])
        got = outcome(row["failure_kind"], row["failure_message"])
        assert any(got == option or got.split(":")[0] == option for option in expected_options(path)), (
            path.name,
            got,
            row["failure_message"],
        )


def test_honest_candidates_pass_on_the_device(gpu_rows: dict[str, dict]) -> None:
    for path in [f for f in suite_files() if f.parent.name == "honest"]:
        row = gpu_rows[path.name]
        assert row["correct"] is True, (path.name, row["failure_kind"], row["failure_message"])

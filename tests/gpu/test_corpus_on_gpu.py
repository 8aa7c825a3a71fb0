"""The main job on a real GPU (marked `gpu`; run by bench/gpu_session.sh on the H200, never in CI).

Every bundled example is verified on the device: honest kernels must be correct and timed against the
reference in the same worker; broken ones must fail with the kind their file name says. The per-task
timing table is written to $KV_RESULTS_DIR (when set) for the closing note and bench/results/.
"""

from __future__ import annotations

import math
import os
from pathlib import Path

import pyarrow.parquet as pq
import pytest

torch = pytest.importorskip("torch")
pytestmark = [
    pytest.mark.gpu,
    pytest.mark.skipif(not torch.cuda.is_available(), reason="needs a CUDA or ROCm GPU"),
]


# KV_GPU_TARGETS=hip runs one half (a device call is short); both by default.
TARGETS = [target for target in os.environ.get("KV_GPU_TARGETS", "triton,hip").split(",") if target]


@pytest.fixture(scope="module", params=TARGETS)
def gpu_rows(request: pytest.FixtureRequest, tmp_path_factory: pytest.TempPathFactory) -> list[dict]:
    target = request.param
    from kernelvault.pipelines.candidates import ExampleCandidates
    from kernelvault.pipelines.corpus_job import run_corpus_job
    from kernelvault.toolchain.tasks import load_tasks
    from kernelvault.toolchain.verify import Verifier, VerifyConfig

    out = tmp_path_factory.mktemp(f"gpu-corpus-{target}")
    verifier = Verifier(VerifyConfig(timeout_s=60.0))
    summary = run_corpus_job(
        load_tasks(None), ExampleCandidates(target), verifier, out, target, progress=True
    )
    print(summary.table())
    rows = [row for shard in summary.shards for row in pq.read_table(shard).to_pylist()]
    results = os.environ.get("KV_RESULTS_DIR")
    if results:
        Path(results).mkdir(parents=True, exist_ok=True)
        (Path(results) / f"gpu_examples_{target}.md").write_text(timing_table(rows))
    return rows


def timing_table(rows: list[dict]) -> str:
    lines = [
        "| task | example | result | speedup | candidate ms (median) | reference ms (median) | spread cand / ref | reps |",
        "|---|---|---|---|---|---|---|---|",
    ]
    for row in sorted(
        rows, key=lambda r: (r["failure_kind"] is not None, r["task_name"], r["candidate_origin"])
    ):
        result = "correct" if row["correct"] else row["failure_kind"]
        for timing in row["timings"] or [None]:
            if timing is None:
                lines.append(
                    f"| {row['task_name']} | {row['candidate_origin']} | {result} | – | – | – | – | – |"
                )
                continue
            lines.append(
                f"| {row['task_name']} | {row['candidate_origin']} | {result} | {row['speedup']:.2f}× | "
                f"{timing['candidate_ms']:.4f} | {timing['reference_ms']:.4f} | "
                f"{timing['candidate_spread']:.1%} / {timing['reference_spread']:.1%} | {timing['repetitions']} |"
            )
    device = rows[0]["device"] if rows else "?"
    return f"Device: {device}, platform {rows[0]['platform'] if rows else '?'}\n\n" + "\n".join(lines) + "\n"


def expected_kind_on_device(origin: str) -> str | None:
    """The file name's kind, unless the example names another for this platform (`expect-cuda: KIND`)."""
    from kernelvault.contracts import Candidate
    from kernelvault.pipelines.candidates import expected_outcome

    relative = origin.removeprefix("example:")
    path = Path(__file__).resolve().parents[2] / "examples" / relative
    label = path.name.split("__")[0]
    candidate = Candidate("", "hip", path.read_text(), origin, expected_failure=label)
    return expected_outcome(
        candidate, "rocm" if getattr(torch.version, "hip", None) else "cuda", correct=False
    )


def test_honest_examples_are_correct_and_timed_on_the_device(gpu_rows: list[dict]) -> None:
    honest = [row for row in gpu_rows if "/broken/" not in row["candidate_origin"]]
    assert len(honest) >= 10
    for row in honest:
        assert row["platform"] in ("cuda", "rocm")
        assert row["compiled"] and row["correct"], (row["task_name"], row["failure_message"])
        assert row["timings"], row["task_name"]
        for timing in row["timings"]:
            assert timing["repetitions"] >= 50
            assert timing["candidate_ms"] > 0 and timing["reference_ms"] > 0
        assert row["speedup"] is not None and math.isfinite(row["speedup"]) and row["speedup"] > 0
        assert row["reward"] >= 1.4 and row["reward"] <= 2.9


def test_broken_examples_fail_with_their_kind_on_the_device(gpu_rows: list[dict]) -> None:
    broken = [row for row in gpu_rows if "/broken/" in row["candidate_origin"]]
    assert broken
    for row in broken:
        expected = expected_kind_on_device(row["candidate_origin"])
        assert row["failure_kind"] == expected, (row["candidate_origin"], row["failure_message"])
        assert row["correct"] is not True and row["speedup"] is None

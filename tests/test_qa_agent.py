"""ROCmQAGen against a real HTTP server that speaks the OpenAI API with scripted answers, through the CLI.

The agent writes (or is given) questions and answers them; the QA job checks the answers like any other
entry: a made-up `rocprim::` function is named in the row, a correct snippet compiles for gfx90a.
"""

from __future__ import annotations

import json
import shutil
from pathlib import Path

import pyarrow.parquet as pq
import pytest

from kernelvault.cli import main
from kernelvault.simulated_openai import Answer, FakeOpenAI

pytestmark = pytest.mark.skipif(
    shutil.which("hipcc") is None or not Path("/usr/include/rocprim/rocprim.hpp").is_file(),
    reason="needs Debian's hipcc and ROCm libraries (make installs them as root: librocprim-dev librocsparse-dev ...)",
)

INVENTED = """Use `rocprim::block_scan_turbo`, the fast block-wide scan.

```cpp
#include <rocprim/rocprim.hpp>
__global__ void scan(int* data) {
    int value = data[threadIdx.x];
    rocprim::block_scan_turbo<int, 256>(value);
    data[threadIdx.x] = value;
}
```
"""
CORRECT = """`rocprim::block_scan` does a block-wide scan; its `inclusive_scan` takes a value per thread, the output
and the block's shared storage (`storage_type`).

```cpp
#include <hip/hip_runtime.h>
#include <rocprim/rocprim.hpp>
__global__ void scan(int* data) {
    using block_scan_t = rocprim::block_scan<int, 256>;
    __shared__ block_scan_t::storage_type storage;
    int value = data[threadIdx.x];
    block_scan_t().inclusive_scan(value, value, storage);
    data[threadIdx.x] = value;
}
```
"""


def rows_of(out: Path) -> list[dict]:
    return [
        row
        for shard in sorted((out / "data" / "qa").glob("*.parquet"))
        for row in pq.read_table(shard).to_pylist()
    ]


def test_the_agent_answers_given_questions_and_the_checks_judge_its_answers(tmp_path: Path, capsys) -> None:
    server = FakeOpenAI(
        scenarios={"MARKER-TURBO": [Answer(INVENTED)], "MARKER-SCAN": [Answer(CORRECT, reasoning="think")]}
    )
    url, stop = server.start()
    questions = tmp_path / "questions.jsonl"
    questions.write_text("\n".join(json.dumps(item) for item in [
        {"question": "MARKER-TURBO: what is the fastest rocPRIM block scan?", "library": "rocprim", "topic": "rocprim::block_scan"},
        {"question": "MARKER-SCAN: how do I scan a block with rocPRIM?", "library": "rocprim", "topic": "rocprim::block_scan"},
        {"question": "no library here"},
    ]))  # fmt: skip
    try:
        code = main(["corpus", "--target", "qa", "--base-url", url, "--model", "scripted", "--questions",
                     str(questions), "--out", str(tmp_path / "out")])  # fmt: skip
    finally:
        stop()
    printed = capsys.readouterr().out
    assert code == 0 and "skipped question questions.jsonl:2: needs question and library" in printed
    rows = {row["question"].split(":")[0]: row for row in rows_of(tmp_path / "out")}
    turbo, scan = rows["MARKER-TURBO"], rows["MARKER-SCAN"]
    assert (
        turbo["invented"] == ["rocprim::block_scan_turbo"] and turbo["score"] == 0.0 and not turbo["verified"]
    )
    assert (scan["invented"], scan["compile_status"], scan["verified"], scan["score"]) == (
        [],
        "passed",
        True,
        1.0,
    )
    assert scan["origin"] == "model:scripted" and scan["model"] == "scripted" and scan["reasoning"] == "think"
    assert scan["topic_header"] == "rocprim/block/block_scan.hpp"
    # the same command again asks the model nothing: both questions have their rows
    asked_before = len(server.requests)
    url, stop = server.start()
    try:
        assert main(["corpus", "--target", "qa", "--base-url", url, "--model", "scripted", "--questions",
                     str(questions), "--out", str(tmp_path / "out")]) == 0  # fmt: skip
    finally:
        stop()
    assert len(server.requests) == asked_before and "2 already in" in capsys.readouterr().out
    # the answer prompt asks for one compilable block and ROCm-only APIs
    asked = [request.body["messages"] for request in server.requests]
    assert all("never CUDA-only calls" in messages[0]["content"] for messages in asked)


def test_the_agent_writes_questions_about_topics_of_the_inventory(tmp_path: Path) -> None:
    server = FakeOpenAI(
        scenarios={"Write a question": [Answer("How do I use it?")], "How do I use it?": [Answer(CORRECT)]}
    )
    url, stop = server.start()
    try:
        code = main(["corpus", "--target", "qa", "--base-url", url, "--model", "scripted", "--topics", "3",
                     "--libraries", "rocsparse", "--out", str(tmp_path / "out")])  # fmt: skip
    finally:
        stop()
    rows = rows_of(tmp_path / "out")
    assert (
        code == 0 and len(rows) == 1
    )  # the three topics got the same scripted question and answer: one entry
    asks = [request.body["messages"][1]["content"] for request in server.requests if "Write a question" in
            request.body["messages"][1]["content"]]  # fmt: skip
    assert len(asks) == 3 and all("from rocsparse (declared in rocsparse/" in ask for ask in asks)


def test_an_endpoint_that_stays_down_skips_the_entries_and_says_so(tmp_path: Path, capsys) -> None:
    server = FakeOpenAI(always_fail=400)
    url, stop = server.start()
    questions = tmp_path / "questions.yaml"
    questions.write_text("- {question: q, library: hip, topic: hipMalloc}\n")
    try:
        code = main(["corpus", "--target", "qa", "--base-url", url, "--model", "m", "--questions", str(questions),
                     "--out", str(tmp_path / "out")])  # fmt: skip
    finally:
        stop()
    captured = capsys.readouterr()
    assert code == 2 and "endpoint failure, skipped: hipMalloc:" in captured.out
    assert "the endpoint failed for all 1 requests; nothing written" in captured.err

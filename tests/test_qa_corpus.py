"""`make corpus TARGET=qa` on a fresh CPU machine: the bundled ROCm QA examples, checked, into `qa` shards.

Each bundled entry says what the checks must find (`expect` in examples/qa/*.yaml); the entries with a
deliberate mistake (an invented function, a wrong argument order, a snippet that does not compile, a
CUDA-only call, a missing library function, a wrong stated output) must each be caught by the check meant
for it, with the name or the compiler's message in the row. Then the release: the `qa` config, near-duplicate
questions, decontamination, the card's statistics and the SFT rows.
"""

from __future__ import annotations

import contextlib
import io
import shutil
from pathlib import Path

import datasets
import pyarrow.parquet as pq
import pytest

from kernelvault.cli import main
from kernelvault.corpus.card import build_card
from kernelvault.corpus.qa_release import load_qa_release, qa_card_lines
from kernelvault.corpus.release import build_release
from kernelvault.pipelines.qa_job import load_bundled_qa
from kernelvault.sft.config import load_config
from kernelvault.sft.data import load_sft_data

pytestmark = pytest.mark.skipif(
    shutil.which("hipcc") is None or not Path("/usr/include/rocprim/rocprim.hpp").is_file(),
    reason="needs Debian's hipcc and ROCm libraries (make installs them as root: librocprim-dev librocsparse-dev ...)",
)

# what a bundled expectation's `run` means on a machine without a GPU
RUN_ON_CPU = {"runnable": "no_gpu", "library": "library_calls", "not_applicable": "not_applicable"}


@pytest.fixture(scope="module")
def bundled(tmp_path_factory: pytest.TempPathFactory) -> tuple[Path, dict[str, dict], str]:
    out = tmp_path_factory.mktemp("qa") / "out"
    # A module-scoped fixture has no capsys: keep what the command printed, and its bar on stderr.
    printed = io.StringIO()
    with contextlib.redirect_stdout(printed), contextlib.redirect_stderr(printed):
        assert main(["corpus", "--target", "qa", "--out", str(out)]) == 0
    rows = {row["origin"]: row for shard in sorted((out / "data" / "qa").glob("*.parquet"))
            for row in pq.read_table(shard).to_pylist()}  # fmt: skip
    return out, rows, printed.getvalue()


def test_the_bundled_examples_cover_the_three_libraries_with_deliberate_mistakes() -> None:
    loaded = load_bundled_qa()
    libraries = [entry.library for entry in loaded.entries]
    assert len(loaded.entries) >= 40 and not loaded.skipped
    assert min(libraries.count(name) for name in ("hip", "rocprim", "rocsparse")) >= 10
    assert sum(entry.mistake is not None for entry in loaded.entries) >= 10


def test_every_bundled_entry_gets_what_its_expectation_says(bundled) -> None:
    _, rows, printed = bundled
    loaded = load_bundled_qa()
    assert len(rows) == len(loaded.entries) and f"checked {len(rows)} QA entries" in printed
    assert f"| {len(rows)}/{len(rows)} [" in printed  # the bar counted every row as it was written
    wrong = []
    for entry in loaded.entries:
        row, expect = rows[entry.origin], loaded.expectations[entry.entry_id]
        names = {status: sorted(item["name"] for item in row["identifiers"] if item["status"] == status)
                 for status in ("invented", "cuda_only")}  # fmt: skip
        got = (
            names["invented"],
            names["cuda_only"],
            row["compile_status"],
            row["link_status"],
            row["run_status"],
        )
        built = (
            expect["compile"] == "passed" and expect["link"] == "passed"
        )  # a program that did not build is not run
        want = (sorted(expect.get("invented") or []), sorted(expect.get("cuda_only") or []), expect["compile"],
                expect["link"], RUN_ON_CPU[expect["run"]] if built else "not_applicable")  # fmt: skip
        if got != want:
            wrong.append(f"{entry.origin}: {got} != {want}")
    assert not wrong, "\n".join(wrong)


def test_each_deliberate_mistake_is_caught_and_the_row_says_where(bundled) -> None:
    _, rows, _ = bundled
    mistakes = [row for row in rows.values() if row["mistake"]]
    for row in mistakes:
        caught_by_a_name = bool(row["invented"])
        caught_by_the_compiler = row["compile_status"] == "failed" and "error:" in row["compile_log"]
        caught_by_the_linker = row["link_status"] == "failed" and "undefined reference" in row["link_log"]
        left_to_the_gpu = row["run_status"] == "no_gpu" and row["stated_output"]  # a wrong stated output
        assert caught_by_a_name or caught_by_the_compiler or caught_by_the_linker or left_to_the_gpu, row[
            "origin"
        ]
        if not left_to_the_gpu:
            assert not row["verified"], row["origin"]
    kinds = {"name": 0, "compiler": 0, "linker": 0}
    for row in mistakes:
        kinds["name"] += bool(row["invented"])
        kinds["compiler"] += row["compile_status"] == "failed" and not row["invented"]
        kinds["linker"] += row["link_status"] == "failed"
    assert min(kinds.values()) >= 1, kinds


def test_correct_entries_pass_every_check_that_applies(bundled) -> None:
    _, rows, _ = bundled
    correct = [row for row in rows.values() if not row["mistake"]]
    assert correct and all(row["verified"] and row["score"] >= 0.5 for row in correct)
    assert all(row["compile_status"] == "passed" for row in correct if row["snippet"])
    programs = [row for row in correct if row["link_status"] != "not_applicable"]
    assert programs and all(row["link_status"] == "passed" for row in programs)
    assert all(
        row["platform"] == "cpu" and row["arch"] == "gfx90a" and row["isolation"] for row in rows.values()
    )


def test_the_rows_load_with_datasets_and_a_rerun_checks_nothing_again(bundled, capsys) -> None:
    out, rows, _ = bundled
    loaded = datasets.load_dataset("parquet", data_dir=str(out / "data" / "qa"), split="train")
    assert loaded.num_rows == len(rows) and "invented" in loaded.column_names
    assert main(["corpus", "--target", "qa", "--out", str(out)]) == 0
    assert f"checked 0 QA entries in 0 s ({len(rows)} already in the output)" in capsys.readouterr().out


def test_a_release_carries_the_qa_config_its_statistics_and_its_sft_turns(bundled, tmp_path) -> None:
    out, rows, _ = bundled
    verified = [row for row in rows.values() if row["verified"]]
    # a near-identical question (another answer, so another entry) and an evaluation set naming one entry
    twin, dropped = verified[0], verified[1]
    (tmp_path / "more.yaml").write_text(
        f"- library: {twin['library']}\n  topic: {twin['topic']}\n  question: {twin['question'].strip()!r}\n"
        "  answer: 'Call `hipDeviceSynchronize` first.'\n"
    )
    assert main(["corpus", "--target", "qa", "--qa", str(tmp_path / "more.yaml"), "--out", str(out)]) == 0
    eval_set = [dropped["question"]]
    report = build_release(out, tmp_path / "release", eval_questions=eval_set)
    qa = load_qa_release(tmp_path / "release")
    assert report.rows["qa"] == len(rows) and qa.num_rows == len(rows)  # one added, one dropped
    assert [item.entry_id for item in report.qa_contaminated] == [dropped["entry_id"]]
    marked = [row for row in qa.to_pylist() if row["duplicate_of"]]
    assert [row["answer"] for row in marked] == ["Call `hipDeviceSynchronize` first."]
    assert marked[0]["duplicate_of"] == twin["entry_id"]
    splits = datasets.load_dataset("parquet", data_dir=str(tmp_path / "release" / "sft"))
    # QA entries are held out too, apart from the kernel tasks
    sft = datasets.concatenate_datasets([splits["train"], splits["test"]])
    assert sft.num_rows == len(verified) - 1 and set(sft["target"]) == {"qa"}
    assert splits["test"].num_rows == report.held_out_qa > 0
    assert not set(splits["train"]["task_id"]) & set(splits["test"]["task_id"])
    assert sft[0]["messages"][1]["role"] == "user" and sft[0]["messages"][2]["role"] == "assistant"
    card = "\n".join(qa_card_lines(qa))
    for library in ("hip", "rocprim", "rocsparse", "all"):
        assert f"| {library} |" in card
    assert "| invented API |" in card and "No row proves a performance claim" in card
    card = build_card(tmp_path / "release", "kv/rocm", "0.1.0", [], [], qa_lines=qa_card_lines(qa))
    assert "qa" in [config["config_name"] for config in card.data.configs]
    assert "### ROCm library QA (`qa`)" in card.text
    # the SFT recipe takes them with `targets: [qa]` (or beside triton and hip)
    data = load_sft_data(load_config(None, {"dataset": str(tmp_path / "release"), "targets": ["qa"]}))
    assert data.train.num_rows == splits["train"].num_rows and data.eval.num_rows == splits["test"].num_rows
    assert data.train[0]["messages"][-1]["role"] == "assistant"
    no_sft = build_release(out, tmp_path / "release-no-sft", sft_qa=False)
    assert no_sft.rows["sft"] == 0 and no_sft.rows["qa"] == len(rows) + 1


def test_a_qa_file_that_cannot_be_read_is_one_line_and_a_bad_entry_is_skipped(tmp_path, capsys) -> None:
    broken = tmp_path / "broken.yaml"
    broken.write_text("- question: [unclosed\n")
    assert main(["corpus", "--target", "qa", "--qa", str(broken), "--out", str(tmp_path / "out")]) == 2
    assert capsys.readouterr().err.strip().count("\n") == 0
    mixed = tmp_path / "mixed.yaml"
    mixed.write_text("- {question: q, library: hip, topic: hipMalloc}\n"
                     "- {question: q2, answer: 'Use `hipFree`.', library: hip, topic: hipFree}\n")  # fmt: skip
    assert main(["corpus", "--target", "qa", "--qa", str(mixed), "--out", str(tmp_path / "out")]) == 0
    printed = capsys.readouterr().out
    assert (
        "skipped entry mixed.yaml:0: missing or empty answer" in printed and "checked 1 QA entries" in printed
    )


@pytest.mark.skipif(
    shutil.which("nvcc") is None, reason="needs nvcc (the CUDA toolkit) to build for the run check"
)
def test_the_runnable_programs_build_with_nvcc_through_the_hip_to_cuda_header() -> None:
    """The run check's build half, on a machine with nvcc and no GPU: every bundled HIP-runtime program reaches the
    H200's run (tests/gpu/test_qa_on_gpu.py runs them there)."""
    from kernelvault.toolchain.hip_build import find_hip_compiler
    from kernelvault.toolchain.jail import probe_isolation
    from kernelvault.toolchain.qa_build import SnippetBuilder, complete_translation_unit, extract_snippet

    found = find_hip_compiler("cuda", "sm_90")
    builder = SnippetBuilder(None, probe_isolation(), 180.0, nvcc=found)
    loaded = load_bundled_qa()
    runnable = [entry for entry in loaded.entries if loaded.expectations[entry.entry_id]["run"] == "runnable"]
    built = {entry.origin: builder.build_for_nvidia(complete_translation_unit(extract_snippet(entry.answer).code))
             for entry in runnable}  # fmt: skip
    assert len(built) >= 10
    assert all(step.status == "passed" for step in built.values()), {o: s.log[:300] for o, s in built.items()}

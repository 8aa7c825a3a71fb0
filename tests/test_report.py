"""`kernelvault report`: hand-made runs (no verification needed) side by side, checked as a user sees them:
the HTML page loaded in headless Chromium (tables read back from the rendered DOM, every plot decoded
with a real size, a screenshot that is not blank), and the Markdown.

Chromium comes from Debian (`apt-get install chromium`); without it the rendering checks are skipped
with that reason. `chromium_check` is also used by tests/test_eval.py.
"""

from __future__ import annotations

import argparse
import html
import json
import os
import re
import shutil
import subprocess
from pathlib import Path
from typing import Any

import numpy as np
import pytest

from kernelvault.cli.report import register as add_report_parser
from kernelvault.contracts import Candidate, RunEnvironment, Task, Verdict
from kernelvault.corpus.schema import attempt_row
from kernelvault.corpus.shards import ShardWriter
from kernelvault.pipelines.eval_metrics import EvalSettings, SuiteTask, write_settings
from kernelvault.pipelines.eval_report import ReportInputError, load_runs, write_report
from kernelvault.toolchain.reward import graded_reward, trajectory_return
from kernelvault.toolchain.tasks import load_task_file

ROOT = Path(__file__).resolve().parents[1]

# Collects what the rendered page shows, after every image has loaded, into a <pre> that --dump-dom prints.
CHECK_SCRIPT = """<script>
window.addEventListener("load", () => {
  const text = (cell) => cell.textContent.trim();
  const tables = {};
  for (const table of document.querySelectorAll("table")) {
    tables[table.id] = {
      header: [...table.querySelectorAll("thead th")].map(text),
      rows: [...table.querySelectorAll("tbody tr")].map((tr) => [...tr.children].map(text)),
      renderedWidth: table.getBoundingClientRect().width,
    };
  }
  const images = [...document.images].map((img) => ({
    id: img.id, complete: img.complete, naturalWidth: img.naturalWidth, naturalHeight: img.naturalHeight,
    renderedWidth: img.getBoundingClientRect().width,
  }));
  const warnings = [...document.querySelectorAll(".warning")].map(text);
  const out = document.createElement("pre");
  out.id = "kv-check";
  out.textContent = JSON.stringify({ tables, images, warnings });
  document.body.appendChild(out);
});
</script>"""


def find_chromium() -> str | None:
    for name in (os.environ.get("KV_CHROMIUM"), "chromium", "chromium-browser", "google-chrome"):
        if name and shutil.which(name):
            return shutil.which(name)
    return None


def _chromium(*args: str, profile: Path) -> subprocess.CompletedProcess[str]:
    binary = find_chromium()
    assert binary is not None
    command = [binary, "--headless", "--no-sandbox", "--disable-gpu", "--disable-dev-shm-usage",
               "--no-first-run", f"--user-data-dir={profile}", *args]  # fmt: skip
    return subprocess.run(command, capture_output=True, text=True, timeout=120, check=False)


def chromium_check(page: Path, work: Path, screenshot: bool = True) -> dict[str, Any]:
    """Load `page` in headless Chromium: the rendered tables, images and warnings, and a screenshot's colours.

    A copy of the page with CHECK_SCRIPT appended (the report itself has no script) goes through
    --dump-dom; with `screenshot`, the page itself is also painted with --screenshot.
    """
    work.mkdir(parents=True, exist_ok=True)
    checked = work / "checked.html"
    checked.write_text(page.read_text(encoding="utf-8").replace("</body>", CHECK_SCRIPT + "</body>"), "utf-8")
    dumped = _chromium("--dump-dom", checked.resolve().as_uri(), profile=work / "profile-dom")
    match = re.search(r'<pre id="kv-check">(.*?)</pre>', dumped.stdout, re.DOTALL)
    assert match, f"Chromium did not render the page (exit {dumped.returncode}): {dumped.stderr[-2000:]}"
    result = json.loads(html.unescape(match.group(1)))
    if screenshot:
        path = work / "screenshot.png"
        shot = _chromium(f"--screenshot={path}", "--window-size=1280,2400", "--hide-scrollbars",
                         page.resolve().as_uri(), profile=work / "profile-shot")  # fmt: skip
        assert path.is_file(), f"no screenshot (exit {shot.returncode}): {shot.stderr[-2000:]}"
        import matplotlib.image

        pixels = matplotlib.image.imread(path)
        result["screenshot_colours"] = len(np.unique(pixels.reshape(-1, pixels.shape[-1]), axis=0))
    return result


# ---------------------------------------------------------------------------------------------------
# Hand-made runs


def task(name: str) -> Task:
    return load_task_file(ROOT / "tasks" / f"{name}.py", origin="bundled")


NO_COMPILE = ("parse_error", "static_reject", "compile_error", "interface_error")


def trajectory(run_id: str, model: str, platform: str, item: Task, sample: int,
               outcomes: list[tuple[str, float | None]], turns: int) -> list[dict[str, Any]]:  # fmt: skip
    """Rows of one trajectory; outcomes are ("correct", speedup) or (failure kind, None), turn by turn."""
    verdicts = []
    for outcome, speedup in outcomes:
        compiled = outcome not in NO_COMPILE
        kind = None if outcome == "correct" else outcome
        verdicts.append(Verdict(
            task_id=item.task_id, target="triton", candidate_hash="0" * 16, code="pass", compiled=compiled,
            correct=outcome == "correct", failure_kind=kind, failure_message=kind, stages=(), speedup=speedup,
            environment=RunEnvironment(platform, "test device", "gfx942"),  # type: ignore[arg-type]
            reward=graded_reward(compiled, outcome == "correct", speedup, kind),
        ))  # fmt: skip
    total = trajectory_return([v.reward.total for v in verdicts if v.reward])
    return [
        attempt_row(
            run_id,
            item,
            Candidate(item.task_id, "triton", "answer", f"model:{model}"),
            verdict,
            sample_index=sample,
            turn=turn,
            model=model,
            sampling={"max_turns": turns},
            prompt_tokens=1000,
            completion_tokens=250,
            trajectory_return=total,
        )  # fmt: skip
        for turn, verdict in enumerate(verdicts)
    ]


def write_run(folder: Path, run_id: str, rows: list[dict[str, Any]], settings: EvalSettings | None) -> Path:
    with ShardWriter(folder, config="triton", run_id=run_id) as writer:
        writer.write_many(rows)
    if settings is not None:
        write_settings(folder, settings, {"run_id": run_id, "contamination": []})
    return folder


@pytest.fixture(scope="module")
def runs(tmp_path_factory: pytest.TempPathFactory) -> dict[str, Path]:
    base = tmp_path_factory.mktemp("report")
    softmax, row_sum = task("softmax"), task("row_sum")
    timed = [
        *trajectory("gpu-run", "timed-model", "cuda", softmax, 0, [("correct", 1.8)], 2),
        *trajectory("gpu-run", "timed-model", "cuda", softmax, 1, [("mismatch", None), ("correct", 0.9)], 2),
        *trajectory("gpu-run", "timed-model", "cuda", row_sum, 0, [("compile_error", None), ("correct", 3.0)], 2),
        *trajectory("gpu-run", "timed-model", "cuda", row_sum, 1, [("correct", 1.2)], 2),
    ]  # fmt: skip
    settings = EvalSettings(
        model="timed-model", suite="bundled", target="triton", samples=2, turns=2,
        tasks=tuple(SuiteTask(t.task_id, t.name, t.category) for t in (softmax, row_sum)),
    )  # fmt: skip
    # A folder `kernelvault corpus` wrote with a model: no eval/settings.json, budget read from the rows.
    untimed = [
        *trajectory("cpu-run", "cpu-model", "cpu", softmax, 0, [("parse_error", None), ("correct", None)], 3),
        *trajectory("cpu-run", "cpu-model", "cpu", softmax, 1, [("runtime_error", None)] * 3, 3),
    ]  # fmt: skip
    return {
        "timed": write_run(base / "timed", "gpu-run", timed, settings),
        "corpus": write_run(base / "corpus", "cpu-run", untimed, None),
        "base": base,
    }


def cli(*argv: str) -> int:
    parser = argparse.ArgumentParser(prog="kernelvault")
    add_report_parser(parser.add_subparsers(dest="command", required=True))
    args = parser.parse_args(argv)
    return args.handler(args)


def test_a_corpus_folder_without_eval_settings_is_read_from_its_rows(runs: dict[str, Path]) -> None:
    (view,) = load_runs(runs["corpus"])
    m = view.metrics
    assert (m.model, m.samples, m.turns, m.tasks, m.attempts) == ("cpu-model", 2, 3, 1, 5)
    assert m.corr_at == {1: 0.0, 2: 0.5, 3: 0.5} and m.pass_at == {1: 0.0, 2: 0.0}
    assert m.fast[1.0] is None and m.speed_unmeasured == 1


def test_report_of_timed_and_untimed_runs_renders_in_chromium(runs: dict[str, Path]) -> None:
    out = runs["base"] / "out"
    assert (
        cli("report", str(runs["timed"]), str(runs["corpus"]), "--out", str(out), "--title", "Two runs") == 0
    )
    markdown = (out / "report.md").read_text()
    assert markdown.startswith("# Two runs")
    # fast_p per task over its 2 trajectories' fastest correct kernels: softmax 1.8, 0.9; row_sum 3.0, 1.2.
    assert "| fast_1 | 75.0% | not measured |" in markdown
    assert "| fast_1.5 | 50.0% | not measured |" in markdown
    assert "| fast_2 | 25.0% | not measured |" in markdown
    geomean = (1.8 * 0.9 * 3.0 * 1.2) ** 0.25
    assert f"| geomean speedup (correct) | {geomean:.3f}x (4 timed) | not measured |" in markdown
    if find_chromium() is None:
        pytest.skip("headless Chromium not installed (apt-get install chromium): HTML rendering not checked")
    page = chromium_check(out / "report.html", out / "check")
    tables = page["tables"]
    assert set(tables) == {"runs", "results", "categories", "tasks"}
    assert tables["results"]["header"] == ["", "timed-model", "cpu-model"]
    rows = {row[0]: row[1:] for row in tables["results"]["rows"]}
    assert rows["Pass@1"] == ["50.0%", "0.0%"] and rows["Corr@2"] == ["100.0%", "50.0%"]
    assert rows["Corr@3"] == ["-", "50.0%"]  # the timed run had a budget of 2
    assert rows["fast_1"] == ["75.0%", "not measured"]
    assert [row[0] for row in tables["categories"]["rows"]] == ["reduction", "softmax"]
    assert all(table["renderedWidth"] > 200 for table in tables.values())
    assert [image["id"] for image in page["images"]] == [
        "plot-correctness-by-category", "plot-speedup-distribution", "plot-reward-distribution",
        "plot-attempts-to-first-correct",
    ]  # fmt: skip
    for image in page["images"]:
        assert image["complete"] and image["naturalWidth"] == 750 and image["naturalHeight"] == 380, image
        assert image["renderedWidth"] > 300
    assert page["warnings"] == []
    assert page["screenshot_colours"] > 50


def test_report_refuses_a_folder_with_no_evaluation(tmp_path: Path) -> None:
    with pytest.raises(ReportInputError, match="no evaluation"):
        write_report([tmp_path], tmp_path / "out")
    rows = trajectory("examples", None, "cpu", task("relu"), 0, [("correct", None)], 1)  # type: ignore[arg-type]
    for row in rows:
        row["model"] = None  # bundled examples: not a model's evaluation
    write_run(tmp_path / "examples", "examples", rows, None)
    with pytest.raises(ReportInputError, match="no model attempts"):
        load_runs(tmp_path / "examples")


def test_a_run_with_nothing_correct_reports_zero_not_unmeasured(tmp_path: Path) -> None:
    # No correct kernel means no fast one either, timed or not: fast_p is 0, while the speedup is undefined.
    rows = trajectory(
        "r", "weak-model", "cpu", task("relu"), 0, [("mismatch", None), ("compile_error", None)], 2
    )
    write_run(tmp_path / "weak", "r", rows, None)
    files = write_report([tmp_path / "weak"], tmp_path / "out")
    markdown = files.markdown.read_text()
    assert "| fast_1.5 | 0.0% |" in markdown and "| Corr@2 | 0.0% |" in markdown
    assert "| geomean speedup (correct) | - |" in markdown and "| compile rate | 50.0% (1/2) |" in markdown
    assert len(files.plots) == 4 and all(path.read_bytes().startswith(b"\x89PNG") for path in files.plots)


def test_names_from_the_rows_are_escaped_in_the_html_page(tmp_path: Path) -> None:
    """The page is a jinja2 template with autoescape: a model name or a note that looks like markup is shown as
    text, never run or parsed as HTML."""
    hostile = '<img src=x onerror="alert(1)">'
    rows = trajectory("r", hostile, "cpu", task("relu"), 0, [("correct", None)], 1)
    write_run(tmp_path / "hostile", "r", rows, None)
    files = write_report([tmp_path / "hostile"], tmp_path / "out", title="<b>bold</b> & more")
    page = files.html.read_text(encoding="utf-8")
    assert hostile not in page and "<b>bold</b>" not in page and "<script" not in page
    assert html.escape(hostile, quote=False).replace('"', "&#34;") in page
    assert "<h1>&lt;b&gt;bold&lt;/b&gt; &amp; more</h1>" in page and page.count('<table id="') == 4
    assert page.count('src="data:image/png;base64,') == 4

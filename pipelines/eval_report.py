"""`kernelvault report RUN_DIR…`: evaluation runs side by side, as one static HTML page and as Markdown.

    RUN_DIR/eval/settings.json + RUN_DIR/data/TARGET/*.parquet ──► eval_metrics ──► OUT/report.html
                                                                                    OUT/report.md + plots/

The metrics are recomputed from the attempt rows, so a report is never staler than the data. A folder
written by `kernelvault corpus` with a model (no eval/settings.json) is read too: each of its runs
becomes a column, with the budget read from the rows (samples from the sample indices, turns from the
recorded sampling settings) and the suite taken to be the tasks that appear in them, so trajectories
lost to provider errors cannot be counted as missing there.

The HTML page (`report.html.jinja`, rendered by jinja2 with autoescape on) is self-contained: styles inline,
plots as PNG data URIs, no script and no network, so it can be mailed, archived or attached to a model card
as it is. Plots: correctness by category, the
speedup distribution, the reward distribution and attempts to the first correct kernel.
"""

from __future__ import annotations

import base64
import io
import json
import math
from collections import Counter, defaultdict
from collections.abc import Sequence
from dataclasses import dataclass, replace
from datetime import datetime, timezone
from pathlib import Path
from typing import Any

import jinja2

from kernelvault.contracts import TARGETS
from kernelvault.pipelines.eval_metrics import (
    EvalMetrics,
    EvalSettings,
    SuiteTask,
    answer_metrics,
    attempt_rows,
    compute_eval_metrics,
    metric_rows,
    percent,
    read_settings,
    run_metrics,
)

PLOTS: tuple[tuple[str, str], ...] = (
    ("correctness-by-category", "Correctness by category"),
    ("speedup-distribution", "Speedup distribution"),
    ("reward-distribution", "Reward distribution"),
    ("attempts-to-first-correct", "Attempts to the first correct kernel"),
)
REWARD_EDGES = [round(0.1 * i, 1) for i in range(30)]  # 0.0 … 2.9, the graded reward's range


class ReportInputError(ValueError):
    """A run folder with nothing to report (one-line message)."""


@dataclass(frozen=True)
class RunView:
    label: str  # the run's column header
    run_dir: Path
    run_id: str
    metrics: EvalMetrics
    clean_metrics: EvalMetrics | None
    contamination: tuple[dict[str, Any], ...]  # corpus.dedup.Contamination fields
    training_corpus: str | None = None  # what the suite was checked against; None: not checked


def view_of(run_dir: Path, run_id: str, metrics: EvalMetrics, clean: EvalMetrics | None,
            contamination: Sequence[dict[str, Any]], training_corpus: str | None = None) -> RunView:  # fmt: skip
    return RunView(
        metrics.model, Path(run_dir), run_id, metrics, clean, tuple(contamination), training_corpus
    )


def load_runs(run_dir: Path) -> list[RunView]:
    """The evaluation in run_dir (eval/settings.json), else every model run found in its shards."""
    run_dir = Path(run_dir)
    if not run_dir.is_dir():
        raise ReportInputError(f"no run folder at {run_dir}")
    found = read_settings(run_dir)
    if found is not None:
        settings, data = found
        if settings.source == "answers":  # one view per model whose answers were verified
            return [view_of(run_dir, data["run_id"], metrics, clean, data.get("contamination", []),
                            data.get("training_corpus"))
                    for metrics, clean in answer_metrics(run_dir, settings, data["run_id"], data.get("not_written", {}))]  # fmt: skip
        metrics, clean = run_metrics(run_dir, settings, data["run_id"])
        return [view_of(run_dir, data["run_id"], metrics, clean, data.get("contamination", []),
                        data.get("training_corpus"))]  # fmt: skip
    views = []
    for target in TARGETS:
        by_run: dict[str, list[dict[str, Any]]] = defaultdict(list)
        for row in attempt_rows(run_dir, target):
            if row["model"] is not None:  # bundled example candidates are not a model's evaluation
                by_run[row["run_id"]].append(row)
        for run_id, rows in sorted(by_run.items()):
            metrics = compute_eval_metrics(rows, inferred_settings(rows, target))
            views.append(view_of(run_dir, run_id, metrics, None, []))
    if not views:
        raise ReportInputError(
            f"{run_dir} holds no evaluation (eval/settings.json) and no model attempts in data/{{triton,hip}}/"
        )
    return views


def inferred_settings(rows: Sequence[dict[str, Any]], target: str) -> EvalSettings:
    """Settings of a run that `kernelvault eval` did not write, read from its rows."""
    turns = max((json.loads(row["sampling"] or "{}").get("max_turns") or 0 for row in rows), default=0)
    tasks: dict[str, SuiteTask] = {}
    for row in rows:
        tasks.setdefault(row["task_id"], SuiteTask(row["task_id"], row["task_name"], row["task_category"]))
    origins = Counter(row["task_origin"] for row in rows if row["task_origin"])
    return EvalSettings(
        model=Counter(row["model"] for row in rows).most_common(1)[0][0],
        suite=origins.most_common(1)[0][0] if origins else "unknown",
        target=target,
        samples=max(row["sample_index"] for row in rows) + 1,
        turns=max(turns, max(row["turn"] for row in rows) + 1),
        tasks=tuple(sorted(tasks.values(), key=lambda task: task.name)),
    )


def unique_labels(views: list[RunView]) -> list[RunView]:
    """Column headers that tell the runs apart: the model, then the suite, then the run id if needed."""
    labels = [view.metrics.model for view in views]
    if len(set(labels)) < len(labels):
        labels = [f"{view.metrics.model} · {view.metrics.suite}" for view in views]
    if len(set(labels)) < len(labels):
        labels = [f"{label} · {view.run_id}" for label, view in zip(labels, views, strict=True)]
    return [replace(view, label=label) for label, view in zip(labels, views, strict=True)]


# ---------------------------------------------------------------------------------------------------
# Plots (matplotlib, Agg, PNG bytes)


def draw_plots(views: Sequence[RunView]) -> dict[str, bytes]:
    """name -> PNG for each of PLOTS. A plot with nothing to draw says so, and why, in its frame."""
    try:
        from matplotlib.backends.backend_agg import FigureCanvasAgg
        from matplotlib.figure import Figure
        from matplotlib.ticker import FuncFormatter, MaxNLocator, NullFormatter, PercentFormatter
    except ImportError as error:  # pragma: no cover - matplotlib is a core dependency
        raise ImportError("report plots need matplotlib: pip install matplotlib") from error

    labels = [view.label for view in views]
    metrics = [view.metrics for view in views]
    colours = [f"C{i % 10}" for i in range(len(views))]  # one colour per run in every plot
    pngs: dict[str, bytes] = {}

    def new_axes(title: str) -> tuple[Any, Any]:
        figure = Figure(figsize=(7.5, 3.8), layout="constrained")
        FigureCanvasAgg(figure)
        axes = figure.add_subplot()
        axes.set_title(title, fontsize=11)
        return figure, axes

    def save(name: str, figure: Any) -> None:
        buffer = io.BytesIO()
        figure.savefig(buffer, format="png", dpi=100)
        pngs[name] = buffer.getvalue()

    def no_data(axes: Any, text: str) -> None:
        axes.text(0.5, 0.5, text, ha="center", va="center", transform=axes.transAxes, wrap=True)
        axes.set_xticks([])
        axes.set_yticks([])

    width = 0.8 / max(1, len(views))

    # Correctness by category: Corr@T bars, Pass@1 as a marker on each bar.
    figure, axes = new_axes("Correctness by category: Corr@T (bars) and Pass@1 (◆)")
    categories = sorted({c.category for m in metrics for c in m.per_category})
    measured = any(c.corr_at_budget is not None for m in metrics for c in m.per_category)
    if categories and measured:
        for i, (label, m) in enumerate(zip(labels, metrics, strict=True)):
            by_name = {c.category: c for c in m.per_category}
            xs = [j + (i - (len(views) - 1) / 2) * width for j in range(len(categories))]
            corr = [by_name[c].corr_at_budget if c in by_name else None for c in categories]
            first = [by_name[c].pass_at_1 if c in by_name else None for c in categories]
            axes.bar(xs, [100 * (v or 0.0) for v in corr], width=width, label=f"{label} (T={m.turns})",
                     color=colours[i])  # fmt: skip
            axes.scatter([x for x, v in zip(xs, first, strict=True) if v is not None],
                         [100 * v for v in first if v is not None], marker="D", s=18, color="black",
                         zorder=3)  # fmt: skip
        axes.set_xticks(range(len(categories)), categories, rotation=30 if len(categories) > 5 else 0)
        axes.set_ylim(0, 105)
        axes.yaxis.set_major_formatter(PercentFormatter())
        axes.set_ylabel("tasks (mean over samples)")
        figure.legend(loc="outside right upper", fontsize=8)
    else:
        no_data(axes, "no correctness measured" if categories else "no tasks with recorded trajectories")
    save("correctness-by-category", figure)

    # Speedup distribution: the fastest correct kernel of each trajectory, log scale.
    figure, axes = new_axes("Speedup over the PyTorch reference (fastest correct kernel per trajectory)")
    timed = [
        (label, m.speedups, c) for label, m, c in zip(labels, metrics, colours, strict=True) if m.speedups
    ]
    if timed:
        values = [s for _, speedups, _ in timed for s in speedups]
        low, high = min(min(values), 1.0) / 1.25, max(max(values), 1.0) * 1.25
        bins = [low * (high / low) ** (i / 30) for i in range(31)]
        axes.hist([s for _, s, _ in timed], bins=bins, label=[label for label, _, _ in timed],
                  color=[c for _, _, c in timed])  # fmt: skip
        axes.set_xscale("log")
        ticks = [2.0**k for k in range(math.ceil(math.log2(low)), math.floor(math.log2(high)) + 1)]
        axes.set_xticks(ticks[:: max(1, math.ceil(len(ticks) / 10))])
        axes.xaxis.set_major_formatter(FuncFormatter(lambda value, _: f"{value:g}x"))
        axes.xaxis.set_minor_formatter(NullFormatter())
        axes.axvline(1.0, color="black", linestyle="--", linewidth=1)
        axes.set_xlabel("speedup (log scale; dashed: as fast as the reference)")
        axes.set_ylabel("trajectories")
        axes.yaxis.set_major_locator(MaxNLocator(integer=True))
        figure.legend(loc="outside right upper", fontsize=8)
    else:
        platforms = ", ".join(sorted({m.platform for m in metrics}))
        no_data(axes, f"no measured speedups: runs on {platforms} were not timed"
                if any(m.speed_unmeasured for m in metrics) else "no correct kernels, so no speedups")  # fmt: skip
    save("speedup-distribution", figure)

    # Reward distribution: every attempt, as a share of the run's attempts.
    figure, axes = new_axes("Reward per attempt")
    rewarded = [
        (label, m.rewards, c) for label, m, c in zip(labels, metrics, colours, strict=True) if m.rewards
    ]
    if rewarded:
        # Rounding keeps 1.4 (0.4 + 1.0 in floating point) in the bin [1.4, 1.5).
        data = [[min(round(r, 6), 2.899) for r in rewards] for _, rewards, _ in rewarded]
        weights = [[100 / len(rewards)] * len(rewards) for _, rewards, _ in rewarded]
        axes.hist(data, bins=REWARD_EDGES, weights=weights, label=[label for label, _, _ in rewarded],
                  color=[c for _, _, c in rewarded])  # fmt: skip
        axes.set_xlim(0, 2.9)
        axes.yaxis.set_major_formatter(PercentFormatter())
        axes.set_xlabel("graded reward (0: no compile · 0.4: compiles · 1.4: correct · up to 2.9: fast)")
        axes.set_ylabel("attempts")
        figure.legend(loc="outside right upper", fontsize=8)
    else:
        no_data(axes, "no attempts")
    save("reward-distribution", figure)

    # Attempts to the first correct kernel, as a share of each run's trajectories.
    figure, axes = new_axes("Attempts to the first correct kernel")
    longest = max((m.turns for m in metrics), default=0)
    keys = [str(k) for k in range(1, longest + 1)] + ["never"]
    if any(m.trajectories for m in metrics):
        for i, (label, m) in enumerate(zip(labels, metrics, strict=True)):
            total = max(1, m.trajectories)
            xs = [j + (i - (len(views) - 1) / 2) * width for j in range(len(keys))]
            axes.bar(xs, [100 * m.first_correct_histogram.get(k, 0) / total for k in keys], width=width,
                     label=label, color=colours[i])  # fmt: skip
        axes.set_xticks(range(len(keys)), [*keys[:-1], "not within T"])
        axes.yaxis.set_major_formatter(PercentFormatter())
        axes.set_xlabel("attempt (1 = first answer, each further one after feedback)")
        axes.set_ylabel("trajectories")
        figure.legend(loc="outside right upper", fontsize=8)  # outside: bars reach 100%
    else:
        no_data(axes, "no trajectories recorded")
    save("attempts-to-first-correct", figure)
    return pngs


# ---------------------------------------------------------------------------------------------------
# Tables shared by the HTML and Markdown documents: (header, rows of cells)


def runs_table(views: Sequence[RunView]) -> tuple[list[str], list[list[str]]]:
    header = ["run", "model", "suite", "target", "platform", "run id", "folder", "contaminated tasks"]
    rows = [
        [v.label, v.metrics.model, v.metrics.suite, v.metrics.target, v.metrics.platform, v.run_id,
         str(v.run_dir), _contamination_cell(v)]
        for v in views
    ]  # fmt: skip
    return header, rows


def _contamination_cell(view: RunView) -> str:
    if view.training_corpus is None:
        return "not checked (no training corpus given)"
    return f"{len(view.contamination)} (against {view.training_corpus})"


def results_table(runs: Sequence[EvalMetrics], labels: Sequence[str]) -> tuple[list[str], list[list[str]]]:
    return ["", *labels], [[label, *cells] for label, cells in metric_rows(runs)]


def category_table(views: Sequence[RunView]) -> tuple[list[str], list[list[str]]]:
    categories = sorted({c.category for v in views for c in v.metrics.per_category})
    rows = []
    for category in categories:
        row = [category]
        for view in views:
            found = next((c for c in view.metrics.per_category if c.category == category), None)
            row.append("-" if found is None else
                       f"{percent(found.pass_at_1)} / {percent(found.corr_at_budget)} ({found.tasks} task{'s' if found.tasks != 1 else ''})")  # fmt: skip
        rows.append(row)
    return ["category", *(f"{v.label}: Pass@1 / Corr@{v.metrics.turns}" for v in views)], rows


def task_table(views: Sequence[RunView]) -> tuple[list[str], list[list[str]]]:
    names = sorted({t.name for v in views for t in v.metrics.per_task})
    rows = []
    for name in names:
        row = [name]
        for view in views:
            task = next((t for t in view.metrics.per_task if t.name == name), None)
            if task is None:
                row.append("")
                continue
            speed = f" · {task.best_speedup:.2f}x" if task.best_speedup is not None else ""
            flag = " ⚠ in training corpus" if task.contaminated else ""
            row.append(f"{percent(task.pass_at_1)} / {percent(task.corr_at_budget)} "
                       f"({task.trajectories} traj.){speed}{flag}")  # fmt: skip
        rows.append(row)
    return ["task", *(f"{v.label}: Pass@1 / Corr@{v.metrics.turns}" for v in views)], rows


def warnings_of(view: RunView) -> list[str]:
    lines = []
    if view.contamination:
        names = ", ".join(
            f"{c['task_name']} ({c['kind']} match of {c['training_task']})" for c in view.contamination
        )
        lines.append(f"CONTAMINATION in {view.label}: {len(view.contamination)} of {view.metrics.tasks} suite "
                     f"task(s) overlap the model's training corpus: {names}. Their results measure recall, not "
                     "skill; the clean results leave them out.")  # fmt: skip
    return lines


DEFINITIONS: tuple[tuple[str, str], ...] = (
    ("attempt", "one model answer verified by the toolchain; answer 1 of a trajectory is attempt 1, each "
     "answer after feedback one more (an answer without code counts: it spent a turn)"),
    ("compile rate", "compiled attempts / attempts"),
    ("Pass@k", "mean over tasks of 1 − C(n−c, k) / C(n, k): n trajectories of the task, c of them correct at "
     "attempt 1"),
    ("Corr@k", "mean over tasks of the share of trajectories with a correct kernel among attempts 1..k"),
    ("Corr@k of samples (GEAK)", "mean over judged tasks of 1 − C(n−c, k) / C(n, k): n samples (trajectories or "
     "answers) of the task, c of them correct at any attempt; GEAK-eval's Corr@k, the published AMD figure"),
    ("call accuracy", "mean over judged tasks of the share of samples that compiled"),
    ("judged tasks", "tasks with a judged sample; the others (every attempt an infrastructure_error, or no "
     "sample) are counted out of every mean and listed with their reason"),
    ("fast_p", "mean over tasks of the share of trajectories whose fastest correct kernel has speedup > p "
     "(fast_0: solved at all); not measured where nothing was timed"),
    ("geomean speedup", "exp(mean log s) over the fastest timed correct kernel of each solved trajectory"),
    ("mean reward / return", "graded reward per attempt; G = r1 + 0.6 r2 + 0.36 r3 per trajectory"),
    ("tokens / cost per correct kernel", "(prompt + completion tokens) / correct attempts; cost = prompt × "
     "price_prompt + completion × price_completion (USD per million tokens)"),
)  # fmt: skip


# ---------------------------------------------------------------------------------------------------
# Documents


# The page is a jinja2 template with autoescape on (model names, task names and notes come from the rows).
TEMPLATES = jinja2.Environment(
    loader=jinja2.FileSystemLoader(Path(__file__).resolve().parent),
    autoescape=True,
    undefined=jinja2.StrictUndefined,
    trim_blocks=True,
    lstrip_blocks=True,
    keep_trailing_newline=False,
)


def html_document(views: Sequence[RunView], plots: dict[str, bytes], title: str) -> str:
    labels = [view.label for view in views]
    clean = [view for view in views if view.clean_metrics is not None]
    clean_table = results_table([v.clean_metrics for v in clean], [v.label for v in clean])  # type: ignore[misc]
    return TEMPLATES.get_template("report.html.jinja").render(
        title=title,
        runs=len(views),
        generated=f"{datetime.now(timezone.utc):%Y-%m-%d %H:%M}",
        warnings=[line for view in views for line in warnings_of(view)],
        runs_table=runs_table(views),
        results_table=results_table([v.metrics for v in views], labels),
        notes=[(view.label, note) for view in views for note in view.metrics.notes],
        clean_table=clean_table if clean else None,
        plots=[(name, caption, base64.b64encode(plots[name]).decode("ascii")) for name, caption in PLOTS],
        category_table=category_table(views),
        task_table=task_table(views),
        definitions=DEFINITIONS,
    )


def _markdown_table(header: list[str], rows: list[list[str]]) -> str:
    def clean(cell: str) -> str:
        return cell.replace("|", "\\|").replace("\n", " ")

    lines = ["| " + " | ".join(clean(c) for c in header) + " |", "|---" * len(header) + "|"]
    return "\n".join([*lines, *("| " + " | ".join(clean(c) for c in row) + " |" for row in rows)])


def markdown_document(views: Sequence[RunView], title: str, plot_files: dict[str, str] | None = None) -> str:
    """The report as Markdown (plots as image links when `plot_files` maps plot names to paths)."""
    labels = [view.label for view in views]
    parts = [f"# {title}", ""]
    for view in views:
        parts += [f"> **⚠ {line}**" for line in warnings_of(view)] + ([""] if view.contamination else [])
    parts += ["## Runs", "", _markdown_table(*runs_table(views)), ""]
    parts += ["## Results", "", _markdown_table(*results_table([v.metrics for v in views], labels)), ""]
    parts += [f"- {view.label}: {note}" for view in views for note in view.metrics.notes]
    parts += ["", '"≥ x": a lower bound; "not measured": the platform did not measure it (not 0).', ""]
    clean = [view for view in views if view.clean_metrics is not None]
    if clean:
        parts += ["## Results without contaminated tasks", "",
                  _markdown_table(*results_table([v.clean_metrics for v in clean],  # type: ignore[misc]
                                                 [v.label for v in clean])), ""]  # fmt: skip
    if plot_files:
        parts += ["## Plots", ""]
        parts += [f"![{caption}]({plot_files[name]})" for name, caption in PLOTS if name in plot_files]
        parts.append("")
    parts += ["## By category", "", _markdown_table(*category_table(views)), ""]
    parts += ["## By task", "", _markdown_table(*task_table(views)), ""]
    parts += ["## Definitions", ""] + [f"- **{term}**: {text}" for term, text in DEFINITIONS]
    parts += ["", "Full definitions with formulas: docs/evaluation.md.", ""]
    return "\n".join(parts)


@dataclass(frozen=True)
class ReportFiles:
    html: Path
    markdown: Path
    plots: tuple[Path, ...]


def write_report(
    run_dirs: Sequence[Path], out_dir: Path, title: str = "KernelVault evaluation report"
) -> ReportFiles:
    """Load every run folder, draw the plots and write OUT/report.html, report.md and plots/*.png."""
    views = unique_labels([view for run_dir in run_dirs for view in load_runs(Path(run_dir))])
    plots = draw_plots(views)
    out_dir = Path(out_dir)
    (out_dir / "plots").mkdir(parents=True, exist_ok=True)
    plot_paths = []
    for name, png in plots.items():
        path = out_dir / "plots" / f"{name}.png"
        path.write_bytes(png)
        plot_paths.append(path)
    html_path = out_dir / "report.html"
    html_path.write_text(html_document(views, plots, title), encoding="utf-8")
    markdown_path = out_dir / "report.md"
    markdown_path.write_text(
        markdown_document(views, title, {name: f"plots/{name}.png" for name in plots}), encoding="utf-8"
    )
    return ReportFiles(html_path, markdown_path, tuple(plot_paths))

"""Statistics of a corpus config (`triton`, `hip`): what the dataset card and the release notes report.

`compute_stats` turns attempt rows (ATTEMPT_SCHEMA) into one `ConfigStats`; `format_table` prints several
side by side; `write_plots` draws reward, speedup and failure charts with matplotlib.

What the numbers mean, so that nothing claims more than was measured:
- `correct` counts rows whose correctness was established (`correct is True`). Rows with `correct` null
  (the platform could not run the candidate, e.g. a HIP kernel compiled on a CPU-only machine) are counted
  in `correct_unknown`, never as correct and never as wrong.
- Speedup figures use only correct rows with a measured, finite, positive speedup; rows from `cpu` carry
  none. "Faster than 2x" means a speedup strictly above 2.
- An undefined figure (a rate over zero attempts, a speedup mean over zero timings) is None and prints as
  "-", never as 0.
"""

from __future__ import annotations

import math
from collections import Counter
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import numpy as np
import pyarrow as pa
import pyarrow.compute as pc
import pyarrow.parquet as pq

from kernelvault.corpus.schema import ATTEMPT_SCHEMA, SchemaVersionError, conform

REWARD_MAX = 2.9  # the graded reward lies in [0, 2.9] (toolchain/reward.py)
REWARD_BIN_WIDTH = 0.1
REWARD_BIN_EDGES: tuple[float, ...] = tuple(round(i * REWARD_BIN_WIDTH, 1) for i in range(30))  # 0.0 … 2.9
SPEEDUP_THRESHOLDS: tuple[float, ...] = (1.0, 1.5, 2.0)


@dataclass(frozen=True)
class ConfigStats:
    config: str
    attempts: int
    compiled: int
    correct: int  # correct is True
    correct_unknown: int  # compiled, but the platform could not establish correctness (correct is null)
    compile_rate: float | None  # compiled / attempts
    correct_rate: float | None  # correct / attempts
    mean_reward: float | None
    reward_p10: float | None
    reward_p50: float | None
    reward_p90: float | None
    reward_histogram: tuple[int, ...]  # counts over the bins between REWARD_BIN_EDGES (width 0.1)
    speedups: int  # correct rows with a measured speedup
    speedup_geomean: float | None
    speedup_p10: float | None
    speedup_p50: float | None
    speedup_p90: float | None
    faster_than_1x: float | None  # share of `speedups` strictly above 1x
    faster_than_1_5x: float | None
    faster_than_2x: float | None
    failures: dict[str, int]  # failure kind -> rows, most frequent first
    platforms: dict[str, int]  # platform -> rows
    models: dict[str, int]  # model -> rows; bundled examples (model null) count as "examples"
    tasks: int  # distinct task ids


def _column(table: pa.Table, name: str) -> list[Any]:
    """A column as a Python list, or all nulls when the column is absent (older or partial tables)."""
    if name in table.column_names:
        return table.column(name).to_pylist()
    return [None] * table.num_rows


def _quantiles(values: Sequence[float]) -> tuple[float | None, float | None, float | None]:
    if not values:
        return None, None, None
    p10, p50, p90 = np.quantile(np.asarray(values, dtype=float), [0.1, 0.5, 0.9])
    return float(p10), float(p50), float(p90)


def _reward_bin(reward: float) -> int:
    """Bin index of a reward: width 0.1, a value on an edge goes to the bin above, 2.9 to the last bin."""
    # Rounding first keeps 1.4 (= 0.4 + 1.0 in floating point) in the bin [1.4, 1.5).
    index = math.floor(round(reward / REWARD_BIN_WIDTH, 6))
    return min(max(index, 0), len(REWARD_BIN_EDGES) - 2)


def _counts(values: Sequence[Any]) -> dict[str, int]:
    return dict(Counter(values).most_common())


def measured_speedups(table: pa.Table) -> list[float]:
    """Speedups of correct rows that have a measured, finite, positive speedup."""
    return [
        float(speedup)
        for correct, speedup in zip(_column(table, "correct"), _column(table, "speedup"), strict=True)
        if correct is True and speedup is not None and math.isfinite(speedup) and speedup > 0
    ]


def compute_stats(table: pa.Table, config: str) -> ConfigStats:
    """Statistics of the attempt rows of one config; missing optional columns count as nulls."""
    attempts = table.num_rows
    compiled_column = _column(table, "compiled")
    correct_column = _column(table, "correct")
    compiled = sum(1 for value in compiled_column if value is True)
    correct = sum(1 for value in correct_column if value is True)
    correct_unknown = sum(
        1
        for built, value in zip(compiled_column, correct_column, strict=True)
        if built is True and value is None
    )
    rewards = [float(value) for value in _column(table, "reward") if value is not None]
    histogram = [0] * (len(REWARD_BIN_EDGES) - 1)
    for reward in rewards:
        histogram[_reward_bin(reward)] += 1
    speedups = measured_speedups(table)

    def share(count: int, total: int) -> float | None:
        return count / total if total else None

    reward_p10, reward_p50, reward_p90 = _quantiles(rewards)
    speedup_p10, speedup_p50, speedup_p90 = _quantiles(speedups)
    faster = [share(sum(1 for s in speedups if s > t), len(speedups)) for t in SPEEDUP_THRESHOLDS]
    return ConfigStats(
        config=config,
        attempts=attempts,
        compiled=compiled,
        correct=correct,
        correct_unknown=correct_unknown,
        compile_rate=share(compiled, attempts),
        correct_rate=share(correct, attempts),
        mean_reward=sum(rewards) / len(rewards) if rewards else None,
        reward_p10=reward_p10,
        reward_p50=reward_p50,
        reward_p90=reward_p90,
        reward_histogram=tuple(histogram),
        speedups=len(speedups),
        speedup_geomean=math.exp(sum(math.log(s) for s in speedups) / len(speedups)) if speedups else None,
        speedup_p10=speedup_p10,
        speedup_p50=speedup_p50,
        speedup_p90=speedup_p90,
        faster_than_1x=faster[0],
        faster_than_1_5x=faster[1],
        faster_than_2x=faster[2],
        failures=_counts([kind for kind in _column(table, "failure_kind") if kind is not None]),
        platforms=_counts([platform for platform in _column(table, "platform") if platform is not None]),
        models=_counts([model if model is not None else "examples" for model in _column(table, "model")]),
        tasks=len({task for task in _column(table, "task_id") if task is not None}),
    )


def per_model_stats(table: pa.Table) -> list[ConfigStats]:
    """One column of statistics per model (answers of several models in one corpus: `corpus --answers`);
    empty when the rows come from fewer than two models."""
    models = sorted({model for model in _column(table, "model") if model is not None})
    if len(models) < 2:
        return []
    column = table.column("model")
    return [compute_stats(table.filter(pc.equal(column, model)), model) for model in models]


def load_attempts(folder: Path) -> pa.Table:
    """Every attempt shard (*.parquet, recursively, hidden files skipped) under `folder` as one table.

    Each file's schema version is checked first; a file this code cannot read raises SchemaVersionError
    naming the file. An empty folder gives an empty table of ATTEMPT_SCHEMA.
    """
    folder = Path(folder)
    if not folder.is_dir():
        raise FileNotFoundError(f"no attempt folder at {folder}")
    paths = sorted(
        path
        for path in folder.rglob("*.parquet")
        if not any(part.startswith(".") for part in path.relative_to(folder).parts)
    )
    tables = []
    for path in paths:
        try:
            tables.append(
                conform(pq.read_table(path))
            )  # refuses newer versions; older v1 layouts are upgraded
        except SchemaVersionError as error:
            raise SchemaVersionError(f"{path}: {error}") from None
    if not tables:
        return ATTEMPT_SCHEMA.empty_table()
    return pa.concat_tables(tables)


def _percent(value: float | None) -> str:
    return "-" if value is None else f"{100 * value:.1f}%"


def _number(value: float | None, suffix: str = "") -> str:
    return "-" if value is None else f"{value:.3f}{suffix}"


def _table_rows(stats: Sequence[ConfigStats]) -> list[tuple[str, list[str]]]:
    """(label, one cell per config) for every line of the statistics table."""
    rows: list[tuple[str, list[str]]] = [
        ("attempts", [str(s.attempts) for s in stats]),
        ("tasks", [str(s.tasks) for s in stats]),
        ("compiled", [f"{s.compiled} ({_percent(s.compile_rate)})" for s in stats]),
        ("correct", [f"{s.correct} ({_percent(s.correct_rate)})" for s in stats]),
        ("correctness not established", [str(s.correct_unknown) for s in stats]),
        ("mean reward", [_number(s.mean_reward) for s in stats]),
        ("reward p10 / p50 / p90", [" / ".join(_number(v) for v in (s.reward_p10, s.reward_p50, s.reward_p90)) for s in stats]),
        ("measured speedups", [str(s.speedups) for s in stats]),
        ("speedup geomean", [_number(s.speedup_geomean, "x") for s in stats]),
        ("speedup p10 / p50 / p90", [" / ".join(_number(v, "x") for v in (s.speedup_p10, s.speedup_p50, s.speedup_p90)) for s in stats]),
        ("faster than 1x", [_percent(s.faster_than_1x) for s in stats]),
        ("faster than 1.5x", [_percent(s.faster_than_1_5x) for s in stats]),
        ("faster than 2x", [_percent(s.faster_than_2x) for s in stats]),
    ]  # fmt: skip
    for title, attribute in (("failure", "failures"), ("platform", "platforms"), ("model", "models")):
        keys = sorted({key for s in stats for key in getattr(s, attribute)})
        rows += [(f"{title}: {key}", [str(getattr(s, attribute).get(key, 0)) for s in stats]) for key in keys]
    return rows


def format_table(stats: Sequence[ConfigStats], markdown: bool = False) -> str:
    """The statistics side by side, one column per config: aligned plain text, or a Markdown table."""
    header = ["", *(s.config for s in stats)]
    rows = [[label, *cells] for label, cells in _table_rows(stats)]
    if markdown:
        lines = ["| " + " | ".join(header) + " |", "|" + "---|" * len(header)]
        lines += ["| " + " | ".join(row) + " |" for row in rows]
        return "\n".join(lines)
    widths = [max(len(row[i]) for row in [header, *rows]) for i in range(len(header))]
    lines = [
        "  ".join(cell.ljust(widths[i]) if i == 0 else cell.rjust(widths[i]) for i, cell in enumerate(row))
        for row in [header, *rows]
    ]
    return "\n".join(line.rstrip() for line in lines)


def _split_by_config(
    table: pa.Table | Mapping[str, pa.Table], stats: Sequence[ConfigStats]
) -> dict[str, pa.Table]:
    if isinstance(table, Mapping):
        return {s.config: table.get(s.config, ATTEMPT_SCHEMA.empty_table()) for s in stats}
    # One table for several configs: the attempt configs are named after the row's target.
    targets = _column(table, "target")
    return {
        s.config: table.filter(pa.array([target == s.config for target in targets], type=pa.bool_()))
        for s in stats
    }


def write_plots(
    table: pa.Table | Mapping[str, pa.Table], stats: Sequence[ConfigStats], out_dir: Path
) -> list[Path]:
    """Up to three PNGs per config: reward distribution, speedup distribution (log x), failures by kind.

    `table` is either a mapping config -> attempt rows, or one table whose rows are split by `target`
    (the attempt configs are named after their target). A plot with nothing to draw is not written: a corpus
    verified on CPU has no measured speedup, and an empty chart on a card says less than none. The paths
    returned are the plots written (the card links those).
    """
    try:
        from matplotlib.backends.backend_agg import FigureCanvasAgg
        from matplotlib.figure import Figure
        from matplotlib.ticker import FuncFormatter, MaxNLocator, NullFormatter
    except ImportError as error:
        raise ImportError(
            "plots need matplotlib, one of kernelvault's own dependencies: reinstall kernelvault (pip install kernelvault)"
        ) from error

    out_dir = Path(out_dir)
    out_dir.mkdir(parents=True, exist_ok=True)
    tables = _split_by_config(table, stats)
    written: list[Path] = []

    def save(figure: Figure, name: str) -> None:
        path = out_dir / name
        FigureCanvasAgg(figure)  # the Agg canvas, without touching pyplot's global backend
        figure.tight_layout()
        figure.savefig(path, format="png", dpi=100)
        written.append(path)

    for s in stats:
        figure = Figure(figsize=(6, 3.5))
        axes = figure.add_subplot()
        axes.set_title(f"{s.config}: reward per attempt ({s.attempts} attempts)")
        axes.set_xlabel("reward")
        axes.set_ylabel("attempts")
        if sum(s.reward_histogram):
            axes.bar(REWARD_BIN_EDGES[:-1], s.reward_histogram, width=REWARD_BIN_WIDTH, align="edge")
            axes.set_xlim(0, REWARD_MAX)
            axes.yaxis.set_major_locator(MaxNLocator(integer=True))
            save(figure, f"{s.config}-reward.png")

        speedups = measured_speedups(tables[s.config])
        figure = Figure(figsize=(6, 3.5))
        axes = figure.add_subplot()
        axes.set_title(f"{s.config}: speedup of correct kernels ({len(speedups)} measured)")
        axes.set_xlabel("speedup over the PyTorch reference (log scale)")
        axes.set_ylabel("attempts")
        if speedups:
            low, high = min(min(speedups), 1.0) / 1.25, max(max(speedups), 1.0) * 1.25
            axes.hist(speedups, bins=np.geomspace(low, high, 30))
            axes.set_xscale("log")
            # Ticks at powers of two: decades alone leave a typical 0.5x-4x range with a single label.
            ticks = [2.0**k for k in range(math.ceil(math.log2(low)), math.floor(math.log2(high)) + 1)]
            step = max(1, math.ceil(len(ticks) / 10))
            axes.set_xticks(ticks[::step])
            axes.axvline(1.0, color="black", linestyle="--", linewidth=1)
            axes.xaxis.set_major_formatter(FuncFormatter(lambda value, _: f"{value:g}x"))
            axes.xaxis.set_minor_formatter(NullFormatter())
            axes.yaxis.set_major_locator(MaxNLocator(integer=True))
            save(figure, f"{s.config}-speedup.png")

        figure = Figure(figsize=(6, 3.5))
        axes = figure.add_subplot()
        axes.set_title(f"{s.config}: failures by kind ({sum(s.failures.values())} of {s.attempts})")
        axes.set_xlabel("attempts")
        axes.set_ylabel("failure kind")
        if s.failures:
            kinds = list(s.failures)[::-1]  # most frequent at the top
            axes.barh(kinds, [s.failures[kind] for kind in kinds])
            axes.xaxis.set_major_locator(MaxNLocator(integer=True))
            save(figure, f"{s.config}-failures.png")
    return written

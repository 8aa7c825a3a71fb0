"""The metrics of one evaluation run (one model, one task suite), computed from its attempt rows.

An evaluation run is an agent run: `samples` independent trajectories per task, each of at most `turns`
attempts (draft → verify → reflect), every attempt a corpus row. The definitions, with their formulas,
are in docs/evaluation.md; in short:

- an *attempt* is one model answer that the toolchain verified. The first answer of a trajectory is
  attempt 1 and each answer after feedback is one more, whether or not it held code: an answer without
  code spent a turn of the budget like any other. A `provider_error` is not an attempt (the endpoint
  failed, not the model; the trajectory is not recorded and a rerun resumes it).
- Pass@k: the unbiased estimator 1 - C(n-c, k)/C(n, k) per task over its n trajectories, c of which
  were correct at attempt 1 (single-shot, no feedback), averaged over tasks.
- Corr@k: the share of trajectories with a correct kernel among their first k attempts, averaged over
  the samples of a task, then over tasks.
- fast_p: the share of trajectories whose fastest correct kernel is faster than the reference by more
  than p (speedup > p), averaged like Corr@k; fast_0 is the share of trajectories solved at all. On an
  optimisation suite (kernel-to-kernel: rows with a baseline) the speedups, fast_p and the geometric mean
  are over the task's baseline kernel, not PyTorch (`speedup_basis`): fast_1 is the share beating the baseline.
- Sample Corr@k (GEAK): the published AMD work's Corr@k on TritonBench-G and ROCmBench, k over *samples*:
  the unbiased estimator 1 - C(n-c, k)/C(n, k) per task, c the samples (trajectories) that ended with a
  correct kernel at any attempt, averaged over the judged tasks. It is GEAK-eval's own computation
  (`geak_eval/run.py`: per file, n = the passes, c = the passes whose exec_status is 1, `PassK` =
  1 - prod(1 - k/arange(n-c+1, n+1)), the same estimator in product form; mean over files), so `pass_at_k`
  serves both. Two departures, both stated: GEAK-eval skips k >= n, which leaves Corr@3 of 3 samples
  undefined; here k = n is reported (it is then the share of tasks with any correct sample, which is what
  "Corr@3" is read as). And its loop over several k does not reset its sums between k values; ours does.
  With one attempt per sample (`--answers`) it equals Pass@k.
- Call accuracy: the share of samples whose code compiled (`compiled` in a row: the module imported, the
  kernel built and the interface bound), averaged per task then over judged tasks: TritonBench's and
  GEAK-eval's call accuracy, read as KernelVault's compile stage.

Tasks that could not be judged are counted out of every denominator and listed with their reason
(`unjudged`): every attempt failed on our side (`infrastructure_error`, e.g. a reference that is not
deterministic), or no sample was recorded (an answer file with no answer matching the task; provider
errors in an agent run). `judged_tasks` is the denominator of the per-task means.

Nothing claims more than was measured. A correct kernel whose speed was not measured (the cpu platform
never times) is neither fast nor slow: fast_p for p > 0 is None when no correct kernel was timed, and a
lower bound (listed in `lower_bounds`) when only some were. Likewise for correctness: an attempt whose
correctness could not be established (`correct` null, a HIP kernel compiled on a machine without an
AMD GPU) makes the correctness metrics lower bounds, or None when no attempt's correctness was.
"""

from __future__ import annotations

import json
import math
from collections import Counter, defaultdict
from collections.abc import Sequence
from dataclasses import asdict, dataclass, field, replace
from pathlib import Path
from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    import pyarrow as pa

PASS_K_CHOICES: tuple[int, ...] = (1, 3, 5, 10, 20, 50, 100)  # reported when k <= samples (and k = samples)
FAST_P: tuple[float, ...] = (0.0, 1.0, 1.5, 2.0)
UNCATEGORISED = "uncategorised"
ROW_COLUMNS = (
    "run_id", "task_id", "task_name", "task_category", "task_origin", "sample_index", "turn", "compiled", "correct",
    "failure_kind", "speedup", "reward", "trajectory_return", "prompt_tokens", "completion_tokens",
    "platform", "model", "target", "sampling", "failure_message", "speedup_over_baseline", "baseline_hash",
)  # fmt: skip


@dataclass(frozen=True)
class Prices:
    """USD per million tokens. Unknown prices (None) make every cost figure None, never 0."""

    prompt: float | None = None
    completion: float | None = None

    def cost(self, prompt_tokens: int, completion_tokens: int) -> float | None:
        if self.prompt is None or self.completion is None:
            return None
        return (prompt_tokens * self.prompt + completion_tokens * self.completion) / 1e6


@dataclass(frozen=True)
class SuiteTask:
    task_id: str
    name: str
    category: str | None = None


@dataclass(frozen=True)
class EvalSettings:
    """What the metrics need beyond the rows: the suite as evaluated and the budget it was given."""

    model: str
    suite: str  # the --suite spec, or "bundled"
    target: str
    samples: int  # trajectories per task (K)
    turns: int  # attempts per trajectory (T)
    tasks: tuple[SuiteTask, ...]  # every task of the suite, so that unrecorded trajectories are counted
    prices: Prices = field(default_factory=Prices)
    contaminated: frozenset[str] = frozenset()  # task ids that overlap the model's training corpus
    source: str = "agent"  # "agent" (model at an endpoint) or "answers" (answers already written)

    def to_json(self) -> dict[str, Any]:
        data = asdict(self)
        data["contaminated"] = sorted(self.contaminated)
        return data

    @staticmethod
    def from_json(data: dict[str, Any]) -> EvalSettings:
        return EvalSettings(
            model=data["model"], suite=data["suite"], target=data["target"], samples=int(data["samples"]),
            turns=int(data["turns"]), tasks=tuple(SuiteTask(**task) for task in data["tasks"]),
            prices=Prices(**data.get("prices", {})), contaminated=frozenset(data.get("contaminated", ())),
            source=data.get("source", "agent"),
        )  # fmt: skip


@dataclass(frozen=True)
class TrajectoryOutcome:
    task_id: str
    sample_index: int
    attempts: int
    first_correct: int | None  # 1-based attempt number of the first correct kernel; None: not solved
    first_attempt: bool | None  # attempt 1 correct; None: its correctness could not be established
    best_speedup: float | None  # fastest measured speedup among the correct attempts
    correct_untimed: bool  # solved, but no correct attempt has a measured speedup
    trajectory_return: float | None
    compiled: bool = False  # some attempt compiled (call accuracy)
    unjudged: str | None = None  # every attempt failed on our side: the first one's message


@dataclass(frozen=True)
class TaskMetrics:
    task_id: str
    name: str
    category: str | None
    trajectories: int
    first_attempt_correct: int  # c of the pass@k estimator
    pass_at_1: float | None
    corr_at_budget: float | None  # Corr@T
    best_speedup: float | None
    contaminated: bool


@dataclass(frozen=True)
class CategoryMetrics:
    category: str
    tasks: int
    pass_at_1: float | None
    corr_at_budget: float | None


@dataclass(frozen=True)
class EvalMetrics:
    model: str
    suite: str
    target: str
    platform: str  # where the attempts were verified ("cpu", "cuda", "rocm"; "a+b" if mixed)
    samples: int
    turns: int
    tasks: int
    trajectories: int
    missing_trajectories: int  # tasks × samples not recorded (provider errors left for a resume)
    attempts: int
    compiled: int
    compile_rate: float | None
    correct_attempts: int
    correctness_unknown: int  # compiled attempts whose correctness could not be established
    pass_at: dict[int, float | None]  # k -> Pass@k
    corr_at: dict[int, float | None]  # k -> Corr@k, k = 1..turns
    fast: dict[float, float | None]  # p -> fast_p
    speed_measured: int  # solved trajectories whose fastest correct kernel has a measured speedup
    speed_unmeasured: int  # solved trajectories with no timed correct kernel
    geomean_speedup: float | None
    mean_reward: float | None
    mean_return: float | None
    failures: dict[str, int]  # failure kind -> attempts, most frequent first
    prompt_tokens: int
    completion_tokens: int
    tokens_per_correct: float | None
    cost_usd: float | None
    cost_per_correct_usd: float | None
    first_correct_histogram: dict[str, int]  # "1".."T", "never" -> trajectories
    per_task: tuple[TaskMetrics, ...]
    per_category: tuple[CategoryMetrics, ...]
    lower_bounds: tuple[str, ...]  # metric names whose value is only a lower bound
    notes: tuple[str, ...]  # what was not measured, and why
    contaminated_tasks: tuple[str, ...]  # names
    speedups: tuple[float, ...] = ()  # the fastest measured speedup of each solved trajectory (plots)
    rewards: tuple[float, ...] = ()  # the reward of every attempt (plots)
    sample_corr_at: dict[int, float | None] = field(default_factory=dict)  # k -> GEAK's Corr@k over samples
    call_accuracy: float | None = None  # share of samples that compiled, per task then over judged tasks
    judged_tasks: int = 0  # the denominator of the per-task means
    unjudged: tuple[tuple[str, str], ...] = ()  # (task name, reason) of suite tasks counted out
    speedup_basis: str = "pytorch"  # what speed is over: "pytorch", "baseline" (optimisation suites), "mixed"

    def headline(self) -> dict[str, float | None]:
        """The metrics by their published names: compile_rate, pass@k, corr@k, fast_p, …"""
        values: dict[str, float | None] = {"compile_rate": self.compile_rate}
        values |= {f"pass@{k}": v for k, v in self.pass_at.items()}
        values |= {f"corr@{k}": v for k, v in self.corr_at.items()}
        values |= {f"sample_corr@{k}": v for k, v in self.sample_corr_at.items()}
        values["call_accuracy"] = self.call_accuracy
        values |= {fast_name(p): v for p, v in self.fast.items()}
        values |= {
            "geomean_speedup": self.geomean_speedup, "mean_reward": self.mean_reward,
            "mean_return": self.mean_return, "tokens_per_correct": self.tokens_per_correct,
            "cost_usd": self.cost_usd, "cost_per_correct_usd": self.cost_per_correct_usd,
        }  # fmt: skip
        return values

    def to_json(self) -> dict[str, Any]:
        data = asdict(self)
        for raw in ("speedups", "rewards", "pass_at", "corr_at", "fast", "sample_corr_at"):
            data.pop(raw)
        data["metrics"] = self.headline()
        return data


def fast_name(p: float) -> str:
    return f"fast_{p:g}"


def pass_at_k(n: int, c: int, k: int) -> float:
    """The unbiased pass@k estimator (Chen et al. 2021): 1 - C(n-c, k) / C(n, k), for 1 <= k <= n.

    It is the probability that k trajectories drawn without replacement from the n recorded ones include
    a correct one; exact integer binomials, so large n loses nothing.
    """
    if not 0 <= c <= n or not 1 <= k <= n:
        raise ValueError(f"pass@k needs 0 <= c <= n and 1 <= k <= n (n={n}, c={c}, k={k})")
    if n - c < k:
        return 1.0
    return 1.0 - math.comb(n - c, k) / math.comb(n, k)


def pass_k_values(samples: int) -> tuple[int, ...]:
    return tuple(sorted({k for k in PASS_K_CHOICES if k <= samples} | ({samples} if samples >= 1 else set())))


def _mean(values: Sequence[float]) -> float | None:
    return sum(values) / len(values) if values else None


def _finite_speedup(value: Any) -> float | None:
    if value is None or not math.isfinite(value) or value <= 0:
        return None
    return float(value)


def _speed(row: dict[str, Any]) -> Any:
    """What a row's speed is judged by: over its baseline on an optimisation task, else over PyTorch."""
    return row.get("speedup_over_baseline") if row.get("baseline_hash") else row["speedup"]


def speedup_basis(rows: Sequence[dict[str, Any]]) -> str:
    """`pytorch`, `baseline` (every row of an optimisation task) or `mixed`."""
    kinds = {bool(row.get("baseline_hash")) for row in rows}
    return "mixed" if len(kinds) > 1 else "baseline" if kinds == {True} else "pytorch"


def trajectory_outcomes(rows: Sequence[dict[str, Any]]) -> list[TrajectoryOutcome]:
    """One outcome per (task, sample), from that trajectory's attempt rows."""
    groups: dict[tuple[str, int], list[dict[str, Any]]] = defaultdict(list)
    for row in rows:
        groups[(row["task_id"], row["sample_index"])].append(row)
    outcomes = []
    for (task_id, sample), attempts in sorted(groups.items()):
        attempts.sort(key=lambda row: row["turn"])
        correct = [i for i, row in enumerate(attempts) if row["correct"] is True]
        speedups = [s for s in (_finite_speedup(_speed(attempts[i])) for i in correct) if s is not None]
        first = attempts[0]
        first_attempt: bool | None = first["correct"] is True
        if first["compiled"] is True and first["correct"] is None:
            first_attempt = None  # compiled, but this platform could not run it
        outcomes.append(TrajectoryOutcome(
            task_id=task_id, sample_index=sample, attempts=len(attempts),
            first_correct=correct[0] + 1 if correct else None, first_attempt=first_attempt,
            best_speedup=max(speedups) if speedups else None, correct_untimed=bool(correct) and not speedups,
            trajectory_return=first["trajectory_return"], compiled=any(row["compiled"] is True for row in attempts),
            unjudged=_unjudged_reason(attempts),
        ))  # fmt: skip
    return outcomes


def _unjudged_reason(attempts: list[dict[str, Any]]) -> str | None:
    """Why a trajectory could not be judged (every attempt an `infrastructure_error`), or None."""
    if not attempts or any(row["failure_kind"] != "infrastructure_error" for row in attempts):
        return None
    message = (attempts[0].get("failure_message") or "").strip().splitlines()
    return f"infrastructure_error: {message[0][:200]}" if message else "infrastructure_error"


def table_rows(table: pa.Table) -> list[dict[str, Any]]:
    """The columns the metrics read, as row dicts (absent optional columns read as nulls)."""
    columns = {
        name: table.column(name).to_pylist() if name in table.column_names else [None] * table.num_rows
        for name in ROW_COLUMNS
    }
    return [dict(zip(columns, values, strict=True)) for values in zip(*columns.values(), strict=True)]


def compute_eval_metrics(rows: Sequence[dict[str, Any]], settings: EvalSettings,
                         not_written: dict[str, str] | None = None) -> EvalMetrics:  # fmt: skip
    """Every metric of one evaluation run. `rows` are that run's attempt rows (see `table_rows`).

    `not_written`: task id -> why, for attempts that failed on our side and were never written as rows
    (the corpus job keeps them in its ledger to retry); it names the reason a task with no row is counted out.
    """
    suite_ids = {task.task_id for task in settings.tasks}
    rows = [row for row in rows if row["task_id"] in suite_ids]
    outcomes = trajectory_outcomes(rows)
    by_task: dict[str, list[TrajectoryOutcome]] = defaultdict(list)
    unjudged_reasons: dict[str, str] = {}
    for outcome in outcomes:
        if outcome.unjudged is None:
            by_task[outcome.task_id].append(outcome)
        else:
            unjudged_reasons.setdefault(outcome.task_id, outcome.unjudged)
    never_recorded = (
        "no answer of this model matched the task" if settings.source == "answers"
        else "no trajectory recorded (provider errors: rerun to resume)"
    )  # fmt: skip
    unjudged = tuple(
        (task.name, unjudged_reasons.get(task.task_id) or (not_written or {}).get(task.task_id) or never_recorded)
        for task in settings.tasks
        if task.task_id not in by_task
    )  # fmt: skip
    turns = settings.turns
    lower_bounds: list[str] = []
    notes: list[str] = []

    attempts = len(rows)
    compiled = sum(row["compiled"] is True for row in rows)
    correct_attempts = sum(row["correct"] is True for row in rows)
    unknown = sum(row["compiled"] is True and row["correct"] is None for row in rows)
    # Correctness metrics are exact when every attempt's correctness is known; a lower bound when some
    # is not; not measured at all when none is known and none was correct.
    correctness_measured = unknown == 0 or correct_attempts > 0
    if unknown:
        notes.append(f"correctness could not be established for {unknown} compiled attempt(s) on this "
                     "platform: they count as not correct, so correctness metrics are lower bounds"
                     if correctness_measured else
                     f"correctness could not be established for any attempt on this platform ({unknown} "
                     "compiled): correctness metrics are not measured")  # fmt: skip

    def per_task_mean(value: Any, name: str) -> float | None:
        """Mean over tasks (with at least one trajectory) of value(task outcomes); None if not measured."""
        per_task = [value(outcomes) for outcomes in by_task.values()]
        per_task = [v for v in per_task if v is not None]
        if not correctness_measured or not per_task:
            return None
        if unknown:
            lower_bounds.append(name)
        return _mean(per_task)

    pass_at: dict[int, float | None] = {}
    for k in pass_k_values(settings.samples):
        pass_at[k] = per_task_mean(
            lambda group, k=k: pass_at_k(len(group), sum(o.first_attempt is True for o in group), k)
            if len(group) >= k else None, f"pass@{k}",
        )  # fmt: skip
    corr_at = {
        k: per_task_mean(
            lambda group, k=k: _mean([o.first_correct is not None and o.first_correct <= k for o in group]),
            f"corr@{k}",
        )
        for k in range(1, turns + 1)
    }

    # GEAK's Corr@k: k over samples, a sample correct when its trajectory reached a correct kernel
    sample_corr_at = {
        k: per_task_mean(
            lambda group, k=k: (
                pass_at_k(len(group), sum(o.first_correct is not None for o in group), k)
                if len(group) >= k
                else None
            ),
            f"sample_corr@{k}",
        )  # fmt: skip
        for k in pass_k_values(settings.samples)
    }
    short = sum(len(group) < settings.samples for group in by_task.values())
    if short and settings.samples > 1:
        notes.append(f"{short} judged task(s) have fewer than {settings.samples} samples: Pass@k and Corr@k of "
                     "samples leave a task out of each k above its sample count")  # fmt: skip
    call_groups = [_mean([o.compiled for o in group]) for group in by_task.values()]
    call_accuracy = _mean([v for v in call_groups if v is not None])
    if unjudged:
        notes.append(f"{len(unjudged)} of {len(settings.tasks)} task(s) could not be judged and are counted out of "
                     f"every per-task mean (judged: {len(by_task)}); see `unjudged` for each reason")  # fmt: skip

    solved = [o for o in outcomes if o.first_correct is not None]
    timed = [o.best_speedup for o in solved if o.best_speedup is not None]
    untimed = sum(o.correct_untimed for o in solved)
    platform = "+".join(sorted({row["platform"] for row in rows if row["platform"]})) or "unknown"
    fast: dict[float, float | None] = {}
    for p in FAST_P:
        name = fast_name(p)
        if p == 0:  # correct and speedup > 0: every correct kernel, timed or not
            fast[p] = per_task_mean(lambda group: _mean([o.first_correct is not None for o in group]), name)
            continue
        if solved and not timed:
            fast[p] = None
            continue

        def faster(group: list[TrajectoryOutcome], p: float = p) -> float | None:
            return _mean([o.best_speedup is not None and o.best_speedup > p for o in group])

        fast[p] = per_task_mean(faster, name)
        if untimed and fast[p] is not None and name not in lower_bounds:
            lower_bounds.append(name)
    basis = speedup_basis(rows)
    if basis != "pytorch":
        notes.append("fast_p and the speedups are over each optimisation task's baseline kernel"
                     + (" (over PyTorch for the tasks without one)" if basis == "mixed" else ""))  # fmt: skip
    if solved and not timed:
        notes.append(f"speed was not measured (platform {platform} does not time kernels): fast_p for p > 0 "
                     "and the speedup figures are not measured, not zero")  # fmt: skip
    elif untimed:
        notes.append(f"{untimed} of {len(solved)} solved trajectories have no timed correct kernel: fast_p "
                     "for p > 0 counts them as not faster (a lower bound); the geometric mean covers the "
                     f"{len(timed)} timed ones")  # fmt: skip

    expected = len(settings.tasks) * settings.samples
    missing = max(0, expected - len(outcomes))
    if missing and settings.source != "answers":
        notes.append(f"{missing} of {expected} trajectories were not recorded (provider errors): the metrics "
                     "cover the recorded ones; rerun the same command to resume")  # fmt: skip

    prompt_tokens = sum(row["prompt_tokens"] or 0 for row in rows)
    completion_tokens = sum(row["completion_tokens"] or 0 for row in rows)
    cost = settings.prices.cost(prompt_tokens, completion_tokens)
    rewards = [float(row["reward"]) for row in rows if row["reward"] is not None]
    returns = [o.trajectory_return for o in outcomes if o.trajectory_return is not None]

    histogram = {str(k): 0 for k in range(1, turns + 1)} | {"never": 0}
    for outcome in outcomes:
        key = str(outcome.first_correct) if outcome.first_correct is not None else "never"
        histogram[key] = histogram.get(key, 0) + 1

    per_task, per_category = _breakdowns(settings, by_task, correctness_measured)
    infrastructure = sum(row["failure_kind"] == "infrastructure_error" for row in rows)
    if infrastructure:
        notes.append(f"{infrastructure} attempt(s) failed on our side (infrastructure_error) and count as failed "
                     "attempts: check the verifier and rerun with --new-run")  # fmt: skip
    names = {task.task_id: task.name for task in settings.tasks}

    return EvalMetrics(
        model=settings.model, suite=settings.suite, target=settings.target, platform=platform,
        samples=settings.samples, turns=turns, tasks=len(settings.tasks), trajectories=len(outcomes),
        missing_trajectories=missing, attempts=attempts, compiled=compiled,
        compile_rate=compiled / attempts if attempts else None, correct_attempts=correct_attempts,
        correctness_unknown=unknown, pass_at=pass_at, corr_at=corr_at, fast=fast,
        speed_measured=len(timed), speed_unmeasured=untimed,
        geomean_speedup=math.exp(sum(math.log(s) for s in timed) / len(timed)) if timed else None,
        mean_reward=_mean(rewards), mean_return=_mean(returns),
        failures=dict(Counter(row["failure_kind"] for row in rows if row["failure_kind"]).most_common()),
        prompt_tokens=prompt_tokens, completion_tokens=completion_tokens,
        tokens_per_correct=(prompt_tokens + completion_tokens) / correct_attempts
        if correct_attempts and settings.source != "answers" else None,  # answers already written: no count
        cost_usd=cost, cost_per_correct_usd=cost / correct_attempts if cost is not None and correct_attempts else None,
        first_correct_histogram=histogram, per_task=per_task, per_category=per_category,
        lower_bounds=tuple(lower_bounds), notes=tuple(notes),
        contaminated_tasks=tuple(names[t] for t in sorted(settings.contaminated) if t in names),
        speedups=tuple(timed), rewards=tuple(rewards), sample_corr_at=sample_corr_at, call_accuracy=call_accuracy,
        judged_tasks=len(by_task), unjudged=unjudged, speedup_basis=basis,
    )  # fmt: skip


def _breakdowns(settings: EvalSettings, by_task: dict[str, list[TrajectoryOutcome]], measured: bool
                ) -> tuple[tuple[TaskMetrics, ...], tuple[CategoryMetrics, ...]]:  # fmt: skip
    """Pass@1, Corr@T and the best speedup per task, and their means per category (None: not measured)."""
    per_task = []
    for task in settings.tasks:
        group = by_task.get(task.task_id, [])
        c = sum(o.first_attempt is True for o in group)
        speedups = [o.best_speedup for o in group if o.best_speedup is not None]
        per_task.append(TaskMetrics(
            task_id=task.task_id, name=task.name, category=task.category, trajectories=len(group),
            first_attempt_correct=c, pass_at_1=pass_at_k(len(group), c, 1) if group and measured else None,
            corr_at_budget=_mean([o.first_correct is not None for o in group]) if measured else None,
            best_speedup=max(speedups) if speedups else None, contaminated=task.task_id in settings.contaminated,
        ))  # fmt: skip
    categories: dict[str, list[TaskMetrics]] = defaultdict(list)
    for task_metrics in per_task:
        if task_metrics.trajectories:
            categories[task_metrics.category or UNCATEGORISED].append(task_metrics)
    per_category = tuple(
        CategoryMetrics(
            category=name,
            tasks=len(members),
            pass_at_1=_mean([m.pass_at_1 for m in members if m.pass_at_1 is not None]),
            corr_at_budget=_mean([m.corr_at_budget for m in members if m.corr_at_budget is not None]),
        )  # fmt: skip
        for name, members in sorted(categories.items())
    )
    return tuple(per_task), per_category


# ---------------------------------------------------------------------------------------------------
# The results table, as text or Markdown (the HTML report renders the same cells)


def percent(value: float | None) -> str:
    return "-" if value is None else f"{100 * value:.1f}%"


def metric_rows(runs: Sequence[EvalMetrics]) -> list[tuple[str, list[str]]]:
    """(label, one cell per run) for each line of the results table.

    A value that is only a lower bound reads "≥ x"; an undefined one "-"; a speed figure that was not
    measured "not measured"; a cost without prices "no prices given".
    """

    def line(label: str, name: str, value: Any, text: Any, missing: Any = "-") -> tuple[str, list[str]]:
        cells = []
        for m in runs:
            v = value(m)
            if v is None:
                cells.append(missing(m) if callable(missing) else missing)
            else:
                cells.append(f"≥ {text(m)}" if name in m.lower_bounds else text(m))
        return label, cells

    def speed_missing(m: EvalMetrics) -> str:
        return "not measured" if m.speed_unmeasured or m.correctness_unknown else "-"

    ks = sorted({k for m in runs for k in m.pass_at})
    turns = sorted({k for m in runs for k in m.corr_at})
    rows: list[tuple[str, list[str]]] = [
        ("model", [m.model for m in runs]),
        ("suite", [m.suite for m in runs]),
        ("target · platform", [f"{m.target} · {m.platform}" for m in runs]),
        ("tasks × samples × turns", [f"{m.tasks} × {m.samples} × {m.turns}" for m in runs]),
        ("trajectories (missing)", [f"{m.trajectories} ({m.missing_trajectories})" for m in runs]),
        ("attempts", [str(m.attempts) for m in runs]),
        ("judged tasks (counted out)", [f"{m.judged_tasks} ({len(m.unjudged)})" for m in runs]),
        line("compile rate", "compile_rate", lambda m: m.compile_rate,
             lambda m: f"{percent(m.compile_rate)} ({m.compiled}/{m.attempts})"),
        line("call accuracy", "call_accuracy", lambda m: m.call_accuracy, lambda m: percent(m.call_accuracy)),
    ]  # fmt: skip
    rows += [
        line(f"Pass@{k}", f"pass@{k}", lambda m, k=k: m.pass_at.get(k), lambda m, k=k: percent(m.pass_at[k]))
        for k in ks
    ]  # fmt: skip
    rows += [
        line(f"Corr@{k}", f"corr@{k}", lambda m, k=k: m.corr_at.get(k), lambda m, k=k: percent(m.corr_at[k]))
        for k in turns
    ]  # fmt: skip
    sample_ks = sorted({k for m in runs for k in m.sample_corr_at})
    rows += [
        line(f"Corr@{k} of samples (GEAK)", f"sample_corr@{k}", lambda m, k=k: m.sample_corr_at.get(k),
             lambda m, k=k: percent(m.sample_corr_at[k]))
        for k in sample_ks
    ]  # fmt: skip
    over = {"baseline": " over the baseline", "mixed": " over baseline or PyTorch"}
    basis = (
        over.get(runs[0].speedup_basis, "")
        if len({m.speedup_basis for m in runs}) == 1
        else " (bases differ)"
    )
    rows += [
        line(f"fast_{p:g}{basis if p > 0 else ''}", fast_name(p), lambda m, p=p: m.fast.get(p),
             lambda m, p=p: percent(m.fast[p]), speed_missing if p > 0 else "-")
        for p in FAST_P
    ]  # fmt: skip
    rows += [
        line(f"geomean speedup{basis} (correct)", "geomean_speedup", lambda m: m.geomean_speedup,
             lambda m: f"{m.geomean_speedup:.3f}x ({m.speed_measured} timed)", speed_missing),
        line("mean reward", "mean_reward", lambda m: m.mean_reward, lambda m: f"{m.mean_reward:.3f}"),
        line("mean trajectory return", "mean_return", lambda m: m.mean_return, lambda m: f"{m.mean_return:.3f}"),
        ("correct attempts", [str(m.correct_attempts) for m in runs]),
        ("tokens (prompt + completion)", [f"{m.prompt_tokens:,} + {m.completion_tokens:,}" for m in runs]),
        line("tokens per correct kernel", "tokens_per_correct", lambda m: m.tokens_per_correct,
             lambda m: f"{m.tokens_per_correct:,.0f}"),
        line("cost (USD)", "cost_usd", lambda m: m.cost_usd, lambda m: f"${m.cost_usd:.4f}", "no prices given"),
        line("cost per correct kernel (USD)", "cost_per_correct_usd", lambda m: m.cost_per_correct_usd,
             lambda m: f"${m.cost_per_correct_usd:.4f}",
             lambda m: "no prices given" if m.cost_usd is None else "-"),
    ]  # fmt: skip
    kinds = sorted({kind for m in runs for kind in m.failures})
    rows += [(f"failure: {kind}", [str(m.failures.get(kind, 0)) for m in runs]) for kind in kinds]
    return rows


def format_results(runs: Sequence[EvalMetrics], markdown: bool = False, headers: Sequence[str] = ()) -> str:
    """The results side by side, one column per run: aligned text, or a Markdown table."""
    header = ["", *(headers or [m.model for m in runs])]
    body = [[label, *cells] for label, cells in metric_rows(runs)]
    if markdown:
        escape = str.maketrans({"|": "\\|"})
        lines = ["| " + " | ".join(cell.translate(escape) for cell in header) + " |",
                 "|---|" + "---:|" * (len(header) - 1)]  # fmt: skip
        lines += ["| " + " | ".join(cell.translate(escape) for cell in row) + " |" for row in body]
        return "\n".join(lines)
    widths = [max(len(row[i]) for row in [header, *body]) for i in range(len(header))]
    return "\n".join(
        "  ".join(c.ljust(widths[i]) if i == 0 else c.rjust(widths[i]) for i, c in enumerate(row)).rstrip()
        for row in [header, *body]
    )


# ---------------------------------------------------------------------------------------------------
# The files of an evaluation run: RUN_DIR/eval/{settings,results}.json and results.md

EVAL_FOLDER = "eval"


def write_settings(run_dir: Path, settings: EvalSettings, extra: dict[str, Any]) -> Path:
    path = Path(run_dir) / EVAL_FOLDER / "settings.json"
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(json.dumps({**settings.to_json(), **extra}, indent=2, sort_keys=True))
    return path


def read_settings(run_dir: Path) -> tuple[EvalSettings, dict[str, Any]] | None:
    """(settings, the whole settings file) of the evaluation in run_dir, or None if it holds none."""
    path = Path(run_dir) / EVAL_FOLDER / "settings.json"
    if not path.is_file():
        return None
    data = json.loads(path.read_text())
    return EvalSettings.from_json(data), data


def run_metrics(run_dir: Path, settings: EvalSettings, run_id: str) -> tuple[EvalMetrics, EvalMetrics | None]:
    """(metrics, clean metrics) of one run in a run folder, recomputed from every row it wrote.

    The clean metrics leave out the tasks that overlap the training corpus; None when none do.
    """
    rows = [row for row in attempt_rows(Path(run_dir), settings.target) if row["run_id"] == run_id]
    metrics = compute_eval_metrics(rows, settings)
    if not settings.contaminated:
        return metrics, None
    clean_tasks = tuple(task for task in settings.tasks if task.task_id not in settings.contaminated)
    clean = compute_eval_metrics(rows, replace(settings, tasks=clean_tasks, contaminated=frozenset()))
    return metrics, clean


def answer_metrics(run_dir: Path, settings: EvalSettings, run_id: str, not_written: dict[str, dict[str, str]]
                   ) -> list[tuple[EvalMetrics, EvalMetrics | None]]:  # fmt: skip
    """(metrics, clean metrics) per model of an answers evaluation, by model name.

    A model's samples per task are its answers to it; `samples` is the most any task got (a task with fewer
    is left out of Corr@k for k above its count, as Pass@k does)."""
    rows = [row for row in attempt_rows(Path(run_dir), settings.target) if row["run_id"] == run_id]
    by_model: dict[str, list[dict[str, Any]]] = {}
    for row in rows:
        by_model.setdefault(row["model"] or "unknown", []).append(row)
    for model in not_written:
        by_model.setdefault(model, [])
    results = []
    for model, model_rows in sorted(by_model.items()):
        counts = Counter(row["task_id"] for row in model_rows)
        model_settings = replace(settings, model=model, samples=max(counts.values(), default=1))
        metrics = compute_eval_metrics(model_rows, model_settings, not_written.get(model, {}))
        clean = None
        if settings.contaminated:
            clean_tasks = tuple(task for task in settings.tasks if task.task_id not in settings.contaminated)
            clean = compute_eval_metrics(model_rows, replace(model_settings, tasks=clean_tasks, contaminated=frozenset()),
                                         not_written.get(model, {}))  # fmt: skip
        results.append((metrics, clean))
    return results


def attempt_rows(run_dir: Path, target: str) -> list[dict[str, Any]]:
    """The metric columns of every attempt row in RUN_DIR/data/TARGET (none when the folder is absent)."""
    from kernelvault.corpus.stats import load_attempts

    folder = Path(run_dir) / "data" / target
    return table_rows(load_attempts(folder)) if folder.is_dir() else []

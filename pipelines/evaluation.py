"""`kernelvault eval`: one model on one task suite under a fixed budget of attempts, as data and as a table.

    suite (bundled, task folder, KernelBench tree, TritonBench-T/G or ROCmBench folder, hub:ORG/NAME@vX.Y.Z)
        ──► decontamination guard (--training-corpus)
        ──► run_agent_job: samples × up to `turns` attempts per task, every attempt a corpus row
            (RUN_DIR/data/TARGET/*.parquet, RUN_DIR/ledger.sqlite: an evaluation run is also data)
            or, with --answers, run_corpus_job over answers models already wrote (one attempt per answer,
            the answers to one task by one model its samples)
        ──► eval_metrics (per model with --answers) ──► RUN_DIR/eval/settings.json, results.json, results.md

With --answers the figures are per model, k counts samples, and each sample is one attempt: the sample
Corr@k (GEAK-eval's definition, see `kernelvault.pipelines.eval_metrics`) and call accuracy are what the published AMD
work reports for TritonBench-G and ROCmBench. Tasks that cannot be judged (every attempt failed on our
side, such as a reference that is not deterministic; or no answer of the model matched the task) are
counted out of the denominators and listed with their reason in results.json and on stdout.

The evaluation is the agent job with a fixed budget, so it resumes like one: the same command in the
same RUN_DIR continues the run (trajectories lost to provider errors are redone), and the metrics are
always recomputed from every row of the run. `kernelvault report RUN_DIR…` compares several runs.

The decontamination guard compares the suite with the references of the model's training corpus (a
KernelVault corpus or release folder, or any task suite) and reports overlapping tasks loudly: on
stderr before and after the run, at the top of results.md and in the HTML report. It does not drop
them: the headline metrics cover the whole suite, and `clean_metrics` the tasks that do not overlap.
What it cannot see: a training set whose task references are not in it (only hashes of programs it
never saw), or the same operator written as a different program (see `kernelvault.corpus.dedup`).
"""

from __future__ import annotations

import json
import sys
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
from datetime import datetime, timezone
from pathlib import Path
from typing import TYPE_CHECKING

from kernelvault.contracts import Task, content_hash
from kernelvault.pipelines.eval_metrics import (
    EvalMetrics,
    EvalSettings,
    Prices,
    SuiteTask,
    answer_metrics,
    run_metrics,
    write_settings,
)
from kernelvault.toolchain.tasks import KernelDatasetError, LoadedTasks, TaskFormatError, load_tasks

if TYPE_CHECKING:  # imported where used: the agents extra is optional, datasketch/scipy slow to import
    from kernelvault.corpus.dedup import Contamination
    from kernelvault.pipelines.agent_job import AgentJobConfig
    from kernelvault.pipelines.candidates import Attempt
    from kernelvault.pipelines.corpus_job import RunSummary
    from kernelvault.toolchain.verify import Verifier

DEFAULT_OUT = Path("out") / "eval"


class EvalInputError(ValueError):
    """A suite or training corpus that cannot be used (one-line message)."""


@dataclass(frozen=True)
class EvalConfig:
    agent: AgentJobConfig | None  # endpoint, samples, turns (max_turns), sampling, budgets; None with answers
    target: str = "triton"
    suite: str | None = None  # anything `load_tasks` reads; None: the bundled suite
    only_tasks: tuple[str, ...] = ()  # task names to keep (all when empty)
    prices: Prices = field(default_factory=Prices)
    training_corpus: str | None = None  # the model's training corpus, for the decontamination guard
    answers: str | None = None  # a JSONL file or folder of answers already written (instead of an agent)
    workers: int | None = None  # verifications at once, for answers (the agent's config has its own)
    allow_unjailed: bool = False  # for answers: verify them where the machine has no OS jail


@dataclass(frozen=True)
class EvalResult:
    run_dir: Path
    run_id: str
    metrics: EvalMetrics  # with answers: the first model's (every model's in per_model)
    clean_metrics: EvalMetrics | None  # the tasks that do not overlap the training corpus, when some do
    contamination: tuple[Contamination, ...]
    summary: RunSummary
    per_model: tuple[EvalMetrics, ...] = ()  # with answers: one per model, by name
    skipped_answers: tuple[tuple[str, str], ...] = ()  # (file:line, reason) of answers matched to no task


def load_suite(spec: str | None, only_tasks: tuple[str, ...] = ()) -> LoadedTasks:
    try:
        loaded = load_tasks(spec)
    except TaskFormatError as error:
        raise EvalInputError(str(error)) from None
    if only_tasks:
        unknown = sorted(set(only_tasks) - {task.name for task in loaded.tasks})
        if unknown:
            raise EvalInputError(f"no task named {', '.join(unknown)} in {spec or 'the bundled suite'}")
        loaded = LoadedTasks([task for task in loaded.tasks if task.name in only_tasks], loaded.errors)
    if not loaded.tasks:
        raise EvalInputError(f"no valid tasks in {spec or 'the bundled suite'}")
    return loaded


@dataclass(frozen=True)
class TrainingCorpus:
    tasks: tuple[Task, ...]  # task references found in it (compared exactly and as near duplicates)
    task_ids: frozenset[str]  # task ids of rows that carry no reference (an sft config): exact matches


def read_training_corpus(spec: str) -> TrainingCorpus:
    """The task references a model was trained on.

    A KernelVault corpus or release folder: every Parquet file under it with a `task_source` column
    (attempt shards, the `rl` config) gives references, and files with only `task_id` (the `sft` config)
    give ids, which are hashes of the references. A published kernel version (`hub:ORG/NAME@vX.Y.Z` of
    attempt rows) gives the references in its `task_source` column. Anything else is read as a task suite
    (task folder, KernelBench tree, `hub:ORG/NAME@vX.Y.Z` of task programs).
    """
    import pyarrow.parquet as pq

    path = Path(spec)
    sources: dict[str, Task] = {}
    ids: set[str] = set()
    if path.is_dir():
        for file in sorted(path.rglob("*.parquet")):
            if any(part.startswith(".") for part in file.relative_to(path).parts):
                continue
            names = set(pq.read_schema(file).names)
            if "task_source" in names:
                columns = ["task_source", *(["task_name"] if "task_name" in names else [])]
                table = pq.read_table(file, columns=columns).to_pydict()
                for i, source in enumerate(table["task_source"]):
                    name = table["task_name"][i] if "task_name" in table else f"{file.stem}/{i}"
                    if source and content_hash(source) not in sources:
                        sources[content_hash(source)] = Task(
                            content_hash(source), name, source, f"training:{spec}"
                        )
            elif "task_id" in names:
                ids.update(v for v in pq.read_table(file, columns=["task_id"]).column(0).to_pylist() if v)
    if sources or ids:
        return TrainingCorpus(tuple(sources.values()), frozenset(ids - set(sources)))
    try:
        try:
            loaded = load_tasks(spec)
        except KernelDatasetError:  # a published kernel version: the references its rows answered
            loaded = load_tasks(f"{spec}#task_source")
    except TaskFormatError as error:
        raise EvalInputError(f"training corpus {spec}: {error}") from None
    if not loaded.tasks:
        raise EvalInputError(f"no task references in the training corpus {spec}")
    return TrainingCorpus(tuple(loaded.tasks), frozenset())


def find_contamination(tasks: list[Task], corpus: TrainingCorpus) -> tuple[Contamination, ...]:
    """Suite tasks whose reference the training corpus holds (exactly, by id, or as a near duplicate)."""
    from kernelvault.corpus.dedup import Contamination, find_contaminated_tasks

    found = list(find_contaminated_tasks(tasks, list(corpus.tasks)).contaminated)
    reported = {item.task_id for item in found}
    found += [
        Contamination(task.task_id, task.name, f"task id {task.task_id}", "exact", 1.0)
        for task in tasks
        if task.task_id in corpus.task_ids and task.task_id not in reported
    ]
    return tuple(found)


def contamination_banner(contamination: tuple[Contamination, ...], corpus: str, suite_size: int) -> str:
    rule = "!" * 100
    lines = [
        rule,
        f"CONTAMINATION: {len(contamination)} of {suite_size} suite task(s) overlap the training corpus {corpus}",
        "their results measure recall of training data, not skill; clean_metrics leave them out",
    ]
    lines += [
        f"  {item.task_name}: {item.kind} match of training task {item.eval_task} (similarity {item.similarity:.2f})"
        for item in contamination
    ]
    return "\n".join([*lines, rule])


def run_evaluation(
    config: EvalConfig,
    verifier: Verifier,
    run_dir: Path,
    progress: bool = True,
    new_run: bool = False,
    warn: Callable[[str], None] = lambda text: print(text, file=sys.stderr),
) -> EvalResult:
    """Run the agents over the suite with the configured budget, then compute and write the results.

    Raises EvalInputError for an unusable suite or training corpus, and corpus.ledger.ConfigurationChanged
    when run_dir holds a run with another configuration.
    """
    loaded = load_suite(config.suite, config.only_tasks)
    contamination: tuple[Contamination, ...] = ()
    if config.training_corpus:
        contamination = find_contamination(loaded.tasks, read_training_corpus(config.training_corpus))
        if contamination:
            warn(contamination_banner(contamination, config.training_corpus, len(loaded.tasks)))
    if config.answers is not None:
        return _evaluate_answers(config, loaded, contamination, verifier, run_dir, progress, new_run, warn)
    from kernelvault.agents.prompting import UnsupportedPrompt, check_prompts
    from kernelvault.pipelines.agent_job import run_agent_job

    assert config.agent is not None, "an evaluation needs an agent or answers"
    try:
        check_prompts(loaded.tasks, config.target)
    except UnsupportedPrompt as error:
        raise EvalInputError(str(error)) from None
    summary = run_agent_job(loaded, verifier, run_dir, config.target, config.agent, progress=progress,
                            new_run=new_run)  # fmt: skip
    settings = EvalSettings(
        model=config.agent.endpoint.model, suite=config.suite or "bundled", target=config.target,
        samples=config.agent.samples, turns=config.agent.max_turns,
        tasks=tuple(SuiteTask(t.task_id, t.name, t.category) for t in loaded.tasks), prices=config.prices,
        contaminated=frozenset(item.task_id for item in contamination),
    )  # fmt: skip
    write_settings(run_dir, settings, {
        "run_id": summary.run_id, "platform": verifier.choice.platform, "arch": verifier.choice.arch,
        "base_url": config.agent.endpoint.base_url, "sampling": vars(config.agent.sampling),
        "stop_on_correct": config.agent.stop_on_correct, "training_corpus": config.training_corpus,
        "contamination": contamination_records(contamination),
        "written_at": datetime.now(timezone.utc).isoformat(timespec="seconds"),
    })  # fmt: skip
    metrics, clean = run_metrics(run_dir, settings, summary.run_id)
    write_results(run_dir, summary.run_id, metrics, clean, contamination, config.training_corpus)
    if contamination:
        warn(contamination_banner(contamination, config.training_corpus or "", len(loaded.tasks)))
    return EvalResult(run_dir, summary.run_id, metrics, clean, contamination, summary)


def _evaluate_answers(config: EvalConfig, loaded: LoadedTasks, contamination: tuple[Contamination, ...],
                      verifier: Verifier, run_dir: Path, progress: bool, new_run: bool,
                      warn: Callable[[str], None]) -> EvalResult:  # fmt: skip
    """The answers in `config.answers` verified as a corpus run in run_dir, then the metrics per model."""
    from kernelvault.pipelines.answers import AnswerCandidates
    from kernelvault.pipelines.corpus_job import run_corpus_job
    from kernelvault.pipelines.engine import EngineOptions
    from kernelvault.toolchain.verify import require_jail_for_model_output

    assert config.answers is not None
    try:
        source = AnswerCandidates(Path(config.answers), config.target)
    except ValueError as error:  # a missing path, a folder without JSONL files
        raise EvalInputError(str(error)) from None
    attempts = list(source.attempts(loaded.tasks))
    if not attempts:
        raise EvalInputError(f"no answer in {config.answers} matches one of the {len(loaded.tasks)} task(s)")
    require_jail_for_model_output(verifier, config.allow_unjailed)
    summary = run_corpus_job(loaded, source, verifier, run_dir, config.target, EngineOptions(workers=config.workers),
                             progress=progress, new_run=new_run)  # fmt: skip
    models = sorted({attempt.model or "unknown" for attempt in attempts})
    settings = EvalSettings(
        model=", ".join(models), suite=config.suite or "bundled", target=config.target,
        samples=max(sum(1 for a in attempts if a.task.task_id == t.task_id) for t in loaded.tasks), turns=1,
        tasks=tuple(SuiteTask(t.task_id, t.name, t.category) for t in loaded.tasks), prices=config.prices,
        contaminated=frozenset(item.task_id for item in contamination), source="answers",
    )  # fmt: skip
    not_written = _not_written(run_dir, summary.run_id, attempts)
    write_settings(run_dir, settings, {
        "run_id": summary.run_id, "platform": verifier.choice.platform, "arch": verifier.choice.arch,
        "answers": config.answers, "models": models, "training_corpus": config.training_corpus,
        "contamination": contamination_records(contamination), "not_written": not_written,
        "skipped_answers": [list(item) for item in source.skipped],
        "written_at": datetime.now(timezone.utc).isoformat(timespec="seconds"),
    })  # fmt: skip
    per_model = answer_metrics(run_dir, settings, summary.run_id, not_written)
    write_results(run_dir, summary.run_id, per_model[0][0], per_model[0][1], contamination, config.training_corpus,
                  per_model=[metrics for metrics, _ in per_model], skipped_answers=source.skipped)  # fmt: skip
    if contamination:
        warn(contamination_banner(contamination, config.training_corpus or "", len(loaded.tasks)))
    first, clean = per_model[0]
    return EvalResult(run_dir, summary.run_id, first, clean, contamination, summary,
                      per_model=tuple(metrics for metrics, _ in per_model),
                      skipped_answers=tuple(source.skipped))  # fmt: skip


def _not_written(run_dir: Path, run_id: str, attempts: Sequence[Attempt]) -> dict[str, dict[str, str]]:
    """model -> task id -> the message of an attempt that failed on our side (in the ledger, never a row)."""
    from kernelvault.corpus.ledger import RunLedger, attempt_key

    model_of = {attempt_key(a.task.task_id, a.sample_index, a.turn): a.model or "unknown" for a in attempts}
    ledger = RunLedger(run_dir / "ledger.sqlite")
    try:
        failed = ledger.failed(run_id)
    finally:
        ledger.close()
    found: dict[str, dict[str, str]] = {}
    for key, kind, message in failed:
        first_line = (message or "").strip().splitlines()[0][:200] if (message or "").strip() else ""
        found.setdefault(model_of.get(key, "unknown"), {}).setdefault(
            key.split("/", 1)[0], f"{kind}: {first_line}" if first_line else kind
        )
    return found


def contamination_records(contamination: tuple[Contamination, ...]) -> list[dict[str, object]]:
    return [
        {"task_id": item.task_id, "task_name": item.task_name, "training_task": item.eval_task, "kind": item.kind,
         "similarity": item.similarity}
        for item in contamination
    ]  # fmt: skip


def write_results(run_dir: Path, run_id: str, metrics: EvalMetrics, clean: EvalMetrics | None,
                  contamination: tuple[Contamination, ...], training_corpus: str | None,
                  per_model: Sequence[EvalMetrics] = (), skipped_answers: Sequence[tuple[str, str]] = (),
                  ) -> tuple[Path, Path]:  # fmt: skip
    """RUN_DIR/eval/results.json (every figure) and results.md (the table, for a README or model card).

    With answers (`per_model`), results.json holds every model's metrics under `per_model` and the answers
    matched to no task under `skipped_answers`; `metrics` is the first model's."""
    from kernelvault.pipelines.eval_report import markdown_document, view_of

    folder = run_dir / "eval"
    folder.mkdir(parents=True, exist_ok=True)
    payload = {
        "run_id": run_id,
        "metrics": metrics.to_json(),
        "clean_metrics": clean.to_json() if clean else None,
        "training_corpus": training_corpus,
        "contamination": contamination_records(contamination),
    }
    if per_model:
        payload["per_model"] = {m.model: m.to_json() for m in per_model}
        payload["skipped_answers"] = [{"where": where, "reason": why} for where, why in skipped_answers]
    json_path = folder / "results.json"
    json_path.write_text(json.dumps(payload, indent=2, default=str))
    records = contamination_records(contamination)
    views = [view_of(run_dir, run_id, m, None, records, training_corpus) for m in per_model] or [
        view_of(run_dir, run_id, metrics, clean, records, training_corpus)
    ]
    md_path = folder / "results.md"
    title = f"Evaluation of {', '.join(v.metrics.model for v in views)} on {metrics.suite}"
    md_path.write_text(markdown_document(views, title=title))
    return json_path, md_path

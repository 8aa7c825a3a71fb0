"""The `kernelvault` command line: verify one candidate, run the main job, check a task suite.

Usage errors (a missing file, a platform this machine cannot serve) print one line and exit 2. A
candidate that fails verification is a result, not an error: exit 0.
"""

from __future__ import annotations

import argparse
import json
import os
import sys
from pathlib import Path
from typing import TYPE_CHECKING

from kernelvault.contracts import PLATFORMS, Candidate, Task

if TYPE_CHECKING:
    from kernelvault.pipelines.answers import AnswerCandidates

DEFAULT_OUT = Path("out")


class UsageError(Exception):
    """Bad input from the user: reported as one line, exit code 2."""


def _add_platform_options(parser: argparse.ArgumentParser) -> None:
    parser.add_argument(
        "--platform", choices=PLATFORMS, help="force the platform (default: detect a GPU, else cpu)"
    )
    parser.add_argument("--arch", help="target architecture (default: the GPU's, or gfx942 on cpu)")
    parser.add_argument(
        "--timeout", type=float, default=60.0, help="wall-clock seconds per candidate (default 60)"
    )


def _add_agent_options(parser: argparse.ArgumentParser) -> None:
    """The model-driven run's sampling, budget and concurrency options (`corpus` and `eval`)."""
    parser.add_argument(
        "--allow-unjailed",
        action="store_true",
        help="verify model-written kernels even where this machine cannot build an OS jail (they then run as "
        "plain processes; every row records isolation=process)",
    )
    parser.add_argument(
        "--keep-optimising",
        action="store_true",
        help="after a correct kernel, keep asking for faster ones until the turn budget is spent",
    )
    parser.add_argument("--concurrency", type=int, default=16, help="model requests in flight (default 16)")
    parser.add_argument("--temperature", type=float, default=0.7)
    parser.add_argument("--top-p", type=float, default=0.95)
    parser.add_argument(
        "--max-new-tokens", type=int, default=8192, help="max tokens per answer (default 8192)"
    )
    parser.add_argument("--max-requests", type=int, help="request budget of the run")
    parser.add_argument("--max-tokens", type=int, help="token budget of the run (prompt + completion)")
    parser.add_argument(
        "--workers", type=int, help="verifications in flight (default: cores on cpu, 1 per GPU)"
    )


def _verifier(args: argparse.Namespace):  # noqa: ANN202 - imported lazily to keep --help fast
    from kernelvault.toolchain.verify import Verifier, VerifyConfig

    try:
        return Verifier(VerifyConfig(platform=args.platform, arch=args.arch, timeout_s=args.timeout))
    except ValueError as error:
        raise UsageError(str(error)) from None


def _read(path: Path, what: str) -> str:
    try:
        return path.read_text(encoding="utf-8")
    except FileNotFoundError:
        raise UsageError(f"{what} not found: {path}") from None
    except (OSError, UnicodeDecodeError) as error:
        raise UsageError(f"cannot read {what} {path}: {error}") from None


def cmd_verify(args: argparse.Namespace) -> int:
    from kernelvault.toolchain.tasks import TaskFormatError, parse_task

    task_path, candidate_path = Path(args.task), Path(args.candidate)
    task_source = _read(task_path, "task")
    candidate_text = _read(candidate_path, "candidate")
    try:
        task = parse_task(task_source, task_path.stem, f"file:{task_path}")
    except TaskFormatError as error:
        raise UsageError(f"invalid task {task_path}: {error}") from None
    verdict = _verifier(args).verify(
        task, Candidate(task.task_id, args.target, candidate_text, f"file:{candidate_path}")
    )
    environment = verdict.environment
    if args.json:
        summary = {
            "task": task.name,
            "compiled": verdict.compiled,
            "correct": verdict.correct,
            "speedup": verdict.speedup,
            "reward": verdict.reward.total if verdict.reward else 0.0,
            "failure_kind": verdict.failure_kind,
            "failure_message": verdict.failure_message,
            "platform": environment.platform if environment else None,
            "device": environment.device if environment else None,
            "arch": environment.arch if environment else None,
            "verdict": verdict.to_dict(),
        }
        print(json.dumps(summary, default=str))
        return 0
    print(f"task       {task.name} ({task.task_id})")
    print(
        f"platform   {environment.platform if environment else '?'} · {environment.device if environment else ''}"
    )
    for stage in verdict.stages:
        first_line = stage.log.splitlines()[0] if stage.log else ""
        print(f"  {stage.name:<8} {stage.outcome:<8} {stage.seconds:7.2f}s  {first_line[:100]}")
    print(f"compiled   {verdict.compiled}")
    print(f"correct    {verdict.correct}")
    print(f"speedup    {verdict.speedup if verdict.speedup is None else f'{verdict.speedup:.3f}x'}")
    print(f"reward     {verdict.reward.total if verdict.reward else 0.0:.3f}")
    if verdict.failure_kind:
        print(f"failure    {verdict.failure_kind}: {verdict.failure_message}")
    return 0


def _load_tasks(spec: str | None):  # noqa: ANN202
    from kernelvault.toolchain.tasks import TaskFormatError, load_tasks

    try:
        loaded = load_tasks(spec)
    except TaskFormatError as error:
        raise UsageError(str(error)) from None
    for where, why in loaded.errors:
        print(f"skipped task {where}: {why}", file=sys.stderr)
    for where, note in loaded.notes:
        print(f"note, task {where}: {note}", file=sys.stderr)
    if not loaded.tasks:
        raise UsageError(f"no valid tasks in {spec or 'the bundled suite'}")
    return loaded


def _answers_source(args: argparse.Namespace, tasks: list[Task]) -> AnswerCandidates:
    """`--answers`: the answers in the JSONL file(s), matched to the tasks; says what it read and skipped."""
    from kernelvault.pipelines.answers import AnswerCandidates

    if args.base_url or args.examples:
        raise UsageError("--answers verifies answers already written: it takes no --base-url or --examples")
    try:
        source = AnswerCandidates(Path(args.answers), args.target)
    except ValueError as error:
        raise UsageError(str(error)) from None
    matched = sum(1 for _ in source.attempts(tasks))  # fills `skipped` with the answers that match no task
    print(f"verifying {source.description}: {matched} match a task")
    if source.skipped:
        print(f"skipped {len(source.skipped)} answer line(s):")
        for where, why in source.skipped[:5]:
            print(f"  {where}: {why}")
    if not matched:
        raise UsageError(f"no answer in {args.answers} matches one of the {len(tasks)} task(s)")
    return source


def cmd_corpus(args: argparse.Namespace) -> int:
    from kernelvault.corpus.ledger import ConfigurationChanged
    from kernelvault.pipelines.candidates import CandidateSource, ExampleCandidates
    from kernelvault.pipelines.corpus_job import run_corpus_job
    from kernelvault.pipelines.executor import check_lanes_per_gpu, parse_devices
    from kernelvault.toolchain.verify import UnjailedModelOutput, require_jail_for_model_output

    loaded = _load_tasks(args.tasks)
    if args.decontaminate:
        from kernelvault.corpus.dedup import find_contaminated_tasks

        report = find_contaminated_tasks(loaded.tasks, _eval_tasks(args.decontaminate))
        for item in report.contaminated:
            print(f"decontamination: skipping task {item.task_name} ({item.kind} match of {item.eval_task}, "
                  f"similarity {item.similarity:.2f})")  # fmt: skip
        loaded.tasks = [task for task in loaded.tasks if task.task_id not in report.task_ids()]
        if not loaded.tasks:
            raise UsageError("every task matches the evaluation set: nothing left to run")
    endpoint = None
    answers = _answers_source(args, loaded.tasks) if args.answers else None
    if answers is None and (args.base_url or os.environ.get("OPENAI_BASE_URL")):
        try:
            from kernelvault.agents.client import EndpointConfig, SamplingSettings
            from kernelvault.pipelines.agent_job import AgentJobConfig, run_agent_job
        except ImportError as error:
            raise UsageError(f"the LLM agents need the 'agents' extra ({error.name} is missing): "
                             "pip install 'kernelvault[agents]'") from None  # fmt: skip
        try:
            endpoint = EndpointConfig.from_env(args.base_url, args.model)
        except ValueError as error:
            raise UsageError(str(error)) from None
    if args.executor == "ray":
        from kernelvault.pipelines.ray_executor import import_ray

        try:
            import_ray()
        except RuntimeError as error:
            raise UsageError(str(error)) from None
    elif args.address or args.ray_writers != "actors":
        raise UsageError("--address and --ray-writers are for --executor ray")
    try:
        check_lanes_per_gpu(args.lanes_per_gpu, args.executor)
        if args.devices:
            parse_devices(args.devices, 1, args.lanes_per_gpu)
    except ValueError as error:
        raise UsageError(str(error)) from None
    verifier = _verifier(args)
    if args.target == "hip" and verifier.choice.platform == "cpu":
        print("HIP on a CPU-only machine: candidates are compiled for gfx90a with hipcc (HIP_PLATFORM=amd) and "
              "never run, so `correct` is null and the reward is at most 0.4 (compile credit only); run on a "
              "ROCm or CUDA GPU for correctness and speed")  # fmt: skip
    out_dir = Path(args.out) if args.out else DEFAULT_OUT / args.target
    if endpoint is not None:
        from kernelvault.agents.prompting import UnsupportedPrompt, check_prompts

        try:
            check_prompts(loaded.tasks, args.target)
        except UnsupportedPrompt as error:
            raise UsageError(str(error)) from None
    try:
        if answers is not None:
            require_jail_for_model_output(verifier, args.allow_unjailed)  # answers are model output too
        if endpoint is None:
            source: CandidateSource
            if answers is not None:
                source = answers
            else:
                source = ExampleCandidates(args.target, Path(args.examples) if args.examples else None)
                print(f"no model endpoint configured (--base-url / OPENAI_BASE_URL): verifying the "
                      f"{source.description}")  # fmt: skip
            summary = run_corpus_job(loaded, source, verifier, out_dir, args.target, workers=args.workers,
                                     progress=not args.no_progress, new_run=args.new_run,
                                     shard_rows=args.shard_rows, devices=args.devices,
                                     compile_workers=args.compile_workers, executor=args.executor,
                                     address=args.address, ray_writers=args.ray_writers,
                                     lanes_per_gpu=args.lanes_per_gpu)  # fmt: skip
        else:
            config = AgentJobConfig(
                endpoint=endpoint, samples=args.samples, max_turns=args.turns,
                stop_on_correct=not args.keep_optimising, concurrency=args.concurrency,
                sampling=SamplingSettings(args.temperature, args.top_p, args.max_new_tokens),
                max_requests=args.max_requests, max_tokens=args.max_tokens, verify_workers=args.workers,
                lanes_per_gpu=args.lanes_per_gpu, allow_unjailed=args.allow_unjailed,
            )  # fmt: skip
            agent_name = "HIPKernelGen" if args.target == "hip" else "TritonKernelGen"
            print(f"{agent_name} with model {endpoint.model} at {endpoint.base_url}: {len(loaded.tasks)} tasks × "
                  f"{args.samples} samples, up to {args.turns} turns, verified on {verifier.choice.platform}")  # fmt: skip
            summary = run_agent_job(loaded, verifier, out_dir, args.target, config, progress=not args.no_progress,
                                    new_run=args.new_run, shard_rows=args.shard_rows, executor=args.executor,
                                    address=args.address)  # fmt: skip
    except (ConfigurationChanged, UnjailedModelOutput) as error:
        raise UsageError(str(error)) from None
    print(summary.table())
    for line in summary.unexpected:
        print(f"unexpected: {line}")
    for line in summary.retry_later:
        print(f"retry on resume: {line}")
    print(f"wrote {summary.attempts} attempts in {len(summary.shards)} shard(s) to {out_dir.resolve()}")
    print(
        f'load with: datasets.load_dataset("parquet", data_dir="{(out_dir / "data" / args.target).resolve()}")'
    )
    return 0


def cmd_tasks_check(args: argparse.Namespace) -> int:
    from kernelvault.toolchain.reference_check import check_tasks

    loaded = _load_tasks(args.path)
    reports = check_tasks(loaded.tasks, include_performance=args.performance, workers=args.workers)
    broken = [report for report in reports if not report.ok]
    for report in reports:
        status = "ok" if report.ok else "BROKEN"
        print(f"{status:<7} {report.task} ({report.cases_run} case(s))")
        for problem in report.problems:
            print(f"          {problem}")
    for where, why in loaded.errors:
        print(f"INVALID {where}: {why}")
    total_bad = len(broken) + len(loaded.errors)
    print(
        f"{len(reports) - len(broken)} of {len(reports) + len(loaded.errors)} task(s) ok, {total_bad} broken or invalid"
    )
    return 1 if total_bad else 0


def cmd_tasks_list(args: argparse.Namespace) -> int:
    loaded = _load_tasks(args.path)
    for task in loaded.tasks:
        form = f"{task.form} {task.entry}" if task.entry else "module"
        print(f"{task.task_id}  {task.category or '-':<14} {form:<28} {task.name}")
    refused = f", {len(loaded.errors)} refused (reasons above)" if loaded.errors else ""
    counts = {
        form: sum(1 for task in loaded.tasks if task.form == form)
        for form in ("kernel", "function", "module")
    }
    shown = ", ".join(f"{count} {form}" for form, count in counts.items() if count or form != "kernel")
    print(f"{len(loaded.tasks)} task(s) loaded ({shown}){refused}")
    return 0


def _eval_tasks(spec: str | None) -> list:  # noqa: ANN202
    if not spec:
        return []
    loaded = _load_tasks(spec)
    return list(loaded.tasks)


def _attempt_tables(dataset: Path) -> dict:  # noqa: ANN202
    """config -> attempts table, for a corpus folder (data/<target>/) or a release folder (<target>/)."""
    from kernelvault.contracts import TARGETS
    from kernelvault.corpus.stats import load_attempts

    tables = {}
    for target in TARGETS:
        for folder in (dataset / "data" / target, dataset / target):
            if folder.is_dir() and any(folder.glob("*.parquet")):
                tables[target] = load_attempts(folder)
                break
    if not tables:
        raise UsageError(
            f"no attempt shards in {dataset} (expected data/triton/ or triton/ with .parquet files)"
        )
    return tables


def cmd_release(args: argparse.Namespace) -> int:
    from kernelvault.corpus.release import build_release

    dataset, out = Path(args.dataset), Path(args.out)
    if out.exists() and any(out.iterdir()):
        raise UsageError(f"release folder {out} is not empty")
    report = build_release(dataset, out, eval_tasks=_eval_tasks(args.decontaminate))
    for line in report.lines():
        print(line)
    print(f"release written to {out.resolve()}")
    return 0


def cmd_publish(args: argparse.Namespace) -> int:
    import tempfile

    from kernelvault.corpus.card import build_card
    from kernelvault.corpus.hub import PublishError, check_repo_id, check_version, hub_from_env, publish
    from kernelvault.corpus.release import build_release
    from kernelvault.corpus.stats import compute_stats, per_model_stats, write_plots

    try:
        check_version(args.version)
        check_repo_id(args.repo)
    except (ValueError, PublishError) as error:
        raise UsageError(str(error)) from None
    dataset = Path(args.dataset)
    if not dataset.is_dir():
        raise UsageError(f"dataset folder not found: {dataset}")
    hub = hub_from_env(args.remote or None)
    tag = f"v{args.version}"
    try:
        if tag in hub.versions(args.repo):  # refuse before building anything
            raise UsageError(
                f"{args.repo} already has version {tag}; versions are immutable, choose a new one"
            )
    except PublishError as error:
        raise UsageError(str(error)) from None
    with tempfile.TemporaryDirectory(prefix="kv-release-") as temporary:
        release = Path(temporary) / "release"
        try:
            report = build_release(dataset, release, eval_tasks=_eval_tasks(args.decontaminate))
        except ValueError as error:
            raise UsageError(str(error)) from None
        for line in report.lines():
            print(line)
        tables = _attempt_tables(release)
        stats = [compute_stats(table, config) for config, table in tables.items()]
        plots = write_plots(tables, stats, release / "plots")
        model_stats = [column for table in tables.values() for column in per_model_stats(table)]
        build_card(release, args.repo, args.version, stats, plots, license=args.license,
                   model_stats=model_stats).save(release / "README.md")  # fmt: skip
        try:
            result = publish(release, args.repo, args.version, hub)
        except PublishError as error:
            raise UsageError(str(error)) from None
    print(
        f"published {result.repo_id} {result.tag} ({result.files} files, commit {result.commit[:12]}) at {result.url_or_path}"
    )
    print(f'load with: datasets.load_dataset("{result.repo_id}", "triton", revision="{result.tag}")'
          if args.remote else
          f'load with: datasets.load_dataset(str(LocalHub().checkout("{result.repo_id}", "{result.tag}")), "triton")')  # fmt: skip
    return 0


def cmd_stats(args: argparse.Namespace) -> int:
    from kernelvault.corpus.stats import compute_stats, format_table, write_plots

    tables = _attempt_tables(Path(args.dataset))
    stats = [compute_stats(table, config) for config, table in tables.items()]
    print(format_table(stats, markdown=args.markdown))
    if args.plots:
        for path in write_plots(tables, stats, Path(args.plots)):
            print(f"plot: {path}")
    return 0


def build_parser() -> argparse.ArgumentParser:
    parser = argparse.ArgumentParser(prog="kernelvault", description="Execution-verified GPU kernel corpora.")
    commands = parser.add_subparsers(dest="command", required=True)

    verify = commands.add_parser("verify", help="verify one candidate against one task")
    verify.add_argument("--task", required=True, help="task file (KernelBench form)")
    verify.add_argument("--candidate", required=True, help="candidate file (.py) or model answer (.md)")
    verify.add_argument("--target", default="triton", choices=["triton", "hip"])
    verify.add_argument("--json", action="store_true", help="print one JSON object")
    _add_platform_options(verify)
    verify.set_defaults(handler=cmd_verify)

    corpus = commands.add_parser("corpus", help="run the main job over a task suite and write Parquet shards")
    corpus.add_argument("--target", default="triton", choices=["triton", "hip"])
    corpus.add_argument("--tasks", help="task file, folder, KernelBench tree or hub:REPO (default: bundled)")
    corpus.add_argument("--out", help=f"output folder (default: {DEFAULT_OUT}/TARGET)")
    corpus.add_argument("--examples", help="folder of example candidates (default: the bundled examples/)")
    corpus.add_argument(
        "--answers", metavar="FILE_OR_FOLDER",
        help="verify answers models already wrote: a JSONL file or a folder of them (TritonBench's "
        "instruction/predict lines, or task/model/answer[/sample]); needs a jail or --allow-unjailed",
    )  # fmt: skip
    corpus.add_argument(
        "--base-url", help="OpenAI-compatible endpoint for the LLM agents (env OPENAI_BASE_URL)"
    )
    corpus.add_argument(
        "--model", help="model name at the endpoint (env KV_MODEL); the key is read from OPENAI_API_KEY"
    )
    corpus.add_argument(
        "--samples", type=int, default=1, help="independent trajectories per task (default 1)"
    )
    corpus.add_argument("--turns", type=int, default=3, help="turn budget of each trajectory (default 3)")
    _add_agent_options(corpus)
    corpus.add_argument(
        "--devices",
        help="verification lanes: `cpu` (--workers interpreter lanes) or GPU ids like `0,1` (one each)",
    )
    corpus.add_argument(
        "--lanes-per-gpu", type=int, default=1,
        help="verification lanes per GPU (default 1): their checks overlap, their timings take turns",
    )  # fmt: skip
    corpus.add_argument(
        "--compile-workers", type=int, help="processes for parse/static/compile (default: one per core)"
    )
    corpus.add_argument(
        "--executor", default="local", choices=["local", "ray"],
        help="local: this machine (default); ray: a Ray cluster, one verification actor per GPU (extra 'dist')",
    )  # fmt: skip
    corpus.add_argument(
        "--address", help="with --executor ray: `auto` (the cluster this node joined) or ray://HEAD:10001; "
        "default: start a local Ray instance",
    )  # fmt: skip
    corpus.add_argument(
        "--ray-writers", default="actors", choices=["actors", "driver"],
        help="with --executor ray: actors (default: each verification actor writes its own shards into --out, "
        "which every node must see) or driver (rows come back to the driver's one writer)",
    )  # fmt: skip
    corpus.add_argument("--no-progress", action="store_true", help="no progress bar")
    corpus.add_argument(
        "--new-run",
        action="store_true",
        help="start a new run even if --out holds one (default: resume it; refuse if its config differs)",
    )
    corpus.add_argument(
        "--decontaminate", help="evaluation task set: skip tasks that match it (same forms as --tasks)"
    )
    corpus.add_argument("--shard-rows", type=int, default=1000, help="rows per Parquet shard (default 1000)")
    _add_platform_options(corpus)
    corpus.set_defaults(handler=cmd_corpus)

    release = commands.add_parser(
        "release", help="build a release folder (configs triton/hip/sft/rl) from a corpus"
    )
    release.add_argument("--dataset", required=True, help="corpus folder written by `kernelvault corpus`")
    release.add_argument("--out", required=True, help="release folder to write (must be empty or absent)")
    release.add_argument(
        "--decontaminate", help="evaluation task set to drop from the release (same forms as --tasks)"
    )
    release.set_defaults(handler=cmd_release)

    publish = commands.add_parser("publish", help="publish a corpus as a tagged dataset version")
    publish.add_argument("--dataset", required=True, help="corpus folder written by `kernelvault corpus`")
    publish.add_argument("--repo", required=True, help="dataset repo id, ORG/NAME")
    publish.add_argument("--version", required=True, help="semantic version X.Y.Z (tagged vX.Y.Z)")
    publish.add_argument("--decontaminate", help="evaluation task set to drop before publishing")
    publish.add_argument("--license", default="apache-2.0")
    publish.add_argument(
        "--remote",
        action="store_true",
        help="the Hugging Face Hub (HF_TOKEN, HF_ENDPOINT) instead of the local hub folder (KV_HUB_DIR)",
    )
    publish.set_defaults(handler=cmd_publish)

    stats = commands.add_parser("stats", help="statistics of a corpus or release folder")
    stats.add_argument("dataset", help="corpus folder (data/<target>/) or release folder (<target>/)")
    stats.add_argument("--plots", help="write PNG plots into this folder")
    stats.add_argument("--markdown", action="store_true", help="print a Markdown table")
    stats.set_defaults(handler=cmd_stats)

    tasks = commands.add_parser("tasks", help="inspect task suites")
    tasks_commands = tasks.add_subparsers(dest="tasks_command", required=True)
    check = tasks_commands.add_parser(
        "check", help="run every reference and report broken or degenerate ones"
    )
    check.add_argument(
        "path", nargs="?", help="task file, folder, KernelBench tree or hub:REPO (default: bundled)"
    )
    check.add_argument("--performance", action="store_true", help="also run the (large) performance cases")
    check.add_argument("--workers", type=int, default=2)
    check.set_defaults(handler=cmd_tasks_check)
    listing = tasks_commands.add_parser("list", help="list the tasks of a suite")
    listing.add_argument("path", nargs="?")
    listing.set_defaults(handler=cmd_tasks_list)

    # Later stages register their own subcommands (their modules import heavy libraries only when run).
    from kernelvault.pipelines.eval_report import add_report_parser
    from kernelvault.pipelines.evaluation import add_eval_parser
    from kernelvault.rl.cli import add_rl_parser
    from kernelvault.sft.cli import add_sft_parser

    add_eval_parser(commands)
    add_report_parser(commands)
    add_sft_parser(commands)
    add_rl_parser(commands)
    return parser


def main(argv: list[str] | None = None) -> int:
    args = build_parser().parse_args(argv)
    try:
        return args.handler(args)
    except UsageError as error:
        print(f"kernelvault: error: {error}", file=sys.stderr)
        return 2
    except KeyboardInterrupt:
        print("kernelvault: interrupted", file=sys.stderr)
        return 130


if __name__ == "__main__":
    # `python -m kernelvault.cli`: run the imported module's main, so that an error class raised by the other
    # command modules (rl/, sft/ import kernelvault.cli.UsageError) is the one main catches
    from kernelvault.cli import main as imported_main

    sys.exit(imported_main())

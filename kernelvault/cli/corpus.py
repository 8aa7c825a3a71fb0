"""`kernelvault corpus`: the main job over a task suite (examples, answers already written, or a model)."""

from __future__ import annotations

import argparse
import os
from pathlib import Path
from typing import TYPE_CHECKING

from kernelvault.cli.common import (
    UsageError,
    add_agent_options,
    add_platform_options,
    build_verifier,
    eval_tasks,
    existing_path,
    load_tasks_or_exit,
    task_suite,
)
from kernelvault.cli.qa import add_qa_options
from kernelvault.contracts import Task
from kernelvault.pipelines.intake import Intake

if TYPE_CHECKING:
    from kernelvault.pipelines.answers import AnswerCandidates

DEFAULT_OUT = Path("out")


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


def _check_target_options(args: argparse.Namespace) -> None:
    """Options of the other kind of job are refused, not ignored (a QA run would otherwise take minutes
    while the --answers the user named are never read)."""
    if args.target == "qa":
        given = [flag for flag, value in (("--tasks", args.tasks), ("--examples", args.examples),
                                          ("--answers", args.answers), ("--decontaminate", args.decontaminate))
                 if value]  # fmt: skip
        if given:
            raise UsageError(f"{', '.join(given)}: for --target triton or hip; --target qa checks --qa entries, "
                             "or asks an endpoint --questions or --topics")  # fmt: skip
    elif args.qa or args.questions:
        raise UsageError(f"{'--qa' if args.qa else '--questions'} is for --target qa")


def cmd_corpus(args: argparse.Namespace) -> int:
    _check_target_options(args)  # before the imports below, which take seconds (torch)
    if args.target == "qa":
        from kernelvault.cli.qa import cmd_corpus_qa

        return cmd_corpus_qa(args)
    from kernelvault.corpus.ledger import ConfigurationChanged
    from kernelvault.pipelines.candidates import CandidateSource, ExampleCandidates
    from kernelvault.pipelines.corpus_job import run_corpus_job
    from kernelvault.pipelines.engine import EngineOptions
    from kernelvault.toolchain.verify import UnjailedModelOutput, require_jail_for_model_output

    loaded = load_tasks_or_exit(args.tasks)
    if args.decontaminate:
        from kernelvault.corpus.dedup import find_contaminated_tasks

        report = find_contaminated_tasks(loaded.tasks, eval_tasks(args.decontaminate))
        for item in report.contaminated:
            print(f"decontamination: skipping task {item.task_name} ({item.kind} match of {item.eval_task}, "
                  f"similarity {item.similarity:.2f})")  # fmt: skip
        loaded.tasks = [task for task in loaded.tasks if task.task_id not in report.task_ids()]
        if not loaded.tasks:
            raise UsageError("every task matches the evaluation set: nothing left to run")
    endpoint = None
    try:
        intake = Intake(args.stop_after)
    except ValueError as error:
        raise UsageError(str(error)) from None
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
        if args.stop_after is not None:  # its trajectories start together and write as whole groups
            raise UsageError("--stop-after is for examples and --answers; an agent job stops with Ctrl-C and "
                             "resumes from its ledger")  # fmt: skip
    if args.executor == "ray":
        from kernelvault.pipelines.ray_executor import import_ray

        try:
            import_ray()
        except RuntimeError as error:
            raise UsageError(str(error)) from None
    elif args.address or args.ray_writers != "actors":
        raise UsageError("--address and --ray-writers are for --executor ray")
    # One engine with a model or without: these options mean the same for both (kernelvault.pipelines.engine).
    engine = EngineOptions(workers=args.workers, devices=args.devices, lanes_per_gpu=args.lanes_per_gpu,
                           compile_workers=args.compile_workers, executor=args.executor, address=args.address)  # fmt: skip
    try:
        engine.check()
    except ValueError as error:
        raise UsageError(str(error)) from None
    verifier = build_verifier(args)
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
            with intake.closed_by_signals():
                summary = run_corpus_job(loaded, source, verifier, out_dir, args.target, engine,
                                         progress=not args.no_progress, new_run=args.new_run,
                                         shard_rows=args.shard_rows, ray_writers=args.ray_writers,
                                         intake=intake)  # fmt: skip
        else:
            config = AgentJobConfig(
                endpoint=endpoint, samples=args.samples, max_turns=args.turns,
                stop_on_correct=not args.keep_optimising, concurrency=args.concurrency,
                sampling=SamplingSettings(args.temperature, args.top_p, args.max_new_tokens),
                max_requests=args.max_requests, max_tokens=args.max_tokens, engine=engine,
                allow_unjailed=args.allow_unjailed,
            )  # fmt: skip
            agent_name = "HIPKernelGen" if args.target == "hip" else "TritonKernelGen"
            print(f"{agent_name} with model {endpoint.model} at {endpoint.base_url}: {len(loaded.tasks)} tasks × "
                  f"{args.samples} samples, up to {args.turns} turns, verified on {verifier.choice.platform}")  # fmt: skip
            with intake.closed_by_signals():
                summary = run_agent_job(loaded, verifier, out_dir, args.target, config,
                                        progress=not args.no_progress, new_run=args.new_run,
                                        shard_rows=args.shard_rows, intake=intake)  # fmt: skip
    except (ConfigurationChanged, UnjailedModelOutput) as error:
        raise UsageError(str(error)) from None
    print(summary.table())
    for line in summary.unexpected:
        print(f"unexpected: {line}")
    for line in summary.retry_later:
        print(f"retry on resume: {line}")
    print(f"wrote {summary.attempts} attempts in {len(summary.shards)} shard(s) to {out_dir.resolve()}")
    if summary.stopped_by:
        print(f"stopped by {summary.stopped_by}: {summary.left_for_resume()}; run the same command again to "
              "resume")  # fmt: skip
        if intake.signal_number is not None:  # stopped cleanly, but stopped: a caller's script learns it
            return 128 + intake.signal_number
    print(
        f'load with: datasets.load_dataset("parquet", data_dir="{(out_dir / "data" / args.target).resolve()}")'
    )
    return 0


def register(commands: argparse._SubParsersAction) -> None:
    corpus = commands.add_parser("corpus", help="run the main job over a task suite and write Parquet shards")
    corpus.add_argument("--target", default="triton", choices=["triton", "hip", "qa"],
                        help="triton or hip kernels for the tasks, or qa: ROCm library question-answer entries")  # fmt: skip
    corpus.add_argument("--tasks", type=task_suite,
                        help="task file, folder, KernelBench tree or hub:ORG/NAME[@vX.Y.Z] (default: bundled)")  # fmt: skip
    corpus.add_argument("--out", help=f"output folder (default: {DEFAULT_OUT}/TARGET)")
    corpus.add_argument(
        "--examples",
        type=existing_path("examples folder"),
        help="folder of example candidates (default: the bundled examples/)",
    )
    corpus.add_argument(
        "--answers", metavar="FILE_OR_FOLDER", type=existing_path("answers"),
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
    add_agent_options(corpus)
    corpus.add_argument(
        "--devices",
        help="verification lanes: `cpu` (--workers interpreter lanes) or GPU ids like `0,1` (--lanes-per-gpu "
        "each; on the cpu platform they run on the CPU, pinned to those ids: a multi-GPU layout without GPUs)",
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
        "--decontaminate",
        type=task_suite,
        help="evaluation task set: skip tasks that match it (same forms as --tasks)",
    )
    corpus.add_argument("--shard-rows", type=int, default=1000, help="rows per Parquet shard (default 1000)")
    corpus.add_argument(
        "--stop-after", type=float, metavar="SECONDS",
        help="take no new attempts after this long; finish and write those in flight, then exit 0 (the same "
        "command resumes the rest). Without a model, a first SIGINT/SIGTERM stops within seconds (exit 128+n), "
        "a second at once",
    )  # fmt: skip
    add_platform_options(corpus)
    add_qa_options(corpus)
    corpus.set_defaults(handler=cmd_corpus)

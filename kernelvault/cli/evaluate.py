"""`kernelvault eval`: one model (or answers already written) on a task suite; `kernelvault.pipelines.evaluation` does the work."""

from __future__ import annotations

import argparse
import re
from pathlib import Path

from kernelvault.cli.common import (
    UsageError,
    add_agent_options,
    add_platform_options,
    build_verifier,
    existing_path,
    task_suite,
)
from kernelvault.contracts import TARGETS
from kernelvault.pipelines.eval_metrics import format_results
from kernelvault.pipelines.evaluation import DEFAULT_OUT, EvalConfig, EvalInputError, Prices, run_evaluation


def register(commands: argparse._SubParsersAction) -> None:
    parser = commands.add_parser(
        "eval", help="evaluate a model on a task suite: compile rate, Pass@k, Corr@k, fast_p, cost"
    )
    parser.add_argument("--target", default="triton", choices=TARGETS)
    parser.add_argument("--suite", metavar="NAME_OR_PATH", type=task_suite,
                        help="task file, folder (TritonBench-T/G, ROCmBench), KernelBench tree or hub:ORG/NAME[@vX.Y.Z] "
                        "(default: bundled)")  # fmt: skip
    parser.add_argument(
        "--answers", metavar="FILE_OR_FOLDER", type=existing_path("answers"),
        help="evaluate answers models already wrote instead of a model at an endpoint: a JSONL file or folder "
        "(TritonBench's instruction/predict lines, or task/model/answer[/sample]); figures per model, k over "
        "samples; needs a jail or --allow-unjailed",
    )  # fmt: skip
    parser.add_argument("--task", action="append", default=[], metavar="NAME",
                        help="evaluate only this task of the suite (repeatable)")  # fmt: skip
    parser.add_argument("--model", help="model name at the endpoint (env KV_MODEL)")
    parser.add_argument(
        "--base-url", help="OpenAI-compatible endpoint (env OPENAI_BASE_URL); key from OPENAI_API_KEY"
    )
    parser.add_argument(
        "--samples", type=int, default=1, help="independent trajectories per task, K (default 1)"
    )
    parser.add_argument("--turns", type=int, default=3, help="attempts per trajectory, T (default 3)")
    parser.add_argument("--out", help=f"run folder (default: {DEFAULT_OUT}/MODEL-TARGET)")
    parser.add_argument("--training-corpus", metavar="DIR", type=task_suite,
                        help="the model's training corpus (corpus or release folder, or a task suite): "
                             "suite tasks that overlap it are reported loudly")  # fmt: skip
    parser.add_argument("--price-prompt", type=float, metavar="USD", help="USD per million prompt tokens")
    parser.add_argument(
        "--price-completion", type=float, metavar="USD", help="USD per million completion tokens"
    )
    add_agent_options(parser)
    parser.add_argument("--no-progress", action="store_true", help="no progress bar")
    parser.add_argument("--new-run", action="store_true",
                        help="start a new run even if --out holds one (default: resume it)")  # fmt: skip
    add_platform_options(parser)
    parser.set_defaults(handler=cmd_eval)


def _slug(text: str) -> str:
    return re.sub(r"[^A-Za-z0-9._-]+", "-", text).strip("-") or "model"


def _eval_config(args: argparse.Namespace) -> EvalConfig:
    if (args.price_prompt is None) != (args.price_completion is None):
        raise UsageError("give both --price-prompt and --price-completion, or neither")
    if any(price is not None and price < 0 for price in (args.price_prompt, args.price_completion)):
        raise UsageError("prices cannot be negative")
    if args.answers:
        if args.base_url or args.model:
            raise UsageError("--answers evaluates answers already written: it takes no --base-url or --model")
        return EvalConfig(
            agent=None, target=args.target, suite=args.suite, only_tasks=tuple(args.task),
            prices=Prices(args.price_prompt, args.price_completion), training_corpus=args.training_corpus,
            answers=args.answers, workers=args.workers, allow_unjailed=args.allow_unjailed,
        )  # fmt: skip

    try:
        from kernelvault.agents.client import EndpointConfig, SamplingSettings
        from kernelvault.pipelines.agent_job import AgentJobConfig
        from kernelvault.pipelines.engine import EngineOptions
    except ImportError as error:
        raise UsageError(f"evaluation needs the 'agents' extra ({error.name} is missing): "
                         "pip install 'kernelvault[agents]'") from None  # fmt: skip
    try:
        endpoint = EndpointConfig.from_env(args.base_url, args.model)
    except ValueError as error:
        raise UsageError(str(error)) from None
    if endpoint is None:
        raise UsageError(
            "evaluation needs a model endpoint: pass --base-url (or set OPENAI_BASE_URL) and --model"
        )
    if args.samples < 1 or args.turns < 1:
        raise UsageError("--samples and --turns must be at least 1")
    agent = AgentJobConfig(
        endpoint=endpoint, samples=args.samples, max_turns=args.turns, stop_on_correct=not args.keep_optimising,
        concurrency=args.concurrency, sampling=SamplingSettings(args.temperature, args.top_p, args.max_new_tokens),
        max_requests=args.max_requests, max_tokens=args.max_tokens, engine=EngineOptions(workers=args.workers),
        allow_unjailed=args.allow_unjailed,
    )  # fmt: skip
    return EvalConfig(
        agent=agent, target=args.target, suite=args.suite, only_tasks=tuple(args.task),
        prices=Prices(args.price_prompt, args.price_completion), training_corpus=args.training_corpus,
    )  # fmt: skip


def cmd_eval(args: argparse.Namespace) -> int:
    from kernelvault.corpus.ledger import ConfigurationChanged
    from kernelvault.toolchain.verify import UnjailedModelOutput

    config = _eval_config(args)
    verifier = build_verifier(args)
    suite = config.suite or "the bundled suite"
    if config.agent is None:
        run_dir = (
            Path(args.out)
            if args.out
            else DEFAULT_OUT / f"answers-{_slug(Path(args.answers).stem)}-{config.target}"
        )
        print(f"evaluating the answers in {config.answers} on {suite}: {config.target} verified on "
              f"{verifier.choice.platform}")  # fmt: skip
    else:
        endpoint = config.agent.endpoint
        run_dir = Path(args.out) if args.out else DEFAULT_OUT / f"{_slug(endpoint.model)}-{config.target}"
        print(f"evaluating {endpoint.model} at {endpoint.base_url} on {suite}: "
              f"{args.samples} sample(s) × up to {args.turns} attempt(s) per task, {config.target} verified on "
              f"{verifier.choice.platform}")  # fmt: skip
    try:
        result = run_evaluation(
            config, verifier, run_dir, progress=not args.no_progress, new_run=args.new_run
        )
    except EvalInputError as error:
        raise UsageError(str(error)) from None
    except (ConfigurationChanged, UnjailedModelOutput) as error:
        raise UsageError(str(error)) from None
    runs = list(result.per_model) or [result.metrics]
    print(format_results(runs))
    if result.clean_metrics is not None and not result.per_model:
        print(f"\nwithout the {len(result.contamination)} contaminated task(s):")
        print(format_results([result.clean_metrics]))
    for metrics in runs:
        prefix = f"{metrics.model}: " if result.per_model else ""
        for note in metrics.notes:
            print(f"note: {prefix}{note}")
        for name, reason in metrics.unjudged:
            print(f"counted out: {prefix}{name}: {reason}")
    for where, why in result.skipped_answers:
        print(f"answer not matched: {where}: {why}")
    for line in result.summary.retry_later:
        print(f"retry on resume: {line}")
    print(f"attempt rows: {(run_dir / 'data' / config.target).resolve()}")
    print(f"results: {(run_dir / 'eval' / 'results.json').resolve()} and results.md")
    return 0

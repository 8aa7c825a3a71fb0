"""The `kernelvault rl` commands: train (GRPO), diagnose (is there signal?), serve (the reward service).

    kernelvault rl --config rl/configs/qwen3-8b-h200.yaml [--max-steps 10 …]   GRPO with TRL
    kernelvault rl diagnose --success-rate 0.06 --group-size 8              the closed form (0.61)
    kernelvault rl diagnose --dataset out/triton --plot signal.png           binary vs graded on a corpus
    kernelvault rl diagnose --rewards out/rl                                 … on a GRPO run's reward log
    kernelvault rl serve --host 0.0.0.0 --port 8900 --workers 8              the reward service
    kernelvault rl tiny-model --out out/tiny-qwen3                           a tiny Qwen3 for smoke runs

`register` adds them to the `kernelvault` command line (handlers take the parsed arguments and return
an exit code; bad input raises kernelvault.cli.common.UsageError).
"""

from __future__ import annotations

import argparse
import dataclasses
import importlib
import importlib.util
import logging
import os
import signal
import sys
import typing
from pathlib import Path

from kernelvault.cli.common import UsageError
from kernelvault.config_file import field_help
from kernelvault.contracts import PLATFORMS
from kernelvault.toolchain.reference_times import REWARD_TIMINGS


def register(commands: argparse._SubParsersAction) -> None:
    from kernelvault.rl.config import RLConfig

    rl = commands.add_parser(
        "rl", help="GRPO with the graded execution reward; reward diagnostics; the reward service",
        description="Train with GRPO (TRL) on the toolchain's graded reward. Settings come from --config and "
                    "can be overridden one by one with the flags below.",
    )  # fmt: skip
    rl.add_argument("--config", metavar="FILE_OR_NAME",
                    help="YAML file of settings, or a bundled config by name: tiny, qwen3-8b-h200, ... (rl/configs/); "
                    "its relative paths are relative to it")  # fmt: skip
    for item in dataclasses.fields(RLConfig):
        flag = f"--{item.name.replace('_', '-')}"
        # A bare boolean flag means true (`--multi-turn`); any field also takes a YAML value (`--bf16 false`).
        metavar = _metavar(item.name)
        extra = {"nargs": "?", "const": "true"} if metavar == "BOOL" else {}
        rl.add_argument(flag, dest=f"set_{item.name}", default=argparse.SUPPRESS, metavar=metavar,
                        help=field_help(item), **extra)  # fmt: skip
    rl.set_defaults(handler=cmd_rl_train)
    sub = rl.add_subparsers(dest="rl_command", metavar="{diagnose,serve,tiny-model}")

    diagnose = sub.add_parser("diagnose", help="share of GRPO groups with zero advantage, binary vs graded")
    diagnose.add_argument(
        "--success-rate", type=float, help="closed form for a binary reward with this success rate"
    )
    diagnose.add_argument("--group-size", type=int, default=8, help="GRPO group size G (default 8)")
    diagnose.add_argument(
        "--tiers", help="closed form Σ q_k^G for reward-tier probabilities, e.g. 0.5,0.44,0.06"
    )
    diagnose.add_argument("--dataset", help="corpus or release folder: attempts grouped by task (and turn)")
    diagnose.add_argument("--unit", choices=["attempt", "trajectory"], default="attempt",
                          help="group attempts per task and turn, or trajectories per task (default attempt)")  # fmt: skip
    diagnose.add_argument(
        "--rewards", nargs="+", help="a GRPO run's reward log: rewards-rank*.jsonl files or their folder"
    )
    diagnose.add_argument("--threshold", type=float, default=0.05,
                          help="|advantage| (reward units) above which a sample counts as usable (default 0.05)")  # fmt: skip
    diagnose.add_argument("--plot", help="write a PNG bar chart here")
    diagnose.add_argument("--markdown", action="store_true", help="print a Markdown table")
    diagnose.set_defaults(handler=cmd_rl_diagnose)

    serve = sub.add_parser(
        "serve", help="serve the toolchain over HTTP with a job queue, for remote trainers"
    )
    serve.add_argument(
        "--host", default="127.0.0.1", help="address to bind (default 127.0.0.1: this machine only)"
    )
    serve.add_argument("--port", type=int, default=8900)
    serve.add_argument(
        "--workers",
        type=int,
        help="requests verified at once (default: twice the lanes, so a lane finds the next one prepared)",
    )
    serve.add_argument(
        "--devices",
        help="GPU ids the lanes go on, like `0,1` (default: every visible GPU; `cpu` lanes on the cpu platform)",
    )
    serve.add_argument("--lanes-per-gpu", type=int, default=1, help="persistent lanes per GPU (default 1)")
    serve.add_argument(
        "--cpu-lanes", type=int, default=2, help="interpreter lanes on the cpu platform (default 2)"
    )
    serve.add_argument("--token", help="require this bearer token (default: env KV_REWARD_TOKEN, else none)")
    serve.add_argument(
        "--platform", choices=PLATFORMS, help="force the platform (default: detect a GPU, else cpu)"
    )
    serve.add_argument(
        "--timeout", type=float, default=60.0, help="wall-clock seconds per candidate (default 60)"
    )
    serve.add_argument(
        "--timing", choices=REWARD_TIMINGS, default="rl",
        help="rl (default): a case's reference figure reused up to 32 times or 5 minutes (re-timed with a drift "
        "check) and 30 timed samples where the case's spread allows; full: the corpus's protocol",
    )  # fmt: skip
    serve.set_defaults(handler=cmd_rl_serve)

    tiny = sub.add_parser(
        "tiny-model", help="write a randomly initialised tiny Qwen3 and tokenizer (smoke runs)"
    )
    tiny.add_argument("--out", required=True, help="folder to write")
    tiny.add_argument(
        "--shape", choices=["tiny", "small"], default="tiny", help="tiny (~0.3 M parameters) or small (~30 M)"
    )
    tiny.set_defaults(handler=cmd_rl_tiny_model)


def _metavar(name: str) -> str:
    """The field's name, as `sft` and TRL's parsers show it, except for what a name does not say: a boolean,
    and a list or a mapping, written in YAML's flow form (every value is read as YAML,
    `kernelvault.rl.config.coerce`: `--lora-target-modules '[q_proj, v_proj]'`)."""
    from kernelvault.rl.config import field_types

    kinds = {typing.get_origin(kind) or kind for kind in field_types(name)} - {type(None)}
    for kind, metavar in ((bool, "BOOL"), (list, "YAML_LIST"), (dict, "YAML_MAPPING")):
        if kind in kinds:
            return metavar
    return name.upper()


def _overrides(args: argparse.Namespace) -> dict[str, object]:
    return {name[4:]: value for name, value in vars(args).items() if name.startswith("set_")}


def cmd_rl_train(args: argparse.Namespace) -> int:
    from kernelvault.rl.config import ConfigError, load_config

    if args.config is None and not _overrides(args):
        raise UsageError(
            "kernelvault rl needs --config FILE_OR_NAME (rl/configs/: tiny, ...), or a subcommand: diagnose, serve"
        )
    try:
        config = load_config(args.config, _overrides(args))
    except ConfigError as error:
        raise UsageError(str(error)) from None
    needed = ["trl", "transformers", "accelerate"] + (["peft"] if config.use_peft else [])
    needed += ["langgraph"] if config.multi_turn else []
    for module in needed:  # found, not imported: the imports take seconds, a missing one is an error at once
        if importlib.util.find_spec(module) is None:
            extra = "agents" if module == "langgraph" else "train"
            raise UsageError(f"kernelvault rl needs {module}: pip install 'kernelvault[{extra}]'")
    from kernelvault import progress

    with progress.waiting("loading TRL and transformers (5-20 s; a minute on a first run)"):
        for module in needed:
            importlib.import_module(module)
        from kernelvault.rl.train import summary_lines, train
    print(f"GRPO on {config.model}: {config.max_steps} step(s) of {config.num_generations} completions per prompt; "
          "each step generates, then verifies every completion (the first also starts the verifier's workers)",
          file=sys.stderr, flush=True)  # fmt: skip

    try:
        result = train(config)
    except ConfigError as error:
        raise UsageError(str(error)) from None
    for line in summary_lines(result):
        print(line)
    return 0


def cmd_rl_diagnose(args: argparse.Namespace) -> int:
    from kernelvault.rl import diagnostics

    did_something = False
    try:
        if args.success_rate is not None:
            value = diagnostics.binary_zero_advantage(args.success_rate, args.group_size)
            p, g = args.success_rate, args.group_size
            print(f"binary reward, success rate {p:g}, groups of {g}: (1-p)^G + p^G = {1 - p:g}^{g} + {p:g}^{g} "
                  f"= {value:.4f} of groups have zero advantage")  # fmt: skip
            did_something = True
        if args.tiers:
            tiers = [float(part) for part in args.tiers.split(",")]
            value = diagnostics.zero_advantage_closed_form(tiers, args.group_size)
            print(
                f"reward tiers {tiers}, groups of {args.group_size}: Σ q_k^G = {value:.4f} of groups have zero spread"
            )
            did_something = True
    except ValueError as error:
        raise UsageError(str(error)) from None
    groups = None
    if args.dataset:
        groups = diagnostics.groups_from_attempts(_attempt_rows(Path(args.dataset)), args.unit)
        source = f"{args.dataset} ({args.unit}s grouped by task)"
    elif args.rewards:
        paths = [p for item in args.rewards for p in (sorted(Path(item).glob("rewards-rank*.jsonl"))
                                                      if Path(item).is_dir() else [Path(item)])]  # fmt: skip
        if not paths or not all(p.is_file() for p in paths):
            raise UsageError(f"no reward log at {' '.join(args.rewards)}")
        groups = diagnostics.groups_from_reward_log(paths)
        source = f"reward log {', '.join(str(p) for p in paths)}"
    if groups is not None:
        stats = diagnostics.compare(groups, args.threshold)
        if not stats or stats[0].groups == 0:
            raise UsageError("no group with two or more samples: nothing to compare")
        print(f"{source}: {stats[0].groups} groups of 2+ samples ({stats[0].skipped_groups} single-sample groups "
              f"left out), usable = |r - group mean| > {args.threshold:g}")  # fmt: skip
        print(diagnostics.format_table(stats, markdown=args.markdown))
        if args.plot:
            print(
                f"plot: {diagnostics.plot_signal(stats, Path(args.plot), title=f'GRPO signal: {Path(source.split()[0]).name}')}"
            )
        did_something = True
    if not did_something:
        raise UsageError("give --success-rate, --tiers, --dataset or --rewards")
    return 0


def _attempt_rows(dataset: Path) -> list[dict]:  # noqa: ANN202
    from kernelvault.corpus.schema import ATTEMPT_CONFIGS
    from kernelvault.corpus.stats import load_attempts

    folders = (
        [dataset / "data" / config for config in ATTEMPT_CONFIGS]
        + [dataset / config for config in ATTEMPT_CONFIGS]
        + [dataset]
    )
    rows: list[dict] = []
    for folder in folders:
        if folder.is_dir() and any(folder.glob("*.parquet")):
            rows += load_attempts(folder).to_pylist()
    if not rows:
        raise UsageError(
            f"no attempt shards in {dataset} (expected data/triton/ or triton/ with .parquet files)"
        )
    return rows


def cmd_rl_serve(args: argparse.Namespace) -> int:
    import threading

    from kernelvault.rl.reward_service import TOKEN_ENV, RewardService, ServiceConfig
    from kernelvault.toolchain.lane_pool import LanePool, pool_lanes
    from kernelvault.toolchain.verify import (
        UnjailedModelOutput,
        Verifier,
        require_jail_for_model_output,
        reward_verify_config,
    )

    try:
        verifier = Verifier(reward_verify_config(args.platform, args.timeout, args.timing))
        require_jail_for_model_output(
            verifier
        )  # it serves rewards for model output (KV_ALLOW_UNJAILED=1 opts in)
        lanes = pool_lanes(verifier.choice.platform, args.devices, args.lanes_per_gpu, args.cpu_lanes)
    except (ValueError, UnjailedModelOutput) as error:
        raise UsageError(str(error)) from None
    pool = LanePool(verifier, lanes)
    workers = args.workers or pool.slots
    token = args.token or os.environ.get(TOKEN_ENV) or None
    environment = {
        "platform": verifier.choice.platform,
        "device": verifier.choice.device,
        "arch": verifier.choice.arch,
    }
    service = RewardService(
        pool.verify, environment, ServiceConfig(args.host, args.port, workers, token), pool.lane_jobs
    )
    try:
        url = service.start()
    except OSError as error:
        pool.close()
        raise UsageError(f"cannot listen on {args.host}:{args.port}: {error}") from None
    # SIGINT and SIGTERM both stop it, also where it was started with SIGINT ignored (a background job of a
    # script: Python then raises no KeyboardInterrupt) or by a service manager (which sends SIGTERM).
    stopping = threading.Event()
    received: list[int] = []

    def on_signal(signum: int, _frame: object) -> None:
        received.append(signum)
        stopping.set()

    for signum in (signal.SIGINT, signal.SIGTERM):
        signal.signal(signum, on_signal)
    # One line per request (method, path, status, seconds: kernelvault/http_json.py) on stderr; the rest of
    # logging stays at WARNING.
    logging.basicConfig(format="%(asctime)s %(message)s", datefmt="%H:%M:%S")
    logging.getLogger("kernelvault.http").setLevel(logging.INFO)
    print(f"reward service at {url} ({verifier.choice.device}, lanes on {','.join(lanes)}, {workers} request(s) "
          f"at once, {'token required' if token else 'no token'}); Ctrl-C or SIGTERM stops it", flush=True)  # fmt: skip
    try:
        while not stopping.wait(1.0):  # a timed wait: signal handlers run between waits
            pass
    finally:
        service.stop()
        # A verification in progress is not waited for: its client's retry asks again (the jobs live in memory).
        pool.close(abandon=True)
    return 128 + received[0] if received else 0


def cmd_rl_tiny_model(args: argparse.Namespace) -> int:
    from kernelvault import progress

    with progress.waiting("building a tiny Qwen3 and training its tokenizer (5 s; 30 s on a first run)"):
        from kernelvault.rl.tiny_model import build_tiny_policy

        path = build_tiny_policy(Path(args.out), args.shape)
    print(f"tiny Qwen3 ({args.shape}) and tokenizer written to {path.resolve()}")
    return 0

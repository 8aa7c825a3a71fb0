"""`kernelvault sft`: fine-tune on a corpus version, then measure the pass rate on held-out tasks.

    kernelvault sft --config sft/configs/tiny.yaml --dataset out/triton          # a corpus folder
    kernelvault sft --config sft/configs/qwen3-8b-lora.yaml --dataset hub:ORG/NAME@v1.0.0
    accelerate launch --config_file sft/configs/accelerate-fsdp-8gpu.yaml -m kernelvault.cli.sft \\
        --config sft/configs/qwen3-8b-full-fsdp.yaml --dataset ORG/NAME

Settings come from the YAML file, then from options (`--max-steps 20`); `kernelvault.sft.config` lists them all.
`python -m kernelvault.cli.sft …` is the same command, for launchers that need a module.
"""

from __future__ import annotations

import argparse
import importlib.util
import sys

from kernelvault.cli.common import ArgumentUsageError, CommandParser, UsageError
from kernelvault.dataset_ref import parse_dataset_ref
from kernelvault.sft.config import FIELDS, add_config_arguments, load_config


def register(commands: argparse._SubParsersAction) -> None:
    parser = commands.add_parser(
        "sft", help="fine-tune a model on a corpus version (TRL SFTTrainer) and measure its pass rate",
        description="Fine-tune on the sft config of a corpus version, then measure the pass rate on held-out "
                    "tasks with the agents and the verifier. Options override the --config YAML file.",
    )  # fmt: skip
    parser.add_argument("--config", metavar="FILE_OR_NAME",
                        help="YAML file of settings, or a bundled config by name: tiny, qwen3-8b-lora, ... "
                        "(sft/configs/); its relative paths are relative to it")  # fmt: skip
    add_config_arguments(parser)
    parser.set_defaults(handler=cmd_sft)


def cmd_sft(args: argparse.Namespace) -> int:
    overrides = {name: value for name, value in vars(args).items() if name in FIELDS}
    try:
        config = load_config(args.config, overrides)
        if config.dataset:  # a name that cannot be a dataset is said before the training stack loads
            parse_dataset_ref(config.dataset, config.revision)
    except ValueError as error:
        raise UsageError(str(error)) from None
    from kernelvault import progress

    missing = [name for name in ("trl", "transformers", "datasets") if importlib.util.find_spec(name) is None]
    if missing:  # said at once: the imports that would find it out take seconds
        raise UsageError(f"kernelvault sft needs the 'train' extra ({missing[0]} is missing): "
                         "pip install 'kernelvault[train]'")  # fmt: skip
    try:
        with progress.waiting("loading TRL, transformers and datasets (5-20 s; a minute on a first run)"):
            from kernelvault.sft.train import report_lines, run_sft
    except ImportError as error:
        raise UsageError(f"kernelvault sft needs the 'train' extra ({error.name} is missing): "
                         "pip install 'kernelvault[train]'") from None  # fmt: skip
    import datasets
    import transformers

    # The trainer's loss lines are the progress report; per-map and per-shard bars would drown them.
    datasets.disable_progress_bars()
    transformers.utils.logging.disable_progress_bar()
    try:
        result = run_sft(config)
    except ValueError as error:  # bad configuration or data, found while building the run
        raise UsageError(str(error).splitlines()[0]) from None
    for line in report_lines(result):
        print(line)
    return 0


def main(argv: list[str] | None = None) -> int:
    parser = CommandParser(prog="python -m kernelvault.cli.sft")
    register(parser.add_subparsers(dest="command", required=True))
    try:
        args = parser.parse_args(["sft", *(sys.argv[1:] if argv is None else argv)])
        return args.handler(args)
    except ArgumentUsageError as error:
        print(f"kernelvault sft: error: {error} (see `{error.command} --help`)", file=sys.stderr)
        return 2
    except UsageError as error:
        print(f"kernelvault sft: error: {error}", file=sys.stderr)
        return 2


if __name__ == "__main__":
    sys.exit(main())

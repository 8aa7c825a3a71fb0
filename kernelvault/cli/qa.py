"""`kernelvault corpus --target qa` (`make corpus TARGET=qa`): ROCm library QA entries, checked, into `qa` shards.

Without an endpoint it checks the bundled QA examples (or `--qa FILE_OR_FOLDER`); with one, the QA agent
answers `--questions FILE`, or writes and answers questions about `--topics N` topics of the inventory.
"""

from __future__ import annotations

import argparse
import asyncio
import os
import time
from pathlib import Path

from kernelvault.cli.common import UsageError, existing_path

DEFAULT_QA_OUT = Path("out") / "qa"


def add_qa_options(parser: argparse.ArgumentParser) -> None:
    parser.add_argument("--qa", metavar="FILE_OR_FOLDER", type=existing_path("QA entries"),
                        help="with --target qa: QA entries to check (YAML list or JSONL; default: the bundled examples)")  # fmt: skip
    parser.add_argument("--questions", metavar="FILE", type=existing_path("questions"),
                        help="with --target qa and an endpoint: questions ({question, library, topic}) for the QA agent")  # fmt: skip
    parser.add_argument("--topics", type=int, default=20,
                        help="with --target qa and an endpoint, no --questions: topics the agent asks about (default 20)")  # fmt: skip
    parser.add_argument("--libraries", default="hip,rocprim,rocsparse",
                        help="with --target qa: libraries the agent's topics come from (default hip,rocprim,rocsparse)")  # fmt: skip
    parser.add_argument("--topic-seed", type=int, default=0, help="with --target qa: seed of the topic draw")


def _isolation(allow_unjailed: bool):  # noqa: ANN202 - a toolchain type, imported lazily
    from kernelvault.toolchain.jail import probe_isolation

    isolation = probe_isolation()
    if not isolation.jailed and not allow_unjailed:
        raise UsageError(f"no jail on this machine ({isolation.detail}): QA snippets are model output and compile "
                         "and run in one; pass --allow-unjailed to run them as plain processes")  # fmt: skip
    return isolation


def _agent_entries(args: argparse.Namespace, inventory, out_dir: Path) -> list:  # noqa: ANN001
    from kernelvault.agents.client import EndpointConfig, ModelClient, RunBudget, SamplingSettings
    from kernelvault.agents.qa_agent import ROCmQAGen
    from kernelvault.pipelines.qa_job import (
        QAFileError,
        agent_entries,
        not_yet_asked,
        pick_topics,
        read_questions,
    )

    endpoint = EndpointConfig.from_env(args.base_url, args.model)
    assert endpoint is not None
    if args.questions:
        try:
            work, skipped = read_questions(Path(args.questions))
        except QAFileError as error:
            raise UsageError(str(error)) from None
        for line in skipped:
            print(f"skipped question {line}")
    else:
        libraries = [name.strip() for name in args.libraries.split(",") if name.strip()]
        work = [
            (topic, None) for topic in pick_topics(inventory, libraries, args.topics, seed=args.topic_seed)
        ]
    remaining = not_yet_asked(work, out_dir, endpoint.model)
    print(f"ROCmQAGen with model {endpoint.model} at {endpoint.base_url}: {len(work)} "
          f"{'questions' if args.questions else 'topics'}, {len(work) - len(remaining)} already in {out_dir}")  # fmt: skip
    work = remaining

    async def run() -> tuple[list, list[str]]:
        client = ModelClient(endpoint, args.concurrency, RunBudget(args.max_requests, args.max_tokens))
        try:
            sampling = SamplingSettings(args.temperature, args.top_p, args.max_new_tokens)
            return await agent_entries(ROCmQAGen(client, sampling, endpoint.model), work)
        finally:
            await client.close()

    entries, failures = asyncio.run(run())
    for line in failures:
        print(f"endpoint failure, skipped: {line}")
    if failures and not entries:  # nothing to write: the run failed, and a rerun asks again
        raise UsageError(
            f"the endpoint failed for all {len(failures)} requests; nothing written, rerun when it is back"
        )
    return entries


def cmd_corpus_qa(args: argparse.Namespace) -> int:
    from kernelvault.pipelines.qa_job import QAFileError, load_bundled_qa, load_qa, run_qa_job
    from kernelvault.toolchain.hip_build import HipToolchainMissing
    from kernelvault.toolchain.platforms import detect_platform
    from kernelvault.toolchain.qa_verify import build_qa_checker
    from kernelvault.toolchain.rocm_inventory import InventoryUnavailable

    try:
        choice = detect_platform(args.platform, None)
    except ValueError as error:
        raise UsageError(str(error)) from None
    endpoint = args.base_url or os.environ.get("OPENAI_BASE_URL")
    isolation = _isolation(args.allow_unjailed)
    try:
        checker = build_qa_checker(
            choice.platform, choice.device, isolation, timeout_s=max(args.timeout, 120.0)
        )
    except (HipToolchainMissing, InventoryUnavailable) as error:
        raise UsageError(str(error)) from None
    print(f"ROCm inventory: {len(checker.inventory.topics)} declarations from the installed headers "
          f"({', '.join(f'{name} {count}' for name, count in checker.inventory.libraries().items())})")  # fmt: skip
    model = None
    out_dir = Path(args.out) if args.out else DEFAULT_QA_OUT
    if endpoint and not args.qa:
        try:
            entries = _agent_entries(args, checker.inventory, out_dir)
        except ImportError as error:
            raise UsageError(f"the QA agent needs the 'agents' extra ({error.name} is missing): "
                             "pip install 'kernelvault[agents]'") from None  # fmt: skip
        except ValueError as error:
            raise UsageError(str(error)) from None
        model = args.model or os.environ.get("KV_MODEL")
    else:
        try:
            loaded = load_qa([Path(args.qa)]) if args.qa else load_bundled_qa()
        except QAFileError as error:
            raise UsageError(str(error)) from None
        for line in loaded.skipped:
            print(f"skipped entry {line}")
        entries = loaded.entries
        print(f"checking {len(entries)} QA entries from {args.qa or 'the bundled examples (examples/qa)'} "
              f"on {choice.platform} ({isolation.level})")  # fmt: skip
    if not entries and not (endpoint and not args.qa):
        raise UsageError("no QA entries to check")
    run_id = time.strftime("qa-%Y%m%d-%H%M%S")
    workers = args.compile_workers or os.cpu_count() or 1
    summary = run_qa_job(entries, out_dir, run_id, checker, workers=workers, model=model,
                         progress=not args.no_progress)  # fmt: skip
    for line in summary.lines():
        print(line)
    print(f"wrote {summary.checked} rows in {len(summary.shards)} shard(s) to {out_dir.resolve()}")
    print(f'load with: datasets.load_dataset("parquet", data_dir="{(out_dir / "data" / "qa").resolve()}")')
    return 0

"""`kernelvault rocm-api`: what the installed ROCm headers declare (the inventory the QA checks look names up in)."""

from __future__ import annotations

import argparse
import json

from kernelvault.cli.common import UsageError


def cmd_rocm_api(args: argparse.Namespace) -> int:
    from kernelvault.toolchain.rocm_inventory import InventoryUnavailable, load_inventory

    try:
        inventory = load_inventory()
    except InventoryUnavailable as error:
        raise UsageError(str(error)) from None
    topics = [topic for topic in inventory.topics
              if (not args.library or topic.library == args.library)
              and (not args.names or any(name in topic.name for name in args.names))
              and (args.internal or not topic.internal)]  # fmt: skip
    if args.json:
        print(json.dumps([vars(topic) for topic in topics], indent=1))
        return 0
    if not args.names:
        counts: dict[str, dict[str, int]] = {}
        for topic in topics:
            kinds = counts.setdefault(topic.library, {})
            kinds[topic.kind] = kinds.get(topic.kind, 0) + 1
        print(f"{len(topics)} declarations in the installed headers (fingerprint {inventory.fingerprint}, "
              f"read with {inventory.clang}):")  # fmt: skip
        for library, kinds in counts.items():
            print(f"  {library:<10} " + ", ".join(f"{count} {kind}" for kind, count in sorted(kinds.items())))
        return 0
    if not topics:
        print(f"no declaration in the installed headers matches {', '.join(args.names)}")
        return 1
    for topic in topics[: args.limit]:
        print(
            f"{topic.name}  [{topic.library} {topic.kind}{', internal' if topic.internal else ''}]  {topic.header}"
        )
        print(f"    {topic.signature}")
    if len(topics) > args.limit:
        print(f"... {len(topics) - args.limit} more (--limit)")
    return 0


def register(commands: argparse._SubParsersAction) -> None:
    parser = commands.add_parser(
        "rocm-api", help="look names up in the installed ROCm headers (the QA inventory)"
    )
    parser.add_argument("names", nargs="*", help="parts of qualified names (rocprim::block_scan, hipMemcpy)")
    parser.add_argument("--library", help="hip, rocprim, rocsparse, hipsparse, rocrand or hiprand")
    parser.add_argument("--internal", action="store_true", help="include detail namespaces and _names")
    parser.add_argument("--limit", type=int, default=40, help="declarations to print (default 40)")
    parser.add_argument(
        "--json", action="store_true", help="every matching declaration as JSON, with its doc"
    )
    parser.set_defaults(handler=cmd_rocm_api)

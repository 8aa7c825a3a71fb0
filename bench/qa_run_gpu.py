"""Issue #23 on the H200: the bundled QA programs that use only the HIP runtime, run through the HIP-to-CUDA header.

    python3 bench/qa_run_gpu.py [--qa FILE_OR_FOLDER]      (bench/gpu_session.sh: KV_BENCH=qa_run)

The device image has nvcc and no ROCm, so this runs the `run` check alone: each program is built with nvcc
against toolchain/hip_include and run in the jail with the GPU's device nodes; its stdout is compared with the
output its answer states. The compile and link checks against the ROCm headers are the CPU suite's
(tests/test_qa_corpus.py). Prints a markdown table: entry, outcome, seconds, and the first differing line.
"""

from __future__ import annotations

import argparse
import sys
from pathlib import Path

from kernelvault.pipelines.qa_job import load_bundled_qa, load_qa
from kernelvault.toolchain.hip_build import HipCompiler, find_hip_compiler
from kernelvault.toolchain.jail import probe_isolation
from kernelvault.toolchain.platforms import detect_platform
from kernelvault.toolchain.qa_build import SnippetBuilder, complete_translation_unit, extract_snippet


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--qa", help="QA entries (default: the bundled examples)")
    args = parser.parse_args()
    loaded = load_qa([Path(args.qa)]) if args.qa else load_bundled_qa()
    choice = detect_platform("cuda")
    found = find_hip_compiler("cuda", None)
    nvcc = HipCompiler(found.vendor, found.path, found.version, choice.arch)
    isolation = probe_isolation()
    builder = SnippetBuilder(None, isolation, timeout_s=120.0, nvcc=nvcc)
    print(
        f"# Bundled QA programs on {choice.device} ({choice.arch}), {nvcc.version}, isolation {isolation.level}\n"
    )
    print("| entry | deliberate mistake | run | seconds | output (first line that differs) |")
    print("|---|---|---|---|---|")
    outcomes: dict[str, int] = {}
    for entry in loaded.entries:
        snippet = extract_snippet(entry.answer)
        unit = complete_translation_unit(snippet.code) if snippet else None
        if unit is None or not unit.program or unit.libraries:
            continue  # not a HIP-runtime program: nothing to run on an NVIDIA GPU
        step = builder.run(unit, snippet.stated_output)
        outcomes[step.status] = outcomes.get(step.status, 0) + 1
        stated = (snippet.stated_output or "").strip().splitlines()
        got = step.log.strip().splitlines()
        differ = next(
            (f"{g!r} ≠ {s!r}" for g, s in zip(got, stated, strict=False) if g.rstrip() != s.rstrip()), ""
        )
        if not differ and step.status != "passed":
            differ = (step.log.strip().splitlines() or [""])[0][:120]
        print(
            f"| {entry.origin} | {'yes' if entry.mistake else ''} | {step.status} | {step.seconds:.1f} | {differ} |"
        )
    print("\n" + ", ".join(f"{status}: {count}" for status, count in sorted(outcomes.items())))
    return 0


if __name__ == "__main__":
    sys.exit(main())

"""Build time of a HIP kernel: the native fast path against KernelBench's `load_inline`, side by side.

For every kernel that exists in both forms (examples/hip/<name>.py and examples/hip/load_inline/<name>.py)
the same run builds it both ways from a cold cache:

- native: `kernelvault.toolchain.hip_build.compile_hip` (one nvcc or hipcc call producing a shared library, no
  PyTorch headers), into a fresh cache directory, so nothing is reused;
- load_inline: `torch.utils.cpp_extension.load_inline` with the candidate's own arguments, in a fresh
  process and a fresh build directory (on NVIDIA with the portability header on the include path, as
  the verification worker does). The time is that of the load_inline call only (not Python start-up).

Both paths run with the same concurrency (default 4 builds at a time, on a 16-core host) so that the
load_inline half fits in one device call; each build is a separate process either way.

    python bench/hip_build_time.py [--jobs 4] [--out results.md]

Needs a GPU machine (the native path only needs the compiler, load_inline needs a GPU build of torch).
"""

from __future__ import annotations

import argparse
import json
import os
import statistics
import subprocess
import sys
import tempfile
import time
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))
EXAMPLES = ROOT / "examples" / "hip"

_INLINE_ONE = r"""
import importlib.util, json, sys, time
from pathlib import Path
import torch
from torch.utils import cpp_extension

candidate, build_dir, include = sys.argv[1], sys.argv[2], sys.argv[3]
original = cpp_extension.load_inline
seconds = []

def timed_load_inline(*args, **kwargs):
    kwargs["build_directory"] = build_dir
    kwargs["verbose"] = False
    if not getattr(torch.version, "hip", None):
        kwargs["extra_include_paths"] = list(kwargs.get("extra_include_paths") or []) + [include]
    started = time.perf_counter()
    module = original(*args, **kwargs)
    seconds.append(time.perf_counter() - started)
    return module

cpp_extension.load_inline = timed_load_inline
spec = importlib.util.spec_from_file_location("kv_bench_candidate", candidate)
module = importlib.util.module_from_spec(spec)
spec.loader.exec_module(module)
print(json.dumps({"seconds": sum(seconds), "builds": len(seconds)}))
"""


def hip_source(path: Path) -> str:
    from kernelvault.toolchain.static_check import check_hip_candidate

    source = check_hip_candidate(path.read_text()).hip_source
    if source is None:
        raise ValueError(f"{path} has no HIP_SOURCE")
    return source


def build_native(name: str) -> float:
    from kernelvault.toolchain.hip_build import HipBuildCache, compile_hip, find_hip_compiler
    from kernelvault.toolchain.platforms import detect_platform

    choice = detect_platform()
    compiler = find_hip_compiler(choice.platform, choice.arch if choice.platform != "cpu" else None)
    with tempfile.TemporaryDirectory(prefix="kv-bench-native-") as cache:
        build = compile_hip(hip_source(EXAMPLES / f"{name}.py"), compiler, HipBuildCache(Path(cache)))
    if not build.ok:
        raise RuntimeError(f"{name}: native build failed: {build.log[:500]}")
    return build.seconds


def build_inline(name: str) -> float:
    from kernelvault.toolchain.hip_build import HIP_INCLUDE_DIR

    with tempfile.TemporaryDirectory(prefix="kv-bench-inline-") as build_dir:
        env = {**os.environ, "TORCH_EXTENSIONS_DIR": build_dir}
        run = subprocess.run(
            [sys.executable, "-c", _INLINE_ONE, str(EXAMPLES / "load_inline" / f"{name}.py"), build_dir,
             str(HIP_INCLUDE_DIR)],
            capture_output=True, text=True, timeout=900, env=env, cwd=build_dir,
        )  # fmt: skip
    if run.returncode != 0:
        raise RuntimeError(f"{name}: load_inline failed: {run.stderr[-1500:]}")
    report = json.loads(run.stdout.strip().splitlines()[-1])
    return float(report["seconds"])


def main() -> int:
    parser = argparse.ArgumentParser(
        description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter
    )
    parser.add_argument("--jobs", type=int, default=4, help="builds at a time, for both paths")
    parser.add_argument("--out", type=Path, help="write the markdown table here too")
    args = parser.parse_args()

    names = sorted(
        path.stem
        for path in (EXAMPLES / "load_inline").glob("*.py")
        if (EXAMPLES / f"{path.stem}.py").exists()
    )
    if len(names) < 10:
        print(f"warning: only {len(names)} kernels exist in both forms", file=sys.stderr)
    started = time.perf_counter()
    with ThreadPoolExecutor(args.jobs) as pool:
        native = dict(zip(names, pool.map(build_native, names), strict=True))
    native_wall = time.perf_counter() - started
    started = time.perf_counter()
    with ThreadPoolExecutor(args.jobs) as pool:
        inline = dict(zip(names, pool.map(build_inline, names), strict=True))
    inline_wall = time.perf_counter() - started

    import torch

    device = torch.cuda.get_device_name() if torch.cuda.is_available() else "cpu"
    lines = [
        f"Device: {device}; torch {torch.__version__}; {len(names)} kernels; {args.jobs} builds at a time",
        "",
        "| kernel | native build (s) | load_inline build (s) | ratio |",
        "|---|---|---|---|",
    ]
    for name in names:
        lines.append(
            f"| {name} | {native[name]:.2f} | {inline[name]:.2f} | {inline[name] / native[name]:.1f}× |"
        )
    median_native, median_inline = statistics.median(native.values()), statistics.median(inline.values())
    lines += [
        f"| **median** | **{median_native:.2f}** | **{median_inline:.2f}** | "
        f"**{median_inline / median_native:.1f}×** |",
        "",
        f"Wall time for all builds: native {native_wall:.1f} s, load_inline {inline_wall:.1f} s.",
    ]
    table = "\n".join(lines) + "\n"
    print(table)
    if args.out:
        args.out.write_text(table)
    return 0


if __name__ == "__main__":
    sys.exit(main())

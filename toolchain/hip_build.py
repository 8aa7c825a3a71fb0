"""The HIP compile stage: native-form HIP source → a shared library, through a content-addressed cache.

Which compiler builds a HIP candidate depends on where it will run:

    platform  compiler                                       output
    rocm      ROCm's hipcc (ROCM_PATH, /opt/rocm), --offload-arch=<device arch>     run and timed
    cuda      nvcc -x cu with the project's HIP-to-CUDA header (toolchain/hip_include)  run and timed
    cpu       hipcc with HIP_PLATFORM=amd (Debian's ROCm 5.2: gfx90a, gfx940)      compiled, never run

The native form needs no PyTorch headers: `extern "C"` launch functions in a shared library, called
through ctypes (`kernelvault.hip.load_hip`). That is what makes it fast to build (about 1.5 s with nvcc
against 54 s for a one-kernel `load_inline` extension on an H200; see bench/hip_build_time.py).

The cache key is the source, the compiler's identity and version, the target arch and every flag, so
a hit is always a library the same command would have produced. Entries are written to a temporary
name in the cache directory and renamed into place (atomic on one filesystem), so concurrent workers
never see half a library; failures are cached too (a resubmitted broken kernel costs nothing). The
cache is bounded: the least recently used entries go when it grows past its size.

The compiler runs in the jail (`kernelvault.toolchain.jail`, where the machine has one) and `kernelvault.toolchain.sandbox` (a
stripped environment, a wall-clock limit): it reads untrusted source, and preprocessor tricks
(`#include "/root/..."`, `-fplugin=`) see only the system's read-only files and the build's own folder. The
cache is filled from outside: the jailed compiler writes into its build folder, and this process copies
a finished library into the cache, which no jail can write.
"""

from __future__ import annotations

import functools
import hashlib
import json
import os
import re
import shutil
import subprocess
import tempfile
import time
from dataclasses import dataclass
from pathlib import Path

from kernelvault.toolchain.jail import Isolation
from kernelvault.toolchain.own_kernels import prefixed_kernel_source
from kernelvault.toolchain.sandbox import SandboxLimits, folder_jail, run_sandboxed

HIP_INCLUDE_DIR = Path(__file__).resolve().parent / "hip_include"
DEFAULT_CPU_HIP_ARCH = "gfx90a"  # Debian's ROCm 5.2 clang knows gfx90a and gfx940, not gfx942
DEFAULT_CACHE_BYTES = 2 << 30
DEBIAN_PACKAGES = "hipcc libamdhip64-dev rocm-device-libs"

# Appended to every native source: lets the loader turn an error code into the runtime's message.
ERROR_STRING_SHIM = """
extern "C" const char* kv_hip_error_string(int code) { return hipGetErrorString((hipError_t)code); }
"""

# AMD-only constructs that cannot work on NVIDIA, with the reason given to the model.
_AMD_ONLY_PATTERNS: tuple[tuple[re.Pattern[str], str], ...] = (
    (re.compile(r"__builtin_amdgcn_mfma\w*"), "an MFMA matrix-core builtin (AMD-only)"),
    (re.compile(r"__builtin_amdgcn_\w+"), "an AMDGCN builtin (AMD-only)"),
    (re.compile(r"__(?:ockl|ocml)_\w+"), "an AMD device-library internal (AMD-only)"),
    (re.compile(r"\basm\s*(?:volatile\s*)?\(\s*\"\s*(?:s_|v_|ds_|buffer_|global_|flat_)"), "GCN assembly"),
    (re.compile(r"__AMDGCN_WAVEFRONT_SIZE"), "the AMD wavefront-size macro"),
    # A lane offset of 32 or more only exists in a 64-wide wavefront; NVIDIA warps have 32 lanes.
    (
        re.compile(r"__shfl(?:_xor|_down|_up)?\s*\([^;]*?,\s*(?:32|64)\s*[,)]"),
        "a shuffle across 32 or more lanes (assumes 64-wide wavefronts; NVIDIA warps are 32 wide)",
    ),
)


class HipToolchainMissing(RuntimeError):
    """No usable HIP compiler on this machine; the message says what to install."""


@dataclass(frozen=True)
class HipCompiler:
    vendor: str  # "amd" (hipcc) or "nvidia" (nvcc through the portability header)
    path: str
    version: str
    arch: str  # gfx90a, gfx942, sm_90, ...

    def flags(self) -> list[str]:
        if self.vendor == "nvidia":
            return ["-x", "cu", "-std=c++17", "-O3", f"-arch={self.arch}", "-shared", "-Xcompiler", "-fPIC",
                    "-I", str(HIP_INCLUDE_DIR), "-lineinfo"]  # fmt: skip
        return ["-x", "hip", "-std=c++17", "-O3", f"--offload-arch={self.arch}", "-shared", "-fPIC"]

    def env(self) -> dict[str, str]:
        # Without HIP_PLATFORM=amd, hipcc takes the NVIDIA path wherever CUDA is installed.
        return {"HIP_PLATFORM": "amd"} if self.vendor == "amd" else {}


@dataclass(frozen=True)
class HipBuild:
    ok: bool
    library: Path | None
    log: str  # compiler diagnostics, paths replaced by `candidate.hip`
    seconds: float  # compile time (0 on a cache hit)
    cached: bool
    key: str
    command: str


def portability_issues(source: str) -> list[str]:
    """AMD-only constructs in a HIP source, each as 'line N: reason (`text`)'."""
    issues: list[str] = []
    for pattern, reason in _AMD_ONLY_PATTERNS:
        for match in pattern.finditer(source):
            line = source.count("\n", 0, match.start()) + 1
            if not any(f"`{match.group(0)[:60]}`" in issue for issue in issues):  # MFMA is also AMDGCN
                issues.append(f"line {line}: {reason} (`{match.group(0)[:60]}`)")
            break  # one example per construct is enough for feedback
    return issues


@functools.cache
def _compiler_version(path: str) -> str:
    try:
        out = subprocess.run([path, "--version"], capture_output=True, text=True, timeout=60,
                             env={**os.environ, "HIP_PLATFORM": "amd"} if "hipcc" in path else None)  # fmt: skip
    except (OSError, subprocess.TimeoutExpired) as error:
        return f"unknown ({error})"
    lines = [line.strip() for line in (out.stdout + out.stderr).splitlines() if line.strip()]
    interesting = [line for line in lines if "version" in line.lower() or "release" in line.lower()]
    return " | ".join(interesting[:3]) or " | ".join(lines[:2])


def _first_existing(*candidates: str | None) -> str | None:
    for candidate in candidates:
        if candidate and Path(candidate).is_file() and os.access(candidate, os.X_OK):
            return candidate
    return None


def find_hip_compiler(platform: str, arch: str | None) -> HipCompiler:
    """The compiler for HIP candidates on this platform; raises HipToolchainMissing with what to install."""
    if platform == "cuda":
        cuda_home = os.environ.get("CUDA_HOME") or os.environ.get("CUDA_PATH")
        path = _first_existing(
            shutil.which("nvcc"), cuda_home and f"{cuda_home}/bin/nvcc", "/usr/local/cuda/bin/nvcc"
        )
        if path is None:
            raise HipToolchainMissing(
                "HIP on NVIDIA needs nvcc (the CUDA toolkit): none on PATH or in CUDA_HOME"
            )
        return HipCompiler("nvidia", path, _compiler_version(path), arch or "sm_90")
    rocm = os.environ.get("ROCM_PATH") or "/opt/rocm"
    path = _first_existing(f"{rocm}/bin/hipcc", shutil.which("hipcc"), "/usr/bin/hipcc")
    if path is None:
        where = "install ROCm" if platform == "rocm" else f"apt-get install {DEBIAN_PACKAGES} (Debian 12)"
        raise HipToolchainMissing(f"no hipcc on this machine: {where} to compile HIP candidates")
    return HipCompiler("amd", path, _compiler_version(path), arch or DEFAULT_CPU_HIP_ARCH)


class HipBuildCache:
    """Content-addressed libraries (and cached failures) under one directory, bounded in size.

    Pruning reads the whole cache (a stat per entry), so a process prunes on its first store and then
    only after it has stored another 5% of the bound: with P processes sharing the cache it may overshoot
    by up to P × 5% between scans, where scanning after every store would cost a directory walk per build.
    """

    def __init__(self, root: Path, max_bytes: int = DEFAULT_CACHE_BYTES) -> None:
        self.root = Path(root)
        self.max_bytes = max_bytes
        self.scans = 0
        self._stored_since_scan: int | None = None  # None: not scanned by this process yet

    def key(self, source: str, compiler: HipCompiler) -> str:
        identity = {"source": source, "vendor": compiler.vendor, "version": compiler.version,
                    "arch": compiler.arch, "flags": compiler.flags(), "shim": ERROR_STRING_SHIM,
                    "header": _header_fingerprint() if compiler.vendor == "nvidia" else ""}  # fmt: skip
        return hashlib.sha256(json.dumps(identity, sort_keys=True).encode()).hexdigest()

    def paths(self, key: str) -> tuple[Path, Path]:
        folder = self.root / key[:2]
        return folder / f"{key}.so", folder / f"{key}.failed.log"

    def lookup(self, key: str) -> tuple[Path | None, str | None]:
        library, failure = self.paths(key)
        for path in (library, failure):
            if path.exists():
                try:
                    os.utime(path)  # least recently *used* is what eviction reads
                except OSError:
                    pass
        if library.exists():
            return library, None
        if failure.exists():
            try:
                return None, failure.read_text(encoding="utf-8")
            except OSError:
                return None, None
        return None, None

    def store(self, key: str, built: Path | None, log: str) -> Path | None:
        library, failure = self.paths(key)
        library.parent.mkdir(parents=True, exist_ok=True)
        handle, temporary = tempfile.mkstemp(dir=library.parent, prefix=".incoming-")
        os.close(handle)
        if built is not None:
            shutil.copyfile(built, temporary)
        else:
            Path(temporary).write_text(log, encoding="utf-8")
        # mkstemp made the file 0600: the verification workers (jailed, another uid) read it, nobody writes it
        os.chmod(temporary, 0o444)
        os.replace(temporary, library if built is not None else failure)
        stored = (library if built is not None else failure).stat().st_size
        if self._stored_since_scan is None or self._stored_since_scan + stored >= self.max_bytes // 20:
            self.prune()
        else:
            self._stored_since_scan += stored
        return library if built is not None else None

    def prune(self) -> None:
        self.scans += 1
        self._stored_since_scan = 0
        entries = []
        for path in self.root.glob("*/*"):
            try:
                stat = path.stat()
            except FileNotFoundError:  # another writer pruned it first
                continue
            entries.append((stat.st_mtime, stat.st_size, path))
        total = sum(size for _, size, _ in entries)
        for _, size, path in sorted(entries):
            if total <= self.max_bytes:
                break
            path.unlink(missing_ok=True)
            total -= size


@functools.cache
def _header_fingerprint() -> str:
    digest = hashlib.sha256()
    for path in sorted(HIP_INCLUDE_DIR.rglob("*.h")):
        digest.update(path.relative_to(HIP_INCLUDE_DIR).as_posix().encode())
        digest.update(path.read_bytes())
    return digest.hexdigest()


def _clean_log(text: str, build_dir: Path) -> str:
    text = text.replace(str(build_dir / "candidate.hip"), "candidate.hip").replace(str(build_dir) + "/", "")
    return text.replace(str(HIP_INCLUDE_DIR) + "/", "").strip()


def compile_hip(
    source: str,
    compiler: HipCompiler,
    cache: HipBuildCache,
    timeout_s: float = 120.0,
    isolation: Isolation | None = None,
) -> HipBuild:
    """Compile a native-form HIP source to a shared library (or return the cached result); in a jail where
    `isolation` has one. Its `__global__` functions are built under the harness's prefix (`own_kernels`), the
    names the device record knows the candidate's kernels by."""
    source = prefixed_kernel_source(source)
    key = cache.key(source, compiler)
    command = " ".join([Path(compiler.path).name, *compiler.flags(), "candidate.hip", "-o", "candidate.so"])
    library, failure_log = cache.lookup(key)
    if library is not None:
        return HipBuild(True, library, "(build cache hit)", 0.0, True, key, command)
    if failure_log is not None:
        return HipBuild(False, None, failure_log, 0.0, True, key, command)

    cache.root.mkdir(parents=True, exist_ok=True)
    build_dir = Path(tempfile.mkdtemp(prefix="build-", dir=cache.root))
    try:
        (build_dir / "candidate.hip").write_text(source + "\n" + ERROR_STRING_SHIM, encoding="utf-8")
        argv = [
            compiler.path,
            *compiler.flags(),
            str(build_dir / "candidate.hip"),
            "-o",
            str(build_dir / "candidate.so"),
        ]
        started = time.perf_counter()
        build_dir.chmod(0o755)
        jail = folder_jail(
            isolation, build_dir, read_only=(str(HIP_INCLUDE_DIR), str(Path(compiler.path).resolve().parent))
        )
        run = run_sandboxed(argv, build_dir, SandboxLimits(timeout_s, memory_bytes=None, cpu_threads=2),
                            compiler.env(), jail=jail)  # fmt: skip
        seconds = time.perf_counter() - started
        log = _clean_log(run.stderr_tail + "\n" + run.stdout_tail, build_dir)
        built = build_dir / "candidate.so"
        if run.timed_out:
            return HipBuild(False, None, f"the compiler did not finish within {timeout_s:.0f} s", seconds, False,
                            key, command)  # fmt: skip
        if run.returncode == 0 and built.exists():
            return HipBuild(True, cache.store(key, built, log), log, seconds, False, key, command)
        log = log or f"the compiler exited with {run.returncode or run.signal_name}"
        if run.returncode is not None and run.returncode > 0:  # a diagnosis, not a crash: worth remembering
            cache.store(key, None, log)
        return HipBuild(False, None, log, seconds, False, key, command)
    finally:
        shutil.rmtree(build_dir, ignore_errors=True)

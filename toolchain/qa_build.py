"""Compile, link and run the code snippet of a QA answer, against the real ROCm headers and libraries.

    answer ──► snippet (+ stated output) ──► translation unit ──► hipcc -c (gfx90a) ──► link (-l<libs>)
                                                                         └── HIP-runtime program on an NVIDIA GPU:
                                                                             nvcc + the HIP-to-CUDA header ──► run

How a snippet becomes a translation unit (the rules; `complete_translation_unit`):
1. The snippet is the answer's first fenced block labelled cpp, c++, hip, c, cu or cuda, or unlabelled. A
   later block labelled text, output or console, or any block after a line that says "output", is the stated
   output.
2. `#include <hip/hip_runtime.h>` is added when missing, and the umbrella header of every ROCm library the
   snippet names but does not include (`rocprim::` → `<rocprim/rocprim.hpp>`, `rocsparse_` →
   `<rocsparse/rocsparse.h>`, ...).
3. Statements with no function around them (no definition in the snippet) go into a function body.
4. A snippet with `main` is a program: it is compiled, then linked against the libraries it uses. Anything
   else is compiled only (`link` is not_applicable).
5. A snippet that is not a program and whose only errors are undeclared names that are not ROCm names (`n`,
   `d_x`: what the answer left out) is a `fragment`: it compiles as far as it goes, and nothing more is
   claimed. An undeclared ROCm name is a failure (that is what an invented API looks like to a compiler).

Running: only a program that uses nothing but the HIP runtime runs, and only on an NVIDIA GPU through the
project's HIP-to-CUDA header (there is no AMD GPU here); library calls (rocPRIM, rocSPARSE, rocRAND...)
have no NVIDIA build and are compiled and linked, never run. The row says which.

The compiler and the program run in the jail (`folder_jail`): a snippet is model output, and
`#include "/root/..."` or a program that reads the environment sees only the system's read-only files
and its own folder.
"""

from __future__ import annotations

import re
import shutil
import tempfile
import time
from dataclasses import dataclass
from pathlib import Path

from kernelvault.contracts import QAStep
from kernelvault.toolchain.hip_build import HIP_INCLUDE_DIR, HipCompiler
from kernelvault.toolchain.jail import Isolation, gpu_device_nodes
from kernelvault.toolchain.qa_identifiers import looks_like_rocm_name
from kernelvault.toolchain.rocm_inventory import LIBRARIES
from kernelvault.toolchain.sandbox import SandboxLimits, folder_jail, run_sandboxed

PASSED, FAILED, FRAGMENT, NO_CODE = "passed", "failed", "fragment", "no_code"
NOT_APPLICABLE, TIMEOUT = "not_applicable", "timeout"
# run outcomes beyond passed/failed/timeout
MISMATCH, RAN = "mismatch", "ran"  # ran: exit 0, and the answer states no output to compare
LIBRARY_CALLS, NO_GPU = "library_calls", "no_gpu"

_CODE_LANGUAGES = {"", "cpp", "c++", "hip", "c", "cu", "cuda", "cxx"}
_OUTPUT_LANGUAGES = {"text", "output", "console", "txt", "stdout"}
_BLOCK = re.compile(r"^```[ \t]*([\w+-]*)[^\n]*\n(.*?)^```[ \t]*$", re.DOTALL | re.MULTILINE)
_MAIN = re.compile(r"\bint\s+main\s*\(")
# a function (`name(...) {`, not `if (...) {`) or a type or namespace defined in the snippet: it is not bare statements
_DEFINITION = re.compile(r"\b(\w+)\s*\((?:[^;{}()]|\([^;{}()]*\))*\)\s*(?:const\s*)?(?:noexcept\s*)?(?:->\s*[\w:<>]+\s*)?\{"
                         r"|\b(?:struct|class|union|namespace)\s+\w*\s*(?::[^;{]*)?\{")  # fmt: skip
_CONTROL = {"if", "for", "while", "switch", "catch", "do", "return"}
_UNDECLARED = re.compile(r"error: (?:use of undeclared identifier|unknown type name) '([\w:]+)'")
_ERROR = re.compile(r"\berror:")
_LOG_CHARS = 4000
_RUN_OUTPUT_CHARS = 4000
# `rocprim::` or `rocsparse_`: the library a name belongs to, for its umbrella header and its -l flag
_LIBRARY_OF_NAME = (
    ("rocprim", re.compile(r"\brocprim\s*::|\bROCPRIM_")),
    ("rocsparse", re.compile(r"\brocsparse_|\bROCSPARSE_")),
    ("hipsparse", re.compile(r"\bhipsparse[A-Z]|\bHIPSPARSE_")),
    ("rocrand", re.compile(r"\brocrand_|\bROCRAND_")),
    ("hiprand", re.compile(r"\bhiprand[A-Z]|\bHIPRAND_")),
)


@dataclass(frozen=True)
class Snippet:
    code: str
    language: str
    stated_output: str | None


@dataclass(frozen=True)
class TranslationUnit:
    source: str
    program: bool
    libraries: tuple[str, ...]  # ROCm libraries beyond the HIP runtime that it uses
    wrapped: bool  # statements were put into a function body (rule 3)

    @property
    def link_flags(self) -> list[str]:
        links = {library.name: library.link for library in LIBRARIES}
        return [f"-l{links[name]}" for name in self.libraries if links.get(name)]


def extract_snippet(answer: str) -> Snippet | None:
    code: str | None = None
    language = ""
    stated: str | None = None
    for match in _BLOCK.finditer(answer):
        label, body = match.group(1).lower(), match.group(2)
        if code is None and label in _CODE_LANGUAGES:
            code, language, code_end = body, label, match.end()
            continue
        if code is not None and stated is None:
            before = answer[code_end : match.start()].lower()
            if label in _OUTPUT_LANGUAGES or "output" in before:
                stated = body
    return None if code is None or not code.strip() else Snippet(code, language, stated)


def libraries_used(code: str) -> tuple[str, ...]:
    used = []
    for name, pattern in _LIBRARY_OF_NAME:
        folder = next(library.folder for library in LIBRARIES if library.name == name)
        if pattern.search(code) or re.search(rf"#\s*include\s*[<\"]{folder}/", code):
            used.append(name)
    return tuple(used)


def complete_translation_unit(code: str) -> TranslationUnit:
    used = libraries_used(code)
    headers = ["hip/hip_runtime.h", *(library.umbrella for library in LIBRARIES if library.name in used)]
    missing = [header for header in headers
               if not re.search(rf"#\s*include\s*[<\"]{re.escape(header.split('/')[0])}/", code)]  # fmt: skip
    prelude = "".join(f"#include <{header}>\n" for header in missing)
    program = bool(_MAIN.search(code))
    defines = any(match.group(1) not in _CONTROL for match in _DEFINITION.finditer(code))
    wrapped = not program and not defines
    if wrapped:
        includes = "".join(line + "\n" for line in code.splitlines() if line.lstrip().startswith("#"))
        body = "".join(line + "\n" for line in code.splitlines() if not line.lstrip().startswith("#"))
        code = f"{includes}void kv_snippet_body() {{\n{body}}}\n"
    return TranslationUnit(prelude + code, program, used, wrapped)


def _clean(text: str, folder: Path) -> str:
    return text.replace(str(folder) + "/", "").replace(str(HIP_INCLUDE_DIR) + "/", "").strip()[-_LOG_CHARS:]


def _run_tool(argv: list[str], folder: Path, isolation: Isolation | None, timeout_s: float,
              env: dict[str, str], read_only: tuple[str, ...] = (), devices: tuple[str, ...] = ()):  # fmt: skip  # noqa: ANN202
    jail = folder_jail(isolation, folder, read_only=read_only, devices=devices)
    limits = SandboxLimits(timeout_s, memory_bytes=None, cpu_threads=2)
    return run_sandboxed(argv, folder, limits, env, jail=jail)


def only_missing_declarations(log: str) -> bool:
    """Every error is an undeclared non-ROCm name: what a fragment leaves out, not a wrong API (rule 5)."""
    errors = len(_ERROR.findall(log))
    undeclared = [name for name in _UNDECLARED.findall(log) if not looks_like_rocm_name(name)]
    return errors > 0 and len(undeclared) == errors


class SnippetBuilder:
    """Compiles and links snippets with hipcc (AMD, for gfx90a) and runs HIP-runtime programs with nvcc."""

    def __init__(self, hipcc: HipCompiler | None, isolation: Isolation | None, timeout_s: float = 180.0,
                 nvcc: HipCompiler | None = None) -> None:  # fmt: skip
        """`hipcc` None: a machine that only runs programs (the H200 image has nvcc and no ROCm)."""
        self.hipcc = hipcc
        self.isolation = isolation
        self.timeout_s = timeout_s
        self.nvcc = nvcc  # set on a CUDA machine: the run check
        self._tool_dirs = tuple(str(Path(c.path).resolve().parent) for c in (hipcc, nvcc) if c is not None)

    def _step(
        self, argv: list[str], folder: Path, env: dict[str, str], devices: tuple[str, ...] = ()
    ) -> QAStep:
        started = time.perf_counter()
        run = _run_tool(argv, folder, self.isolation, self.timeout_s, env,
                        (str(HIP_INCLUDE_DIR), *self._tool_dirs), devices)  # fmt: skip
        seconds = time.perf_counter() - started
        log = _clean(run.stderr_tail + "\n" + run.stdout_tail, folder)
        if run.timed_out:
            return QAStep(TIMEOUT, f"did not finish within {self.timeout_s:.0f} s", seconds)
        if run.returncode == 0:
            return QAStep(PASSED, log, seconds)
        return QAStep(FAILED, log or f"exited with {run.returncode or run.signal_name}", seconds)

    def build(self, unit: TranslationUnit) -> tuple[QAStep, QAStep]:
        """(compile, link) of one translation unit for gfx90a."""
        if self.hipcc is None:
            raise ValueError(
                "this SnippetBuilder has no hipcc: it can only run programs (SnippetBuilder.run)"
            )
        folder = self._folder_with(unit, "kv-qa-")
        try:
            flags = ["-x", "hip", "-std=c++17", "-O1", f"--offload-arch={self.hipcc.arch}"]
            compiled = self._step([self.hipcc.path, *flags, "-c", "snippet.hip", "-o", "snippet.o"], folder,
                                  self.hipcc.env())  # fmt: skip
            if compiled.status == FAILED and not unit.program and only_missing_declarations(compiled.log):
                compiled = QAStep(FRAGMENT, compiled.log, compiled.seconds)
            if not unit.program:
                return compiled, QAStep(NOT_APPLICABLE, "not a program (no main)", 0.0)
            if compiled.status != PASSED:
                return compiled, QAStep(NOT_APPLICABLE, "did not compile", 0.0)
            linked = self._step([self.hipcc.path, f"--offload-arch={self.hipcc.arch}", "snippet.o", "-o", "program",
                                 *unit.link_flags], folder, self.hipcc.env())  # fmt: skip
            return compiled, linked
        finally:
            shutil.rmtree(folder, ignore_errors=True)

    @staticmethod
    def _folder_with(unit: TranslationUnit, prefix: str) -> Path:
        folder = Path(tempfile.mkdtemp(prefix=prefix))
        folder.chmod(0o755)
        (folder / "snippet.hip").write_text(unit.source, encoding="utf-8")
        return folder

    def _nvcc_build(self, folder: Path) -> QAStep:
        assert self.nvcc is not None
        built = self._step([self.nvcc.path, "-x", "cu", "-std=c++17", "-O2", f"-arch={self.nvcc.arch}", "-I",
                            str(HIP_INCLUDE_DIR), "snippet.hip", "-o", "program"], folder, {})  # fmt: skip
        if built.status != PASSED:
            return QAStep(FAILED, "nvcc through the HIP-to-CUDA header: " + built.log, built.seconds)
        return built

    def build_for_nvidia(self, unit: TranslationUnit) -> QAStep:
        """The build half of `run` alone (nvcc through the HIP-to-CUDA header): on a machine with nvcc and no GPU,
        it shows a program will reach the run check."""
        folder = self._folder_with(unit, "kv-qa-nvcc-")
        try:
            return self._nvcc_build(folder)
        finally:
            shutil.rmtree(folder, ignore_errors=True)

    def run(self, unit: TranslationUnit, stated_output: str | None) -> QAStep:
        """Run a HIP-runtime program on this machine's NVIDIA GPU, through the HIP-to-CUDA header."""
        if not unit.program:
            return QAStep(NOT_APPLICABLE, "not a program (no main)", 0.0)
        if unit.libraries:
            return QAStep(LIBRARY_CALLS, f"calls {', '.join(unit.libraries)}, which needs an AMD GPU: "
                              "compiled and linked, not run", 0.0)  # fmt: skip
        if self.nvcc is None:
            return QAStep(NO_GPU, "no GPU on this machine: compiled and linked, not run", 0.0)
        folder = self._folder_with(unit, "kv-qa-run-")
        try:
            built = self._nvcc_build(folder)
            if built.status != PASSED:
                return built
            ran = _run_tool(["./program"], folder, self.isolation, self.timeout_s, {}, (), gpu_device_nodes())
            output = ran.stdout_tail[-_RUN_OUTPUT_CHARS:]  # stdout alone: that is what the answer states
            if ran.timed_out:
                return QAStep(TIMEOUT, f"did not finish within {self.timeout_s:.0f} s", ran.seconds)
            if ran.returncode != 0:
                why = f"exited with {ran.returncode or ran.signal_name}"
                return QAStep(
                    FAILED, f"{why}\n{_clean(ran.stderr_tail, folder)}\n{output}".strip(), ran.seconds
                )
            if stated_output is None:
                return QAStep(RAN, output, ran.seconds)
            same = _normalise(output) == _normalise(stated_output)
            return QAStep(PASSED if same else MISMATCH, output, ran.seconds)
        finally:
            shutil.rmtree(folder, ignore_errors=True)


def _normalise(text: str) -> str:
    return "\n".join(line.rstrip() for line in text.strip().splitlines())

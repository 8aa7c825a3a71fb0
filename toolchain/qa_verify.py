"""Check one ROCm QA entry: API existence, compile, link, run, then the QA score.

    QAEntry ──► qa_identifiers (inventory lookup) ──► qa_build (hipcc -c, link; nvcc + run on a GPU) ──► qa_score
            ──► QAVerdict

What a verdict proves, and what it does not:
- `identifiers`: every ROCm name the answer uses (in its code and in backticks in its prose) is declared by
  the installed headers, or is listed as invented. It does not prove the name is used correctly: that is what
  the compile check is for, and only for code.
- `compile` / `link`: the snippet, completed by the documented rules, compiles for gfx90a with ROCm's own
  clang and links against the real libraries. It does not prove the code computes the right thing.
- `run`: a HIP-runtime program ran on an NVIDIA GPU through the HIP-to-CUDA header and printed what the
  answer states. It does not prove the same on an AMD GPU (wavefront size differs), and library calls are
  never run: there is no AMD GPU here.
- Nothing here checks a performance claim, or prose that names no API.
"""

from __future__ import annotations

from dataclasses import dataclass, field

from kernelvault.contracts import QAEntry, QAStep, QAVerdict, RunEnvironment
from kernelvault.toolchain.hip_build import DEFAULT_CPU_HIP_ARCH, HipCompiler, find_hip_compiler
from kernelvault.toolchain.jail import Isolation
from kernelvault.toolchain.platforms import detect_platform, package_versions
from kernelvault.toolchain.qa_build import (
    FAILED,
    MISMATCH,
    NO_CODE,
    NOT_APPLICABLE,
    TIMEOUT,
    SnippetBuilder,
    complete_translation_unit,
    extract_snippet,
)
from kernelvault.toolchain.qa_identifiers import CUDA_ONLY, INVENTED, check_identifiers
from kernelvault.toolchain.reward import DEFAULT_QA_SCORE, QAScoreConfig, qa_score
from kernelvault.toolchain.rocm_inventory import ApiInventory, load_inventory

_FAILURES = frozenset({FAILED, TIMEOUT, MISMATCH})


@dataclass
class QAChecker:
    inventory: ApiInventory
    builder: SnippetBuilder
    environment: RunEnvironment
    score_config: QAScoreConfig = field(default=DEFAULT_QA_SCORE)

    def check(self, entry: QAEntry) -> QAVerdict:
        snippet = extract_snippet(entry.answer)
        identifiers = tuple(check_identifiers(entry.answer, snippet.code if snippet else "", self.inventory))
        skipped = QAStep(NOT_APPLICABLE, "no code block", 0.0)
        if snippet is None:
            compiled, linked, ran, unit = QAStep(NO_CODE, "no code block", 0.0), skipped, skipped, None
        else:
            unit = complete_translation_unit(snippet.code)
            compiled, linked = self.builder.build(unit)
            if linked.status == "passed":
                ran = self.builder.run(unit, snippet.stated_output)
            else:
                why = "not a program (no main)" if not unit.program else "did not build"
                ran = QAStep(NOT_APPLICABLE, why, 0.0)
        invented = sum(1 for item in identifiers if item.status in (INVENTED, CUDA_ONLY))
        score = qa_score(invented, compiled.status, linked.status, ran.status, self.score_config)
        verified = not invented and not any(step.status in _FAILURES for step in (compiled, linked, ran))
        return QAVerdict(
            entry_id=entry.entry_id,
            identifiers=identifiers,
            snippet=snippet.code if snippet else None,
            translation_unit=unit.source if unit else None,
            stated_output=snippet.stated_output if snippet else None,
            compile=compiled,
            link=linked,
            run=ran,
            score=score,
            verified=verified,
            environment=self.environment,
        )


def build_qa_checker(platform: str, device: str = "cpu", isolation: Isolation | None = None,
                     timeout_s: float = 180.0) -> QAChecker:  # fmt: skip
    """A checker for this machine: hipcc for gfx90a always; on `cuda`, nvcc for the run check. Raises
    HipToolchainMissing or InventoryUnavailable with what to install."""
    hipcc = find_hip_compiler("cpu", DEFAULT_CPU_HIP_ARCH)  # the AMD compiler, whatever GPU this machine has
    nvcc = find_hip_compiler("cuda", None) if platform == "cuda" else None
    if nvcc is not None:
        nvcc = HipCompiler(nvcc.vendor, nvcc.path, nvcc.version, detect_platform("cuda").arch)
    inventory = load_inventory()
    versions = {**package_versions("clang"), "hipcc": hipcc.version, "rocm_headers": inventory.fingerprint,
                "libclang": inventory.clang, **({"nvcc": nvcc.version} if nvcc else {})}  # fmt: skip
    environment = RunEnvironment(
        platform, device, hipcc.arch, versions, isolation.level if isolation else "process"
    )  # type: ignore[arg-type]
    return QAChecker(inventory, SnippetBuilder(hipcc, isolation, timeout_s, nvcc), environment)

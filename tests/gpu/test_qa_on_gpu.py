"""The run check of the QA part on a real GPU (marked `gpu`; bench/gpu_session.sh on the H200, never in CI).

The bundled QA programs that use only the HIP runtime are built with nvcc through the HIP-to-CUDA header and
run in the jail with the GPU's device nodes. A correct entry prints exactly what its answer states; the entry
whose deliberate mistake is a wrong stated output is a `mismatch`. The device image has no ROCm, so the
compile and link checks are the CPU suite's (tests/test_qa_corpus.py).
"""

from __future__ import annotations

import pytest

torch = pytest.importorskip("torch")
pytestmark = [
    pytest.mark.gpu,
    pytest.mark.skipif(not torch.cuda.is_available() or not torch.version.cuda, reason="needs an NVIDIA GPU"),
]

from kernelvault.pipelines.qa_job import load_bundled_qa  # noqa: E402
from kernelvault.toolchain.hip_build import HipCompiler, find_hip_compiler  # noqa: E402
from kernelvault.toolchain.jail import probe_isolation  # noqa: E402
from kernelvault.toolchain.platforms import detect_platform  # noqa: E402
from kernelvault.toolchain.qa_build import SnippetBuilder, complete_translation_unit, extract_snippet  # noqa: E402


def test_the_bundled_hip_runtime_programs_print_what_their_answers_state() -> None:
    loaded = load_bundled_qa()
    found = find_hip_compiler("cuda", None)
    builder = SnippetBuilder(None, probe_isolation(), 120.0,
                             HipCompiler(found.vendor, found.path, found.version, detect_platform("cuda").arch))  # fmt: skip
    outcomes = {}
    for entry in loaded.entries:
        if loaded.expectations[entry.entry_id].get("run") != "runnable":
            continue
        snippet = extract_snippet(entry.answer)
        step = builder.run(complete_translation_unit(snippet.code), snippet.stated_output)
        outcomes[entry.origin] = (step.status, "mismatch" if entry.mistake else "passed", step.log[-300:])
    wrong = {origin: got for origin, got in outcomes.items() if got[0] != got[1]}
    assert len(outcomes) >= 10 and not wrong, wrong

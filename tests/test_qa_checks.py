"""The QA checks on their own: which names an answer uses, what the real headers declare, what hipcc says.

The inventory is read from this machine's ROCm headers with hipcc's clang (make installs Debian's packages
as root); the compile and link checks run the real hipcc in the jail.
"""

from __future__ import annotations

import shutil
from pathlib import Path

import pytest

from kernelvault.contracts import QAEntry
from kernelvault.toolchain.qa_build import complete_translation_unit, extract_snippet
from kernelvault.toolchain.qa_identifiers import defined_names, named_identifiers
from kernelvault.toolchain.reward import qa_score
from kernelvault.toolchain.rocm_inventory import InventoryUnavailable, load_inventory

needs_rocm = pytest.mark.skipif(
    shutil.which("hipcc") is None or not Path("/usr/include/rocprim/rocprim.hpp").is_file(),
    reason="needs Debian's hipcc and ROCm libraries (make installs them as root: librocprim-dev librocsparse-dev ...)",
)


@pytest.fixture(scope="module")
def inventory(tmp_path_factory: pytest.TempPathFactory):
    try:
        return load_inventory(cache_dir=tmp_path_factory.mktemp("inventory-cache"))
    except InventoryUnavailable as error:
        pytest.skip(str(error))


@pytest.fixture(scope="module")
def checker(inventory):
    from kernelvault.toolchain.jail import probe_isolation
    from kernelvault.toolchain.qa_verify import build_qa_checker

    return build_qa_checker("cpu", isolation=probe_isolation())


def answer(prose: str, code: str, output: str | None = None) -> str:
    text = f"{prose}\n\n```cpp\n{code}\n```\n"
    return text + (f"\nExpected output:\n\n```text\n{output}\n```\n" if output is not None else "")


def check(checker, text: str, library: str = "hip"):
    return checker.check(QAEntry("a question", text, library, "hipMemcpyAsync", "example:test"))


def test_names_are_looked_up_without_template_arguments_and_with_their_scope() -> None:
    code = "using scan_t = rocprim::block_scan<int, 256>;\nvoid f() { rocprim::block_scan<float, 64>::storage_type s; }"
    assert [name for name, _ in named_identifiers("", code)] == [
        "rocprim::block_scan",
        "rocprim::block_scan::storage_type",
    ]


def test_prose_outside_backticks_and_the_answers_own_names_are_not_api() -> None:
    prose = "Compile with hipcc; HIP is portable. Call `hipMalloc` and `hipcc`, then `HIP_CHECK`."
    code = "#define HIP_CHECK(x) x\nstruct hipThing {};\nvoid hipHelper(int n) { }"
    assert defined_names(code) >= {"HIP_CHECK", "hipThing", "hipHelper"}
    assert named_identifiers(prose, code) == [("hipMalloc", "text")]
    # header names are files, not API: `rocrand_kernel` is not looked up
    with_headers = named_identifiers(
        "See `rocrand/rocrand_kernel.h`.", "#include <rocrand/rocrand_kernel.h>\nvoid f();"
    )
    assert with_headers == []


@needs_rocm
def test_the_inventory_holds_what_the_headers_declare(inventory) -> None:
    scan = inventory.lookup("rocprim::block_scan")
    assert (
        scan.kind == "template" and scan.header == "rocprim/block/block_scan.hpp" and "block_scan" in scan.doc
    )
    assert inventory.lookup("rocprim::block_scan::inclusive_scan").kind == "member"
    assert "rocsparse_handle handle" in inventory.lookup("rocsparse_scsrmv").signature
    assert inventory.lookup("hipMemcpyHostToDevice").kind == "enumerator"
    assert inventory.lookup("hipLaunchKernelGGL").kind == "macro"
    assert inventory.lookup("rocprim::block_scan_fast") is None
    assert inventory.lookup("__shfl_down_sync") is None  # CUDA's, not in ROCm 5.2's headers
    assert inventory.lookup("__shfl_down") is not None
    assert all(
        inventory.libraries()[name] > 50 for name in ("hip", "rocprim", "rocsparse", "hipsparse", "rocrand")
    )


@needs_rocm
def test_the_inventory_is_cached_by_the_headers_contents(inventory, tmp_path) -> None:
    first = load_inventory(cache_dir=tmp_path)
    assert list(tmp_path.glob("rocm-inventory-*.json")) and first.fingerprint == inventory.fingerprint
    assert load_inventory(cache_dir=tmp_path).topics == first.topics


@needs_rocm
def test_an_invented_rocprim_function_and_a_cuda_only_call_are_named(checker) -> None:
    verdict = check(checker, answer(
        "Use `rocprim::block_scan_fast` for speed.",
        "#include <hip/hip_runtime.h>\n__global__ void k(float* x) { x[0] = __shfl_down_sync(0xffffffff, x[0], 1); }",
    ))  # fmt: skip
    statuses = {item.name: item.status for item in verdict.identifiers}
    assert statuses == {"__shfl_down_sync": "cuda_only", "rocprim::block_scan_fast": "invented"}
    assert verdict.invented == ("__shfl_down_sync", "rocprim::block_scan_fast")
    assert verdict.score.total == 0.0 and not verdict.verified
    assert verdict.compile.status == "failed" and "__shfl_down_sync" in verdict.compile.log


@needs_rocm
def test_a_cuda_name_in_the_prose_is_a_comparison_and_in_the_code_a_cuda_only_call(checker) -> None:
    porting = answer(
        "`hipMemcpy` takes the arguments of `cudaMemcpy`.", "#include <hip/hip_runtime.h>\nvoid f() {}"
    )
    verdict = check(checker, porting)
    assert {item.name: item.status for item in verdict.identifiers}["cudaMemcpy"] == "cuda_named"
    assert verdict.invented == () and verdict.verified and verdict.score.total == 1.0
    calling = check(checker, answer("", "#include <hip/hip_runtime.h>\nvoid f(void* p) { cudaFree(p); }"))
    assert calling.invented == ("cudaFree",) and calling.score.total == 0.0


@needs_rocm
def test_a_wrong_argument_order_fails_to_compile_with_the_compilers_message(checker) -> None:
    code = (
        "#include <hip/hip_runtime.h>\n"
        "void upload(float* d, const float* h, size_t n) {\n"
        "  (void)hipMemcpy(d, h, hipMemcpyHostToDevice, n * sizeof(float));\n}"
    )
    verdict = check(checker, answer("Call `hipMemcpy`.", code))
    assert verdict.invented == ()
    assert verdict.compile.status == "failed" and "snippet.hip:3" in verdict.compile.log
    assert verdict.link.status == "not_applicable"
    assert (verdict.score.total, verdict.verified) == (0.5, False)


@needs_rocm
def test_a_fragment_is_compiled_as_far_as_it_goes_and_claims_nothing_more(checker) -> None:
    verdict = check(
        checker,
        answer("Use `hipMemcpyAsync`.", "hipMemcpyAsync(dst, src, bytes, hipMemcpyHostToDevice, stream);"),
    )
    assert verdict.compile.status == "fragment" and "undeclared identifier 'dst'" in verdict.compile.log
    assert (verdict.score.total, verdict.verified) == (0.5, True)
    # clang stops at the undeclared arguments and never looks the callee up: the existence check is what catches it
    invented_call = check(checker, answer("", "hipMemcpyTurbo(dst, src, bytes);"))
    assert invented_call.invented == ("hipMemcpyTurbo",) and invented_call.score.total == 0.0


@needs_rocm
def test_a_program_links_against_the_real_library_and_is_not_run_without_a_gpu(checker) -> None:
    program = (
        "#include <rocsparse/rocsparse.h>\n#include <cstdio>\n"
        "int main() {\n  rocsparse_handle handle;\n  if (rocsparse_create_handle(&handle) != rocsparse_status_success) return 1;\n"
        "  rocsparse_destroy_handle(handle);\n  std::printf(\"ok\\n\");\n}"
    )  # fmt: skip
    verdict = check(checker, answer("Create a `rocsparse_handle`.", program, "ok"), library="rocsparse")
    assert (verdict.compile.status, verdict.link.status, verdict.run.status) == (
        "passed",
        "passed",
        "library_calls",
    )
    assert "-lrocsparse" in " ".join(complete_translation_unit(program).link_flags)
    assert (verdict.score.total, verdict.verified) == (1.5, True)
    runtime_only = '#include <hip/hip_runtime.h>\n#include <cstdio>\nint main() { std::printf("1\\n"); }'
    assert check(checker, answer("", runtime_only, "1")).run.status == "no_gpu"


@needs_rocm
def test_a_declared_but_missing_library_function_fails_to_link(checker) -> None:
    program = (
        "#include <rocsparse/rocsparse.h>\n"
        'extern "C" rocsparse_status rocsparse_fast_spmv(rocsparse_handle);\n'
        "int main() { rocsparse_handle h; rocsparse_create_handle(&h); return rocsparse_fast_spmv(h); }"
    )
    verdict = check(checker, answer("", program), library="rocsparse")
    assert verdict.compile.status == "passed" and verdict.link.status == "failed"
    assert "undefined reference to `rocsparse_fast_spmv'" in verdict.link.log
    # declaring a rocsparse_ name does not make it exist: the existence check names it too
    assert verdict.invented == ("rocsparse_fast_spmv",) and not verdict.verified


@needs_rocm
def test_an_answer_without_code_is_checked_for_its_names_only(checker) -> None:
    verdict = check(checker, "Call `hipDeviceSynchronize` after the launch.")
    assert (verdict.compile.status, verdict.snippet, verdict.score.total) == ("no_code", None, 0.5)


def test_the_snippet_and_its_stated_output_are_found() -> None:
    snippet = extract_snippet("Text.\n\n```cpp\nint main() {}\n```\n\nThe output:\n\n```\n42\n```\n")
    assert (snippet.code, snippet.stated_output) == ("int main() {}\n", "42\n")
    assert extract_snippet("```python\nprint(1)\n```") is None


def test_the_translation_unit_rules_add_headers_and_wrap_statements() -> None:
    unit = complete_translation_unit("rocprim::plus<int> op;\nint x = op(1, 2);")
    assert unit.source.startswith("#include <hip/hip_runtime.h>\n#include <rocprim/rocprim.hpp>\n")
    assert unit.wrapped and "void kv_snippet_body() {" in unit.source and not unit.program
    assert not complete_translation_unit("#include <hip/hip_runtime.h>\n__global__ void k() {}").wrapped
    assert complete_translation_unit(
        "if (hipMalloc(&p, 4) != hipSuccess) {\n  return;\n}"
    ).wrapped  # a statement
    assert not complete_translation_unit("struct Pair { int a, b; };").wrapped


@pytest.mark.parametrize(
    ("invented", "compile", "link", "run", "total"),
    [
        (1, "passed", "passed", "passed", 0.0),  # an invented name costs everything
        (0, "no_code", "not_applicable", "not_applicable", 0.5),
        (0, "fragment", "not_applicable", "not_applicable", 0.5),
        (0, "failed", "not_applicable", "not_applicable", 0.5),
        (0, "passed", "not_applicable", "not_applicable", 1.0),
        (0, "passed", "failed", "not_applicable", 1.0),
        (0, "passed", "passed", "library_calls", 1.5),
        (0, "passed", "passed", "mismatch", 1.5),
        (0, "passed", "passed", "ran", 2.0),
        (0, "passed", "passed", "passed", 2.0),
    ],
)
def test_the_qa_score_climbs_one_verified_rung_at_a_time(invented, compile, link, run, total) -> None:
    assert qa_score(invented, compile, link, run).total == total


@needs_rocm
def test_rocm_api_looks_names_up_in_the_installed_headers(inventory, capsys) -> None:
    from kernelvault.cli import main

    assert main(["rocm-api", "rocprim::block_scan::inclusive_scan"]) == 0
    printed = capsys.readouterr().out
    assert "rocprim::block_scan::inclusive_scan  [rocprim member]  rocprim/block/block_scan.hpp" in printed
    assert main(["rocm-api", "rocprim::block_scan_fast"]) == 1
    assert (
        "no declaration in the installed headers matches rocprim::block_scan_fast" in capsys.readouterr().out
    )

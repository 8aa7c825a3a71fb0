"""The HIP toolchain on a CPU-only machine: parse, compile for gfx90a (and with nvcc), verdicts, the loader.

No AMD GPU exists here, so HIP candidates are compiled, never run: an honest one is `compiled` with
`correct` null and reward 0.4; a broken one fails at the stage its name says. The NVIDIA path (nvcc
through the portability header) compiles here too when nvcc is installed; running it is the H200's
job (tests/gpu). The loader's calling convention is tested against a host library built with gcc.
"""

from __future__ import annotations

import shutil
import subprocess
from pathlib import Path

import pytest
import torch

from kernelvault.contracts import Candidate
from kernelvault.hip import HipInterfaceError, HipKernels, parse_launch_functions
from kernelvault.toolchain.hip_build import HipBuildCache, compile_hip, find_hip_compiler, portability_issues
from kernelvault.toolchain.lane_pool import verify_once
from kernelvault.toolchain.static_check import check_hip_candidate
from kernelvault.toolchain.tasks import parse_task
from kernelvault.toolchain.verify import Verifier, VerifyConfig

ROOT = Path(__file__).resolve().parents[1]
EXAMPLES = ROOT / "examples" / "hip"
needs_hipcc = pytest.mark.skipif(
    shutil.which("hipcc") is None, reason="needs Debian's hipcc (make installs it as root)"
)
needs_nvcc = pytest.mark.skipif(shutil.which("nvcc") is None, reason="needs nvcc")


def hip_source(path: Path) -> str:
    """The HIP_SOURCE the static stage finds (the same extraction the verifier uses)."""
    source = check_hip_candidate(path.read_text()).hip_source
    assert source is not None, f"{path} has no HIP_SOURCE"
    return source


def task_named(name: str):  # noqa: ANN201
    path = ROOT / "tasks" / f"{name}.py"
    return parse_task(path.read_text(), name, f"file:{path}")


def test_launch_functions_are_parsed_with_their_calling_convention() -> None:
    source = """
    __global__ void k(float* x) {}
    extern "C" hipError_t launch_scale(const float* __restrict__ x, float* y, long long n, float alpha,
                                       hipStream_t stream) { return hipSuccess; }
    extern "C" void launch_fill(int* out, unsigned n, hipStream_t s) {}
    extern "C" {
    hipError_t launch_pair(double* a, size_t n, hipStream_t stream) { if (n) { return hipSuccess; } return hipSuccess; }
    }
    extern "C" const char* not_a_launcher(int code) { return ""; }
    """
    functions = parse_launch_functions(source)
    assert sorted(functions) == ["launch_fill", "launch_pair", "launch_scale"]
    scale = functions["launch_scale"]
    assert scale.returns_error and scale.takes_stream
    assert [(p.name, p.kind) for p in scale.parameters] == [
        ("x", "pointer"), ("y", "pointer"), ("n", "integer"), ("alpha", "float"), ("stream", "stream")
    ]  # fmt: skip
    assert not functions["launch_fill"].returns_error
    assert [p.kind for p in functions["launch_pair"].parameters] == ["pointer", "integer", "stream"]


def test_unsupported_parameters_are_refused_with_the_reason() -> None:
    with pytest.raises(HipInterfaceError, match="parameter 2 has type 'dim3'"):
        parse_launch_functions('extern "C" hipError_t f(float* x, dim3 grid, hipStream_t s) { return 0; }')
    with pytest.raises(HipInterfaceError, match="must be the last"):
        parse_launch_functions('extern "C" hipError_t f(hipStream_t s, float* x) { return 0; }')


@pytest.fixture(scope="module")
def host_library(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """The calling convention against real machine code: a host library with the same C signatures."""
    folder = tmp_path_factory.mktemp("host-lib")
    (folder / "scale.c").write_text(
        "int launch_scale(const float* x, float* y, long long n, float alpha, void* stream) {\n"
        "  if (stream != 0) return 7;\n  if (n < 0) return 1;\n"
        "  for (long long i = 0; i < n; ++i) y[i] = alpha * x[i];\n  return 0;\n}\n"
        'const char* kv_hip_error_string(int code) { return code == 1 ? "invalid argument" : "other"; }\n'
    )
    subprocess.run(["gcc", "-shared", "-fPIC", "-O1", str(folder / "scale.c"), "-o", str(folder / "scale.so")],
                   check=True)  # fmt: skip
    return folder / "scale.so"


def test_the_loader_passes_tensors_numbers_and_the_stream_and_reports_errors(host_library: Path) -> None:
    signatures = parse_launch_functions(
        'extern "C" hipError_t launch_scale(const float* x, float* y, long long n, float alpha, hipStream_t s) {'
    )
    kernels = HipKernels(str(host_library), signatures, device_type="cpu")
    x = torch.arange(6, dtype=torch.float32)
    y = torch.zeros(6)
    kernels.launch_scale(x, y, 6, 2.5)
    assert torch.equal(y, 2.5 * x)
    with pytest.raises(RuntimeError, match="HIP error 1: invalid argument"):
        kernels.launch_scale(x, y, -1, 1.0)
    with pytest.raises(TypeError, match="takes 4 arguments"):
        kernels.launch_scale(x, y, 6)
    with pytest.raises(TypeError, match=r"argument 3 \(long long n\) needs an int"):
        kernels.launch_scale(x, y, 6.0, 1.0)
    with pytest.raises(TypeError, match="needs a tensor or None"):
        kernels.launch_scale([1.0], y, 1, 1.0)
    with pytest.raises(AttributeError, match="functions are launch_scale"):
        kernels.launch_missing(x)
    device_kernels = HipKernels(str(host_library), signatures)  # the real convention: device tensors only
    with pytest.raises(ValueError, match="is a cpu tensor; kernels need device tensors"):
        device_kernels.launch_scale(x, y, 6, 1.0)


@needs_hipcc
def test_honest_examples_compile_for_gfx90a_and_the_cache_answers_the_second_time(tmp_path: Path) -> None:
    compiler = find_hip_compiler("cpu", None)
    assert compiler.vendor == "amd" and compiler.arch == "gfx90a"
    cache = HipBuildCache(tmp_path / "cache")
    first = compile_hip(hip_source(EXAMPLES / "vector_add.py"), compiler, cache)
    assert first.ok and not first.cached and first.library is not None and first.library.exists(), first.log
    second = compile_hip(hip_source(EXAMPLES / "vector_add.py"), compiler, cache)
    assert second.ok and second.cached and second.library == first.library and second.seconds == 0.0


@needs_hipcc
def test_a_compile_error_keeps_the_diagnostic_with_its_line_and_is_cached(tmp_path: Path) -> None:
    compiler = find_hip_compiler("cpu", "gfx90a")
    cache = HipBuildCache(tmp_path / "cache")
    source = "#include <hip/hip_runtime.h>\n__global__ void k(float* x) {\n  x[0] = undefined_name;\n}\n"
    failed = compile_hip(source, compiler, cache)
    assert not failed.ok
    assert "candidate.hip:3" in failed.log and "undefined_name" in failed.log
    assert str(tmp_path) not in failed.log  # build paths are not the model's business
    again = compile_hip(source, compiler, cache)
    assert not again.ok and again.cached and "undefined_name" in again.log


def test_the_build_cache_stays_within_its_size(tmp_path: Path) -> None:
    cache = HipBuildCache(tmp_path / "cache", max_bytes=3000)
    built = tmp_path / "lib.so"
    for index in range(5):
        built.write_bytes(bytes(1000))
        cache.store(f"{index:02d}" + "a" * 62, built, "")
    stored = list((tmp_path / "cache").glob("*/*.so"))
    assert sum(path.stat().st_size for path in stored) <= 3000
    assert (tmp_path / "cache" / "04" / ("04" + "a" * 62 + ".so")).exists()  # the newest survives


def test_small_stores_do_not_walk_the_cache_every_time(tmp_path: Path) -> None:
    cache = HipBuildCache(tmp_path / "cache", max_bytes=100_000)
    built = tmp_path / "lib.so"
    built.write_bytes(bytes(1000))
    for index in range(
        12
    ):  # 12 kB: a walk on the first store, another once 5 kB (5% of the bound) more landed
        cache.store(f"{index:02d}" + "b" * 62, built, "")
    assert cache.scans == 3
    assert len(list((tmp_path / "cache").glob("*/*.so"))) == 12  # all within the bound, none evicted


@needs_nvcc
def test_honest_examples_compile_with_nvcc_through_the_portability_header(tmp_path: Path) -> None:
    compiler = find_hip_compiler("cuda", "sm_90")
    assert compiler.vendor == "nvidia"
    build = compile_hip(hip_source(EXAMPLES / "softmax.py"), compiler, HipBuildCache(tmp_path / "cache"))
    assert build.ok, build.log


def test_amd_only_constructs_are_named_as_not_portable() -> None:
    assert portability_issues("v = __builtin_amdgcn_mfma_f32_32x32x8f16(a, b, c, 0, 0, 0);")[0].startswith(
        "line 1: an MFMA matrix-core builtin"
    )
    assert "64-wide" in portability_issues("x += __shfl_xor(x, 32);")[0]
    assert portability_issues("for (int o = warpSize / 2; o > 0; o >>= 1) x += __shfl_xor(x, o);") == []


@needs_hipcc
def test_verdicts_for_hip_candidates_on_cpu(tmp_path: Path) -> None:
    verifier = Verifier(VerifyConfig(hip_cache=tmp_path / "cache"))
    task = task_named("vector_add")

    honest = verify_once(
        verifier, task, Candidate(task.task_id, "hip", (EXAMPLES / "vector_add.py").read_text(), "t")
    )
    assert (honest.compiled, honest.correct, honest.failure_kind) == (True, None, None)
    assert honest.reward is not None and honest.reward.total == pytest.approx(0.4)
    assert honest.target == "hip" and honest.environment is not None and honest.environment.arch == "gfx90a"
    assert "not run" in next(stage.log for stage in honest.stages if stage.name == "check")

    honest_code = (EXAMPLES / "vector_add.py").read_text()
    broken = honest_code.replace("c[i] = a[i] + b[i];", "c[i] = a[i] + b[i]")
    assert broken != honest_code
    failed = verify_once(verifier, task, Candidate(task.task_id, "hip", broken, "t"))
    assert failed.failure_kind == "compile_error" and "gfx90a" in failed.failure_message
    assert failed.reward is not None and failed.reward.total == 0.0

    dynamic = honest_code.replace('HIP_SOURCE = r"""', 'HIP_SOURCE = "" + r"""', 1)
    refused = verify_once(verifier, task, Candidate(task.task_id, "hip", dynamic, "t"))
    assert refused.failure_kind == "static_reject" and "string literal" in refused.failure_message

    inline = verify_once(
        verifier,
        task,
        Candidate(task.task_id, "hip", (EXAMPLES / "load_inline" / "vector_add.py").read_text(), "t"),
    )
    assert inline.failure_kind == "infrastructure_error" and "load_inline form" in inline.failure_message


@needs_hipcc
def test_the_hip_few_shot_example_compiles_for_amd_and_nvidia(tmp_path: Path) -> None:
    """The prompt teaches the native form: its worked example must build on both vendors' compilers."""
    from kernelvault.agents.prompting import few_shot
    from kernelvault.toolchain.extract import extract_code

    example = few_shot("hip")
    assert example is not None
    reference, answer = example
    task = parse_task(reference, "row_sq_dist", "fewshot")
    verdict = verify_once(
        Verifier(VerifyConfig(hip_cache=tmp_path / "cache")),
        task,
        Candidate(task.task_id, "hip", answer, "fewshot"),
    )
    assert verdict.compiled and verdict.failure_kind is None, verdict.failure_message
    code = extract_code(answer).code
    assert code is not None
    source = check_hip_candidate(code).hip_source
    assert source is not None
    if shutil.which("nvcc"):
        build = compile_hip(source, find_hip_compiler("cuda", "sm_90"), HipBuildCache(tmp_path / "nv"))
        assert build.ok, build.log


def test_concurrent_writers_of_one_cache_entry_leave_one_whole_library(tmp_path: Path) -> None:
    """Workers that build the same source at once each rename a complete file into place; none is torn."""
    from concurrent.futures import ThreadPoolExecutor

    cache = HipBuildCache(tmp_path / "cache")
    payload = bytes(range(256)) * 4096  # 1 MiB: large enough that a torn write would show
    built = []
    for index in range(8):
        path = tmp_path / f"built-{index}.so"
        path.write_bytes(payload)
        built.append(path)
    key = "ab" + "c" * 62
    with ThreadPoolExecutor(8) as pool:
        stored = list(pool.map(lambda path: cache.store(key, path, ""), built))
    assert len(set(stored)) == 1 and stored[0] is not None and stored[0].read_bytes() == payload
    assert [p.name for p in stored[0].parent.iterdir()] == [stored[0].name]  # no temporary file left behind
    assert cache.lookup(key) == (stored[0], None)

"""The device's own record of a candidate's forward (`DeviceRecord`, toolchain/sandboxed/candidate.py): what it
counts as the candidate's work, on records shaped like the ones the H200 gave (torch 2.11's `_KinetoEvent`s).

The GPU suites run the real record (tests/gpu); these pin its rules on CPU, where no device is recorded.
"""

from __future__ import annotations

from typing import Any

import pytest

from kernelvault.toolchain.own_kernels import OWN_KERNEL_PREFIX
from kernelvault.toolchain.sandboxed.candidate import (
    DEVICE_SCALAR_COPIES,
    OwnKernelNames,
    _copied_bytes,
    unexplained_device_events,
)

torch = pytest.importorskip("torch")


class _Event:
    """One entry of a device record, with the fields torch's `_KinetoEvent` gave on the H200 (torch 2.11):
    a copy's size is not recorded there (empty metadata), its `linked_correlation_id` names the op that issued it."""

    def __init__(self, name: str, correlation: int, linked: int = 0, start: int = 0, end: int = 0,
                 gpu: bool = False, user: bool = False, metadata: str = "") -> None:  # fmt: skip
        self.fields = (name, correlation, linked, start, end, gpu, user, metadata)

    def name(self) -> str:
        return self.fields[0]

    def correlation_id(self) -> int:
        return self.fields[1]

    def linked_correlation_id(self) -> int:
        return self.fields[2]

    def start_ns(self) -> int:
        return self.fields[3]

    def end_ns(self) -> int:
        return self.fields[4]

    def device_type(self) -> Any:
        return torch.autograd.DeviceType.CUDA if self.fields[5] else torch.autograd.DeviceType.CPU

    def is_user_annotation(self) -> bool:
        return self.fields[6]

    def metadata_json(self) -> str:
        return self.fields[7]

    def start_thread_id(self) -> int:
        return 1


WINDOW = [
    _Event("kv::candidate", 1, start=0, end=1000),
    _Event("kv::candidate", 1, start=0, end=1000, gpu=True),
]
# What the H200 recorded for `x.item()` then `y.cpu()` in one window (bench/results/2026-12-02-h200-scalar-read-record.md).
ITEM_THEN_CPU = [
    _Event("aten::item", 2, start=10, end=90),
    _Event("aten::_local_scalar_dense", 3, start=11, end=89),
    _Event("Activity Buffer Request", 3, start=12, end=20),  # shares the op's id: not an op
    _Event("cudaMemcpyAsync", 9, linked=3, start=30, end=31),
    _Event("Memcpy DtoH (Device -> Pinned)", 9, linked=3, start=32, end=33, gpu=True),
    _Event("aten::copy_", 7, start=100, end=190),
    _Event("cudaMemcpyAsync", 19, linked=7, start=110, end=111),
    _Event("Memcpy DtoH (Device -> Pageable)", 19, linked=7, start=112, end=113, gpu=True),
]


def test_the_device_record_takes_item_for_a_scalar_read_and_a_tensors_copy_to_the_host_for_work() -> None:
    # The H200 run of 2026-12-01 refused a TritonBench answer's `.item()` of its 0-d argument: the copy's size was
    # looked for in metadata that torch 2.11 leaves empty. The op that issued the copy tells the two apart.
    assert unexplained_device_events(WINDOW + ITEM_THEN_CPU) == ["Memcpy DtoH (Device -> Pageable)"]
    assert unexplained_device_events(WINDOW + ITEM_THEN_CPU[:5]) == []


def test_a_range_the_candidate_names_after_item_does_not_make_its_copy_a_scalar_read() -> None:
    forged = [
        _Event("aten::_local_scalar_dense", 3, start=11, end=89, user=True),  # record_function("aten::…")
        _Event("Memcpy DtoH (Device -> Pageable)", 9, linked=3, start=32, end=33, gpu=True),
    ]
    assert unexplained_device_events(WINDOW + forged) == ["Memcpy DtoH (Device -> Pageable)"]


def test_scalar_reads_past_the_allowance_are_work() -> None:
    reads = [_Event("aten::_local_scalar_dense", 3, start=11, end=900)] + [
        _Event("Memcpy DtoH (Device -> Pinned)", 100 + i, linked=3, start=20 + i, end=21 + i, gpu=True)
        for i in range(DEVICE_SCALAR_COPIES + 1)
    ]
    assert unexplained_device_events(WINDOW + reads[:-1]) == []
    assert unexplained_device_events(WINDOW + reads) == ["Memcpy DtoH (Device -> Pinned)"]


def test_the_scalar_read_allowance_is_per_forward_not_per_job() -> None:
    """A record spans every checked forward of a job. A function task whose test makes 4 calls, each reading its
    two 0-d arguments with `.item()`, reads 8 scalars per forward: across a job's forwards that passed one
    allowance for the whole record (TritonBench's logspace on the H200, refused as device_record)."""
    windows, reads = [], []
    for forward in range(4):
        begin = 1000 * forward
        windows += [_Event("kv::candidate", 1, start=begin, end=begin + 900),
                    _Event("kv::candidate", 1, start=begin, end=begin + 900, gpu=True)]  # fmt: skip
        reads += [_Event("aten::_local_scalar_dense", 10 * forward + 3, start=begin + 10, end=begin + 800)]
        reads += [
            _Event("Memcpy DtoH (Device -> Pinned)", 500 + 10 * forward + i, linked=10 * forward + 3,
                   start=begin + 20 + i, end=begin + 21 + i, gpu=True)
            for i in range(8)
        ]  # fmt: skip
    assert 4 * 8 > DEVICE_SCALAR_COPIES
    assert unexplained_device_events(windows + reads) == []


def test_a_copy_outside_the_candidates_windows_is_not_its_own() -> None:
    later = _Event("Memcpy DtoH (Device -> Pageable)", 19, linked=7, start=5000, end=5001, gpu=True)
    assert unexplained_device_events(WINDOW + [later]) == []


def test_a_copys_size_is_read_from_kinetos_metadata_where_it_is_recorded() -> None:
    scalar = '"device": 0, "context": 1,\n "stream": 7, "correlation": 812,\n "bytes": 4, "memory bandwidth (GB/s)": inf'
    assert _copied_bytes(_Event("Memcpy DtoH", 9, metadata=scalar)) == 4
    assert (
        _copied_bytes(
            _Event("Memcpy DtoH", 9, metadata='"bytes": 33554432, "memory bandwidth (GB/s)": 812.5')
        )
        == 33554432
    )
    assert _copied_bytes(_Event("Memcpy DtoH", 9, metadata="")) == 0  # torch 2.11: nothing recorded
    sized = _Event(
        "Memcpy DtoH (Device -> Pinned)", 9, linked=42, start=32, end=33, gpu=True, metadata=scalar
    )
    assert unexplained_device_events(WINDOW + [sized]) == []


CONSTRUCTION = [
    _Event("kv::candidate-construction", 1, start=0, end=1000),
    _Event("kv::candidate-construction", 1, start=0, end=1000, gpu=True),
]
RANDOM_DRAW = [  # torch.randn(4, 5, device="cuda"): the kernel is linked to aten::normal_, the op that issued it
    _Event("aten::randn", 2, start=10, end=90),
    _Event("aten::normal_", 3, start=11, end=89),
    _Event("void at::native::(anonymous namespace)::distribution_elementwise_grid_stride_kernel<float, 4>", 9,
           linked=3, start=30, end=40, gpu=True),
]  # fmt: skip
COMPUTE = [
    _Event("aten::abs", 4, start=100, end=190),
    _Event("void at::native::vectorized_elementwise_kernel<4, at::native::AbsFunctor<float>>", 19, linked=4,
           start=110, end=120, gpu=True),
]  # fmt: skip


def test_random_draws_at_import_are_initialisation_and_anything_computing_there_is_work() -> None:
    """TritonBench answers try their function on `torch.randn(..., device="cuda")` at import: the H200 refused 20
    of them as device_record (2026-12-02) although the dispatch monitor admits random draws while importing and
    building, as parameter initialisation. Computing at import stays refused (the print of a CUDA tensor runs
    abs and comparisons), and so does a random draw inside a forward."""
    assert unexplained_device_events(CONSTRUCTION + RANDOM_DRAW) == []
    assert unexplained_device_events(CONSTRUCTION + COMPUTE) == [COMPUTE[1].name()]
    assert unexplained_device_events(WINDOW + RANDOM_DRAW) == [RANDOM_DRAW[2].name()]
    annotated = [_Event("aten::normal_", 3, start=11, end=89, user=True), RANDOM_DRAW[2]]  # record_function
    assert unexplained_device_events(CONSTRUCTION + annotated) == [RANDOM_DRAW[2].name()]


# What the H200 recorded for `torch.arange(n, device="cuda")` in a forward (three TritonBench answers, 2026-12-03).
ARANGE = [
    _Event("aten::arange", 3, start=11, end=89),
    _Event("void (anonymous namespace)::elementwise_kernel_with_index<int, at::native::arange_cuda_out(c10::Scalar "
           "const&, c10::Scalar const&, c10::Scalar const&, at::Tensor&)::{lambda()#1}::operator()() const::"
           "{lambda()#2}::operator()() const::{lambda(long)#1}>(int, at::native::arange_cuda_out(c10::Scalar const&, "
           "c10::Scalar const&, c10::Scalar const&, at::Tensor&)::{lambda()#1}::operator()() const::{lambda()#2}::"
           "operator()() const::{lambda(long)#1}, at::native::arange_cuda_out::{lambda()#1}::operator()() const"
           "::{lambda()#2}::return_type<int>::type*)", 9, linked=3, start=30, end=31, gpu=True),
]  # fmt: skip


def test_an_index_sequence_from_arange_is_glue_as_the_dispatch_monitor_says() -> None:
    """`torch.arange` is glue to the dispatch monitor (a permutation's starting indices, a gather's offsets); the
    device record refused its kernel, so three honest uses were `device_record` on the H200. A computing kernel
    beside it is still work."""
    assert unexplained_device_events(WINDOW + ARANGE) == []
    assert unexplained_device_events(WINDOW + ARANGE + COMPUTE[1:]) == [COMPUTE[1].name()]


# A Triton launch the harness issued (its `kv::launch` range, the driver call, the kernel linked to the range), and
# PyTorch's elementwise kernel issued by `aten::relu`, in one window.
LAUNCH_AND_PYTORCH = [
    _Event("kv::launch", 2, start=10, end=40, user=True),
    _Event("cuLaunchKernelEx", 5, linked=2, start=20, end=21),
    _Event("vectorized_elementwise_kernel", 5, linked=2, start=30, end=35, gpu=True),
    _Event("aten::relu", 6, start=50, end=90),
    _Event("cudaLaunchKernel", 8, linked=6, start=60, end=61),
    _Event("void at::native::vectorized_elementwise_kernel<4, at::native::(anonymous namespace)::launch_clamp_scalar"
           "(at::TensorIteratorBase&, c10::Scalar, c10::Scalar, at::native::detail::ClampLimits)>(int, ...)", 8,
           linked=6, start=70, end=75, gpu=True),
]  # fmt: skip


def test_a_kernel_is_the_candidates_because_the_harness_launched_it_not_because_of_its_name() -> None:
    """A candidate that names its Triton kernel `vectorized_elementwise_kernel` does not make PyTorch's kernels of
    that name its own: the record knows a kernel by the launch range that issued it."""
    assert unexplained_device_events(WINDOW + LAUNCH_AND_PYTORCH) == [LAUNCH_AND_PYTORCH[-1].name()]
    assert unexplained_device_events(WINDOW + LAUNCH_AND_PYTORCH[:3]) == []


def test_without_a_link_the_launch_call_must_sit_in_a_harness_launch_and_in_no_pytorch_op() -> None:
    """Where the record links a kernel to nothing, the runtime call that launched it decides: inside a harness
    launch and no PyTorch op (the candidate's), or inside a PyTorch op a hook ran during the launch (PyTorch's)."""
    own = [_Event("kv::launch", 2, start=10, end=100, user=True), _Event("cuLaunchKernelEx", 5, start=20, end=21),
           _Event("my_kernel", 5, start=30, end=35, gpu=True)]  # fmt: skip
    assert unexplained_device_events(WINDOW + own) == []
    hooked = [*own[:1], _Event("aten::mul", 6, start=40, end=60), _Event("cudaLaunchKernel", 7, start=45, end=46),
              _Event("elementwise_kernel_mul", 7, start=70, end=75, gpu=True)]  # fmt: skip
    assert unexplained_device_events(WINDOW + hooked) == ["elementwise_kernel_mul"]
    outside = [
        _Event("cuLaunchKernelEx", 5, start=200, end=201),
        _Event("my_kernel", 5, start=210, end=215, gpu=True),
    ]
    assert unexplained_device_events(WINDOW + outside) == ["my_kernel"]


def test_an_id_the_profiler_left_at_zero_links_nothing() -> None:
    """Ranges and ops the profiler gives no correlation id (0) are not one op covering every launch, and a kernel
    linked to 0 is linked to nothing: the launch call inside the harness's range still makes it the candidate's,
    and a PyTorch op's own kernel is still PyTorch's."""
    window = [_Event("kv::candidate", 0, start=0, end=1000, user=True),
              _Event("kv::candidate", 0, start=0, end=1000, gpu=True)]  # fmt: skip
    own = [_Event("aten::empty_like", 0, start=5, end=8), _Event("kv::launch", 0, start=10, end=100, user=True),
           _Event("cuLaunchKernelEx", 5, start=20, end=21), _Event("my_kernel", 5, start=30, end=35, gpu=True)]  # fmt: skip
    assert unexplained_device_events(window + own) == []
    pytorch = [_Event("aten::relu", 0, start=200, end=260), _Event("cudaLaunchKernel", 6, start=210, end=211),
               _Event("elementwise_kernel_relu", 6, start=220, end=225, gpu=True)]  # fmt: skip
    assert unexplained_device_events(window + own + pytorch) == ["elementwise_kernel_relu"]


def test_the_harness_launch_range_is_not_compute_and_the_same_range_outside_a_launch_is() -> None:
    """On a GPU the harness opens `kv::launch` around each launch (a profiler range, which dispatches as an aten op)
    while the dispatch monitor watches the forward: inside a launch it is the harness's own, outside it is not
    glue (every honest candidate was refused for it on the H100, 2026-12-05, before the monitor knew)."""
    from kernelvault.toolchain.sandboxed.candidate import DeviceRecord
    from kernelvault.toolchain.sandboxed.integrity import TorchComputeMonitor, Violations

    violations = Violations()
    monitor = TorchComputeMonitor(violations)
    monitor.start("forward")
    with monitor:
        with monitor.launching(), torch.profiler.record_function(DeviceRecord.LAUNCH):
            pass
        assert violations.found == []
        with torch.profiler.record_function("candidate's own range"):
            pass
    monitor.stop()
    assert any("_record_function" in entry for entry in violations.found), violations.found


def test_without_any_launch_link_a_kernel_is_known_by_the_harness_prefix_within_its_launch_count() -> None:
    """Where the record holds no launch call for a kernel (every honest Triton and HIP example in the jailed workers
    on the H100, 2026-12-07), the prefix the harness gives every kernel it compiles decides, within the Triton
    launches it issued (a HIP job's launch functions: any number). The candidate's own name counts for nothing:
    cuBLAS's kernels are unqualified C names, so a decoy named after one would otherwise make it the candidate's."""
    relu = f"{OWN_KERNEL_PREFIX}relu_kernel"
    unlinked = [_Event(relu, 5, start=30, end=35, gpu=True), _Event(relu, 6, start=40, end=45, gpu=True)]
    assert unexplained_device_events(WINDOW + unlinked, OwnKernelNames(2)) == []
    assert unexplained_device_events(WINDOW + unlinked, OwnKernelNames(1)) == [relu]  # one launch, two runs
    gemm = _Event("nvjet_tst_128x64_64x8_2x1_v_bz_TNT", 7, start=50, end=55, gpu=True)  # cuBLAS on the H100
    assert unexplained_device_events(WINDOW + [gemm], OwnKernelNames(5)) == [gemm.name()]
    assert unexplained_device_events(WINDOW + [gemm], OwnKernelNames(None)) == [gemm.name()]
    softmax = _Event(f"void (anonymous namespace)::{OWN_KERNEL_PREFIX}softmax_warp_forward<float, 5>(float*)",
                     8, start=60, end=65, gpu=True)  # fmt: skip
    assert unexplained_device_events(WINDOW + [softmax], OwnKernelNames(None)) == [softmax.name()]
    hip = _Event(
        f"{OWN_KERNEL_PREFIX}relu_vec4_kernel(float4 const*, float4*, long)", 9, start=70, end=75, gpu=True
    )
    assert unexplained_device_events(WINDOW + [hip, hip, hip], OwnKernelNames(None)) == []

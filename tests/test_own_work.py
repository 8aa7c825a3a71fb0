"""What binds a candidate's timed calls to the work it was seen doing (`toolchain/sandboxed/own_work.py`): the
rules, on figures shaped like a worker's reply and a device record's. The whole path runs on the CPU in
tests/test_timing_protocol.py (the launch count) and on a GPU in tests/gpu/test_timing_adversarial_on_gpu.py."""

from __future__ import annotations

from typing import Any

import pytest

from kernelvault.contracts import CaseTiming
from kernelvault.toolchain.own_kernels import OWN_KERNEL_PREFIX
from kernelvault.toolchain.sandboxed.own_work import (
    OWN_WORK_SHARE,
    busy_ns,
    device_spans,
    launch_shortfall,
    speed_shortfall,
)
from kernelvault.toolchain.verify import credited_speedup

torch = pytest.importorskip("torch")


class _Kernel:
    def __init__(self, name: str, start: int, end: int, gpu: bool = True) -> None:
        self.fields = (name, start, end, gpu)

    def name(self) -> str:
        return self.fields[0]

    def start_ns(self) -> int:
        return self.fields[1]

    def end_ns(self) -> int:
        return self.fields[2]

    def device_type(self) -> Any:
        return torch.autograd.DeviceType.CUDA if self.fields[3] else torch.autograd.DeviceType.CPU


def test_overlapping_kernels_count_once_toward_the_devices_busy_time() -> None:
    assert busy_ns([]) == 0
    assert busy_ns([(0, 10), (20, 30)]) == 20
    assert busy_ns([(0, 10), (5, 15), (12, 14), (40, 41)]) == 16


def test_every_kernel_copy_and_fill_on_the_device_is_the_watched_calls_work() -> None:
    """Not only the kernels that carry the harness's prefix: a kernel loaded under another name (Triton's driver
    loads binaries) or PyTorch's on the candidate's behalf is device work its timed calls must also do."""
    events = [
        _Kernel(f"{OWN_KERNEL_PREFIX}relu_kernel", 0, 100),
        _Kernel(f"void {OWN_KERNEL_PREFIX}tile<4>(float*)", 150, 200),
        _Kernel("kvcanD_relu_kernel", 180, 260),  # a renamed copy of its kernel: overlaps the tile by 20 ns
        _Kernel("void at::native::vectorized_elementwise_kernel<4, ...>", 300, 900),
        _Kernel(f"{OWN_KERNEL_PREFIX}host_range", 0, 5000, gpu=False),  # a host-side range, not device work
    ]
    assert busy_ns(device_spans(events)) == 100 + 110 + 600


def test_timed_calls_must_launch_what_the_watched_sample_launched() -> None:
    assert launch_shortfall(timed_calls=40, timed_launches=80, watched_calls=8, watched_launches=16) is None
    skipped = launch_shortfall(timed_calls=40, timed_launches=0, watched_calls=8, watched_launches=8)
    assert skipped is not None and skipped.startswith(
        "unwatched_launches: 40 timed calls launched 0 kernel(s)"
    )
    assert (
        launch_shortfall(timed_calls=40, timed_launches=79, watched_calls=8, watched_launches=16) is not None
    )
    assert launch_shortfall(timed_calls=40, timed_launches=0, watched_calls=0, watched_launches=0) is not None


def test_a_timed_call_much_shorter_than_its_own_kernels_watched_work_is_refused() -> None:
    assert speed_shortfall(candidate_ms=1.0, own_kernel_ms=1.1) is None  # cold or warm: within the margin
    assert (
        speed_shortfall(candidate_ms=0.05, own_kernel_ms=0.004) is None
    )  # a launch-bound kernel sits far above
    assert speed_shortfall(candidate_ms=0.3, own_kernel_ms=None) is None  # no figure (the CPU)
    refused = speed_shortfall(candidate_ms=0.4 * OWN_WORK_SHARE, own_kernel_ms=0.4 * 1.01)
    assert refused is not None and refused.startswith("unwatched_speed: a timed call took")


def _timing(case: str, candidate_ms: float, reference_ms: float, own_kernel_ms: float | None) -> CaseTiming:
    return CaseTiming(case, candidate_ms, reference_ms, 0.01, 0.01, 20, own_kernel_ms=own_kernel_ms)


def test_on_a_gpu_a_case_without_a_device_work_figure_earns_no_speed_term() -> None:
    bound = [_timing("p0", 1.0, 2.0, 0.95), _timing("p1", 2.0, 4.0, 1.9)]
    assert credited_speedup("cuda", bound) == (2.0, "")
    unbound = [bound[0], _timing("p1", 2.0, 4.0, None)]  # the profile failed, or a worker did not report it
    speedup, why = credited_speedup("cuda", unbound)
    assert speedup is None and "p1" in why and "p0" not in why
    assert credited_speedup("rocm", unbound)[0] is None
    # the CPU has no figure and never credits speed (`reward`): its speedup stays informative
    assert credited_speedup("cpu", [_timing("p0", 1.0, 2.0, None)]) == (2.0, "")

"""Device timing: warm-up, device events around each repetition, L2 flushed between repetitions.

The candidate and the reference are timed by the same function, in the same worker process, on the
same inputs, so the ratio of medians is a fair speedup. Each repetition is bracketed by its own pair
of events after an L2 flush (a write over a buffer larger than the cache), and everything is
synchronised before the events are read.

What is measured is device time: the span from the first to the last piece of GPU work of one call.
Before each repetition the GPU is given a spin-wait longer than the host needs to enqueue the call,
so the events never bracket host launch overhead. Without it, a kernel shorter than its own Python
launch (Triton: 20-40 µs on the H200) was timed sometimes with and sometimes without that overhead,
and the median of a 5 µs kernel moved by 60-180% between runs (measured on the H200, 2026-11-29). The
flip side: a candidate whose host code is slow (many launches, Python loops) is not charged for it.
"""

from __future__ import annotations

import statistics
import time
from collections.abc import Callable, Collection, Sequence
from dataclasses import dataclass, field
from typing import Any

import torch

L2_FLUSH_BYTES = 256 << 20  # larger than the L2 of any current GPU (H200: 60 MB, MI300X: 256 MB of LLC)
_ASSUMED_CLOCK_HZ = 2.0e9  # for sizing the spin-wait; a slower real clock only makes the wait longer


@dataclass(frozen=True)
class TimingStats:
    median_ms: float
    p25_ms: float
    p75_ms: float
    repetitions: int
    outputs: dict[int, Any] = field(
        default_factory=dict, repr=False
    )  # clones of the kept repetitions' results

    @property
    def spread(self) -> float:
        return (self.p75_ms - self.p25_ms) / self.median_ms if self.median_ms > 0 else 0.0


def _spin(cycles: int) -> None:
    """Keep the GPU busy for about `cycles` clock cycles (no-op where torch lacks the helper)."""
    sleep = getattr(torch.cuda, "_sleep", None)
    if sleep is not None and cycles > 0:
        sleep(cycles)


def time_on_device(
    run: Callable[[Sequence[object]], object],
    input_sets: Sequence[Sequence[object]],
    repetitions: int = 100,
    warmup: int = 10,
    device: torch.device | None = None,
    warmup_ms: float = 50.0,
    keep_outputs: Collection[int] = (),
) -> TimingStats:
    """Median device time of run(inputs) in ms, rotating over input_sets so no repetition reuses cached results."""
    device = device or torch.device("cuda")
    if device.type == "cpu":
        return _time_on_host(run, input_sets, repetitions, warmup, keep_outputs)
    flush = torch.empty(L2_FLUSH_BYTES // 4, dtype=torch.int32, device=device)
    # Warm up for at least `warmup` calls AND `warmup_ms` of wall time: an idle GPU runs at a fraction of
    # its clock (345 MHz seen on an idle H200) and ten calls of a 7 µs kernel never wake it up.
    started = time.perf_counter()
    enqueue_seconds: list[float] = []
    index = 0
    while index < warmup or (time.perf_counter() - started) * 1e3 < warmup_ms:
        flush.zero_()
        torch.cuda.synchronize(device)
        before = time.perf_counter()
        run(input_sets[index % len(input_sets)])
        enqueue_seconds.append(time.perf_counter() - before)  # host time to enqueue one call
        index += 1
    torch.cuda.synchronize(device)
    # Twice the typical enqueue time, plus a margin, so the host is always ahead of the GPU.
    spin_cycles = int((2 * statistics.median(enqueue_seconds) + 50e-6) * _ASSUMED_CLOCK_HZ)
    starts = [torch.cuda.Event(enable_timing=True) for _ in range(repetitions)]
    ends = [torch.cuda.Event(enable_timing=True) for _ in range(repetitions)]
    kept: dict[int, Any] = {}
    for index in range(repetitions):
        flush.zero_()
        _spin(spin_cycles)
        starts[index].record()
        output = run(input_sets[index % len(input_sets)])
        ends[index].record()
        if index in keep_outputs:  # cloned after the end event: outside the measured span
            kept[index] = output.clone() if isinstance(output, torch.Tensor) else output
    torch.cuda.synchronize(device)
    return _summarise([start.elapsed_time(end) for start, end in zip(starts, ends, strict=True)], kept)


def _time_on_host(run: Callable[[Sequence[object]], object], input_sets: Sequence[Sequence[object]],
                  repetitions: int, warmup: int, keep_outputs: Collection[int]) -> TimingStats:  # fmt: skip
    """Wall clock per call on the CPU (no cache flush, no events): what `VerifyConfig.time_on_cpu` uses so
    that CI runs the timing protocol (spot checks, the parent's judgement) through the interpreter. The
    figures time the Triton interpreter, not a kernel: they never become a speedup."""
    for index in range(warmup):
        run(input_sets[index % len(input_sets)])
    samples, kept = [], {}
    for index in range(repetitions):
        started = time.perf_counter()
        output = run(input_sets[index % len(input_sets)])
        samples.append((time.perf_counter() - started) * 1e3)
        if index in keep_outputs:
            kept[index] = output.clone() if isinstance(output, torch.Tensor) else output
    return _summarise(samples, kept)


def _summarise(samples_ms: list[float], kept: dict[int, Any]) -> TimingStats:
    """Median and quartiles of one timed series (device events or wall clock)."""
    samples = sorted(samples_ms)
    quartiles = statistics.quantiles(samples, n=4) if len(samples) >= 2 else [samples[0]] * 3
    return TimingStats(statistics.median(samples), quartiles[0], quartiles[2], len(samples), kept)

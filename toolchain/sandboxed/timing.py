"""Device timing: warm-up, device events around each sample, L2 flushed between samples, every timed output
checked.

The candidate and the reference are timed by the same function, in the same worker kind, on the same inputs, so
the ratio of medians is a fair speedup. Each sample is bracketed by its own pair of events after an L2 flush (a
write over a buffer larger than the cache).

What is measured is device time: the span from the first to the last piece of GPU work of one call.
Before each sample the GPU is given a spin-wait longer than the host needs to enqueue the calls,
so the events never bracket host launch overhead. Without it, a kernel shorter than its own Python
launch (Triton: 20-40 µs on the H200) was timed sometimes with and sometimes without that overhead,
and the median of a 5 µs kernel moved by 60-180% between runs (measured on the H200, 2026-11-29). The
flip side: a candidate whose host code is slow (many launches, Python loops) is not charged for it.

Kernels of a few microseconds: one call per event pair leaves the spread at 6-17% on the H200 (the events'
resolution and the clock's jitter are a good part of 5 µs), so a sample can cover `calls_per_sample`
consecutive calls between one pair of events, after one flush and a spin long enough for the host to enqueue
them all; the sample's time is the span over the calls. Only the sample's first call then starts with a cold L2:
a different regime from one call per sample, so a case is timed with the same `calls_per_sample` on every
side (candidate, reference, baseline), chosen from the reference's own time (`calls_for`), and each row says
which it was.

The protocol that makes a timed call uncacheable (`time_staged` with `inputs="fresh"`; `timed_values` says how):
every call of every sample, warm-up included, runs on values never used before in the run, written outside the
timed span (after the sample's L2 flush, as a producing kernel would leave them; a small case's k buffers of new
values do not all fit in L2, where the rotating protocol's 4 repeated sets did: bench/results/2026-12-07-*); after each sample's end event the whole device is synchronised (work left on any stream ends before
the next sample) and every call's output is checksummed against the reference's; the current stream must be
the default one around every call; a few outputs, kept at samples this process draws from the OS's randomness,
are judged in full by the parent once it has drawn which. `inputs="rotate"` is the protocol before that (a few
fixed input sets, no checksums, one synchronisation at the end), kept for side-by-side fidelity benchmarks.

The harness's own objects (CUDA events, the spin, the synchronisation, the host clock) are bound when this module
is imported, before any candidate exists in the process, and only the bound ones are used: a candidate that
patches `torch.cuda.Event.elapsed_time` times nothing of ours. `harness_replaced` says whether the modules and
classes still hold them; the candidate's worker asks it after every job and is replaced when they do not
(`kernelvault.toolchain.sandboxed.candidate`), so a patch cannot outlive its job. The flush buffer is allocated
once per process (`prepare_device`), before the first candidate: its presence says nothing about being timed.
What this does not do: see `timed_values` (the seed is in this process's memory) and the candidate's worker
(the tripwires are in-process; the static wall and the jail are the walls).
"""

from __future__ import annotations

import math
import os
import statistics
import time
from collections import deque
from collections.abc import Callable, Collection, Sequence
from dataclasses import dataclass, field
from typing import Any, Protocol

import torch

from kernelvault.toolchain.function_tasks import clone_value, tensor_leaves
from kernelvault.toolchain.sandboxed.plain_output import output_type_problem
from kernelvault.toolchain.sandboxed.timed_values import (
    ChecksumWeights,
    FreshInputs,
    OutputChecks,
    RotatingInputs,
    SharedOutputs,
    TimedCallViolation,
    Tolerance,
)

L2_FLUSH_BYTES = 256 << 20  # larger than the L2 of any current GPU (H200: 60 MB, MI300X: 256 MB of LLC)
_ASSUMED_CLOCK_HZ = 2.0e9  # for sizing the spin-wait; a slower real clock only makes the wait longer
# The least device time a sample covers on a GPU. Measured on the H200 (bench/small_case_spread.py, 2026-12-03,
# 26 performance cases of the bundled examples): at 0.25 ms, 24 of 26 cases kept both spreads within 3% (a 3 µs
# example took a 37 µs sample beside a 5x slower reference: 3.7%); at 0.5 ms all 26 did (worst 2.0%).
DEFAULT_GPU_SAMPLE_MS = 0.5
MAX_CALLS_PER_SAMPLE = 128  # a 4 µs kernel at a 0.5 ms sample; the host's enqueueing bounds what is useful
# One-call samples that `calls_for`'s estimate and the RL profile's spread (`judge.case_plan`) are taken from: with
# eleven, one sample disturbed by another process moves neither the median nor the quartiles (with five, it moved
# the upper quartile halfway to itself). Taken once per case per process.
PILOT_SAMPLES = 11
KEPT_SAMPLES = 8  # samples whose last output the candidate's worker keeps for the parent's full checks
KEPT_BYTES = 1 << 30  # ... within this much memory (fewer samples where the output is large; at least one)
TIMING_INPUTS = ("fresh", "rotate")


def calls_for(pilot_ms: float, sample_ms: float) -> int:
    """Calls per sample so that one sample covers at least `sample_ms` of device time (1: one call per sample)."""
    if sample_ms <= 0 or pilot_ms <= 0 or pilot_ms >= sample_ms:
        return 1
    return min(MAX_CALLS_PER_SAMPLE, math.ceil(sample_ms / pilot_ms))


# -- the harness's own objects, bound before any candidate is imported ------------------------------------


def _held(owner: object, name: str) -> object:
    return getattr(owner, name, None)


_EVENT_BASE = getattr(torch._C, "_CudaEventBase", None)  # a static C type: its methods cannot be replaced
_EVENT_METHODS = ("__new__", "record", "elapsed_time", "synchronize", "query")
# (label, owner, name): what the timing reads, and where others (a later job's code, torch itself) look it up.
_HARNESS: tuple[tuple[str, object, str], ...] = (
    ("time.perf_counter", time, "perf_counter"),
    ("os.urandom", os, "urandom"),
    ("torch.cuda", torch, "cuda"),
    ("torch._C", torch, "_C"),
    ("torch.cuda.Event", torch.cuda, "Event"),
    *((f"torch.cuda.Event.{name}", torch.cuda.Event, name) for name in _EVENT_METHODS),
    ("torch.cuda.synchronize", torch.cuda, "synchronize"),
    ("torch.cuda._sleep", torch.cuda, "_sleep"),
    ("torch.cuda.current_stream", torch.cuda, "current_stream"),
    ("torch.cuda.default_stream", torch.cuda, "default_stream"),
    ("torch._C._CudaEventBase", torch._C, "_CudaEventBase"),
    *((f"torch._C._CudaEventBase.{name}", _EVENT_BASE, name) for name in _EVENT_METHODS if _EVENT_BASE),
    ("torch._C._cuda_synchronize", torch._C, "_cuda_synchronize"),
    ("torch._C._cuda_sleep", torch._C, "_cuda_sleep"),
    ("torch._C._cuda_getCurrentStream", torch._C, "_cuda_getCurrentStream"),
    ("torch._C._cuda_getDefaultStream", torch._C, "_cuda_getDefaultStream"),
    ("torch.Tensor.zero_", torch.Tensor, "zero_"),  # the L2 flush
)
_BOUND: dict[str, object] = {label: _held(owner, name) for label, owner, name in _HARNESS}

_PERF_COUNTER: Callable[[], float] = time.perf_counter
_URANDOM: Callable[[int], bytes] = os.urandom
_ZERO: Any = torch.Tensor.zero_
# The C functions under torch.cuda's Python wrappers (which look up module attributes at call time). A torch
# built without CUDA has none of them; nothing here calls them there.
_SYNCHRONIZE: Any = _BOUND["torch._C._cuda_synchronize"]  # the whole current device, every stream
_SLEEP: Any = _BOUND["torch._C._cuda_sleep"]
_CURRENT_STREAM: Any = _BOUND["torch._C._cuda_getCurrentStream"]  # (stream id, device index, device type)
_DEFAULT_STREAM: Any = _BOUND["torch._C._cuda_getDefaultStream"]
_NEW_EVENT: Any = _EVENT_BASE if _EVENT_BASE is not None else torch.cuda.Event
_RECORD: Any = getattr(_NEW_EVENT, "record", None)  # record(event, stream)
_ELAPSED: Any = getattr(_NEW_EVENT, "elapsed_time", None)  # elapsed_time(start, end), ms


@dataclass
class _DeviceHarness:
    """A GPU's share of the harness, made once per process before any candidate: the flush buffer, the default
    stream (the events are recorded on it) and its identity (the stream every timed call must run on)."""

    index: int
    flush: torch.Tensor
    stream: Any
    default: tuple[Any, ...]
    pointer: int


_PREPARED: dict[int, _DeviceHarness] = {}


def prepare_device(device: torch.device) -> _DeviceHarness | None:
    """The GPU's flush buffer and default stream, made the first time a process asks (the workers ask when a job
    names a GPU, before its candidate or task module is imported); None on the CPU."""
    if device.type != "cuda":
        return None
    index = device.index if device.index is not None else torch.cuda.current_device()
    if index not in _PREPARED:
        flush = torch.empty(L2_FLUSH_BYTES // 4, dtype=torch.int32, device=torch.device("cuda", index))
        default, stream = tuple(_DEFAULT_STREAM(index)), torch.cuda.default_stream(index)
        _PREPARED[index] = _DeviceHarness(index, flush, stream, default, flush.data_ptr())
    return _PREPARED[index]


def harness_replaced() -> list[str]:
    """What of the harness its modules and classes no longer hold (by identity), or whose flush buffer moved."""
    changed = [label for label, owner, name in _HARNESS if _held(owner, name) is not _BOUND[label]]
    for prepared in _PREPARED.values():
        flush = prepared.flush
        if flush.data_ptr() != prepared.pointer or flush.numel() * 4 != L2_FLUSH_BYTES:
            changed.append(f"the L2 flush buffer of cuda:{prepared.index}")
    return changed


# -- what a timing returns --------------------------------------------------------------------------------


@dataclass(frozen=True)
class TimingStats:
    median_ms: float  # per call: a sample's span divided by its calls
    p25_ms: float
    p75_ms: float
    repetitions: int  # samples
    calls_per_sample: int = 1
    outputs: dict[int, Any] = field(default_factory=dict, repr=False)  # the kept samples' last outputs
    inputs: str = "rotate"  # the protocol: "fresh" (`time_staged`) or "rotate"
    checksums: list[Any] | None = field(default=None, repr=False)  # `OutputChecks.records`, fresh only
    checked_calls: int = 0

    @property
    def spread(self) -> float:
        return (self.p75_ms - self.p25_ms) / self.median_ms if self.median_ms > 0 else 0.0

    def reply(self) -> dict[str, Any]:
        """What a worker answers a timed request with (the candidate's and the reference's alike)."""
        return {"ok": True, "median_ms": self.median_ms, "p25_ms": self.p25_ms, "p75_ms": self.p75_ms,
                "spread": self.spread, "repetitions": self.repetitions, "calls_per_sample": self.calls_per_sample,
                "inputs": self.inputs, "kept": sorted(self.outputs), "checksums": self.checksums,
                "checked_calls": self.checked_calls}  # fmt: skip


@dataclass(frozen=True)
class RandomKeep:
    """Keep the last output of up to `most` samples, drawn when the first sample ends (its output's size known)
    from the OS's randomness, not from anything the parent sent; within `budget_bytes`, and at least one."""

    most: int = KEPT_SAMPLES
    budget_bytes: int = KEPT_BYTES


class InputSource(Protocol):
    fresh: bool
    after_flush: bool  # the sample's inputs are written after its L2 flush (else before it)

    def sample_inputs(self, sample: int, calls: int) -> list[Sequence[object]]: ...


class WatchedSample(Protocol):
    """Runs a timed run's first sample (`run_sample`, on `inputs`: its calls' inputs) watched as a checked call is
    and returns its outputs, which are checksummed like every sample's; its span is left out of the median (the
    candidate's side: `own_work`)."""

    def __call__(
        self, inputs: list[Sequence[object]], run_sample: Callable[[], list[object]]
    ) -> list[object]: ...


def _random_below(bound: int) -> int:
    return int.from_bytes(_URANDOM(8), "little") % bound  # bias below 2**-50 for the bounds used here


def _chosen(keep: Collection[int] | RandomKeep, repetitions: int, output: object) -> set[int]:
    if not isinstance(keep, RandomKeep):
        return set(keep)
    size = max(1, sum(leaf.numel() * leaf.element_size() for leaf in tensor_leaves(output)))
    count = max(1, min(keep.most, repetitions, keep.budget_bytes // size))
    pool = list(range(repetitions))
    for index in range(count):  # a partial Fisher-Yates shuffle
        other = index + _random_below(len(pool) - index)
        pool[index], pool[other] = pool[other], pool[index]
    return set(pool[:count])


# -- timing --------------------------------------------------------------------------------------------------


def time_staged(run: Callable[[Sequence[object]], object], input_sets: Sequence[Sequence[object]], *,
                repetitions: int, warmup: int, device: torch.device, calls_per_sample: int = 1,
                inputs: str = "fresh", timing_seed: int = 0, keep: Collection[int] | RandomKeep = (),
                tolerance: Tolerance | None = None, strict: bool = False,
                fresh_after_flush: bool = True, watched: WatchedSample | None = None) -> TimingStats:  # fmt: skip
    """A staged performance case timed under the protocol `inputs` names (see the module docstring): "fresh"
    (the staged input sets are the bases of every call's fresh values; every output checksummed, `strict`: the
    candidate's side, which times again one call per sample rather than leave a call's output unchecked;
    `tolerance`: the reference's, which reports its scale), or "rotate". `fresh_after_flush` False: fresh values
    written before each sample's flush (all cold; `bench/small_case_spread.py` compares the two). `watched`: the
    first sample runs through it (`WatchedSample`)."""
    if inputs == "rotate":
        return time_on_device(run, RotatingInputs(input_sets), repetitions, warmup, device,
                              keep_outputs=keep, calls_per_sample=calls_per_sample, watched=watched)  # fmt: skip
    if inputs != "fresh":
        raise ValueError(f"timing inputs are one of {TIMING_INPUTS}, not {inputs!r}")
    source = FreshInputs(input_sets, calls_per_sample, timing_seed, device, after_flush=fresh_after_flush)
    checks = OutputChecks(ChecksumWeights(timing_seed, device), tolerance, strict)
    return time_on_device(run, source, repetitions, warmup, device, keep_outputs=keep,
                          calls_per_sample=calls_per_sample, checks=checks, watched=watched)  # fmt: skip


def run_staged_untimed(run: Callable[[Sequence[object]], object], input_sets: Sequence[Sequence[object]], *,
                       repetitions: int, device: torch.device, calls_per_sample: int, timing_seed: int,
                       keep: Collection[int], tolerance: Tolerance | None) -> TimingStats:  # fmt: skip
    """The fresh protocol's timed calls without their clock: the same values (`timing_seed`), every output
    checksummed and the `keep` samples' outputs kept, as `time_staged` would, but no flush, no events and no
    warm-up. For a reference whose timed figure is reused (`toolchain.reference_times`): its results are still
    each call's own, and it needs no turn alone on the device. The reply's times are the host's wall clock and
    say nothing about the device."""
    source = FreshInputs(input_sets, calls_per_sample, timing_seed, device)
    checks = OutputChecks(ChecksumWeights(timing_seed, device), tolerance, strict=False)
    return _time_on_host(run, source, repetitions, 0, keep, max(1, calls_per_sample), checks)


def time_on_device(
    run: Callable[[Sequence[object]], object],
    inputs: InputSource | Sequence[Sequence[object]],
    repetitions: int = 100,
    warmup: int = 10,
    device: torch.device | None = None,
    warmup_ms: float = 50.0,
    keep_outputs: Collection[int] | RandomKeep = (),
    calls_per_sample: int = 1,
    checks: OutputChecks | None = None,
    watched: WatchedSample | None = None,
) -> TimingStats:
    """Median device time of one run(inputs) in ms over `repetitions` samples of `calls_per_sample` calls each.
    `inputs`: where each call's inputs come from (a plain list of input sets is rotated over). `keep_outputs`:
    samples whose last call's output is kept (a clone, made after the end event). `checks`: every call's output
    checksummed, with the device synchronised after each sample; a sample whose calls share an output's memory
    makes a strict `checks` time everything again one call per sample. `watched`: the first sample runs through
    it and is left out of the median (there must be at least two samples)."""
    if watched is not None and repetitions < 2:
        raise ValueError("a watched first sample needs at least two samples: it is left out of the median")
    device = device or torch.device("cuda")
    source: InputSource = inputs if hasattr(inputs, "sample_inputs") else RotatingInputs(inputs)  # type: ignore[arg-type]
    calls = max(1, calls_per_sample)
    try:
        if device.type == "cpu":
            return _time_on_host(run, source, repetitions, warmup, keep_outputs, calls, checks, watched)
        return _time_on_gpu(run, source, repetitions, warmup, device, warmup_ms, keep_outputs, calls, checks,
                            watched)  # fmt: skip
    except SharedOutputs:
        assert checks is not None and calls > 1  # one call per sample shares memory with no later call
        checks.reset()
        return time_on_device(run, source, repetitions, warmup, device, warmup_ms, keep_outputs, 1, checks,
                              watched)  # fmt: skip


def _checked_call(run: Callable[[Sequence[object]], object], inputs: Sequence[object],
                  harness: _DeviceHarness | None, where: str) -> object:  # fmt: skip
    """One call, on the default stream before and after (`harness` None: not watched). Work on another stream
    escapes the events, and a stream left current would carry the next call's launches away from them."""
    if harness is not None and tuple(_CURRENT_STREAM(harness.index)) != harness.default:
        raise TimedCallViolation(f"side_stream: {where} started on a stream other than the default stream")
    output = run(inputs)
    if harness is not None and tuple(_CURRENT_STREAM(harness.index)) != harness.default:
        raise TimedCallViolation(f"side_stream: {where} left a stream other than the default stream current")
    problem = output_type_problem(output)
    if problem is not None:  # a lazy output would do its work when checksummed, after the end event
        raise TimedCallViolation(f"{problem[1]} ({where})")
    return output


def _run_sample(run: Callable[[Sequence[object]], object], inputs: list[Sequence[object]], sample: int,
                harness: _DeviceHarness | None, every: bool) -> list[object]:  # fmt: skip
    """The sample's calls; their outputs (`every`), or only the last one's (an earlier call's output may be a
    buffer a later call writes again)."""
    outputs: list[object] = []
    for call, call_inputs in enumerate(inputs):
        output = _checked_call(run, call_inputs, harness, f"timed call {sample}/{call}")
        if every:
            outputs.append(output)
        else:
            outputs = [output]
    return outputs


def _time_on_gpu(run: Callable[[Sequence[object]], object], source: InputSource, repetitions: int, warmup: int,
                 device: torch.device, warmup_ms: float, keep: Collection[int] | RandomKeep, calls: int,
                 checks: OutputChecks | None, watched: WatchedSample | None = None) -> TimingStats:  # fmt: skip
    harness = prepare_device(device)
    assert harness is not None
    flush = harness.flush
    stream_watch = harness if checks is not None else None  # fresh: the stream is watched around each call
    # Warm up for at least `warmup` calls AND `warmup_ms` of wall time: an idle GPU runs at a fraction of
    # its clock (345 MHz seen on an idle H200) and ten calls of a 7 µs kernel never wake it up. The last
    # `calls` outputs stay alive, as a checked sample's do, so the allocator is warm for them too.
    started = _PERF_COUNTER()
    enqueue_seconds: list[float] = []
    recent: deque[object] = deque(maxlen=calls if checks is not None else 1)
    index = 0
    while index < warmup or (_PERF_COUNTER() - started) * 1e3 < warmup_ms:
        call_inputs = source.sample_inputs(repetitions + index, 1)[0]  # past the timed samples: new values
        _ZERO(flush)
        _SYNCHRONIZE()
        before = _PERF_COUNTER()
        recent.append(_checked_call(run, call_inputs, stream_watch, f"warm-up call {index}"))
        enqueue_seconds.append(_PERF_COUNTER() - before)  # host time to enqueue one call
        index += 1
    recent.clear()
    _SYNCHRONIZE()
    # Twice the typical enqueue time of the sample's calls, plus a margin, so the host is always ahead of the GPU.
    spin_cycles = int((2 * calls * statistics.median(enqueue_seconds) + 50e-6) * _ASSUMED_CLOCK_HZ)
    starts = [_NEW_EVENT(enable_timing=True) for _ in range(repetitions)]
    ends = [_NEW_EVENT(enable_timing=True) for _ in range(repetitions)]
    kept: dict[int, Any] = {}
    chosen: set[int] | None = None
    for sample in range(repetitions):
        # Fresh values are written before the span starts: after the flush (a producer's output, in L2 as far as
        # it fits), or before it (cold).
        sample_inputs = None if source.after_flush else source.sample_inputs(sample, calls)
        _ZERO(flush)
        if sample_inputs is None:
            sample_inputs = source.sample_inputs(sample, calls)
        if spin_cycles > 0:
            _SLEEP(spin_cycles)
        _RECORD(starts[sample], harness.stream)
        outputs = _sample_outputs(run, sample_inputs, sample, stream_watch, checks is not None, watched)
        _RECORD(ends[sample], harness.stream)
        chosen = _chosen(keep, repetitions, outputs[-1]) if chosen is None else chosen
        if sample in chosen:  # cloned after the end event: outside the measured span
            kept[sample] = clone_value(outputs[-1])
        if checks is not None:
            checks.queue(sample, outputs)
            _SYNCHRONIZE()  # the whole device, every stream: nothing of this sample runs into the next one's span
            checks.collect()
        del outputs
    _SYNCHRONIZE()
    spans = [_ELAPSED(start, end) / calls for start, end in zip(starts, ends, strict=True)]
    return _summarise(spans, kept, calls, source, checks, watched is not None)


def _time_on_host(run: Callable[[Sequence[object]], object], source: InputSource, repetitions: int, warmup: int,
                  keep: Collection[int] | RandomKeep, calls: int, checks: OutputChecks | None,
                  watched: WatchedSample | None = None) -> TimingStats:  # fmt: skip
    """Wall clock per call on the CPU (no cache flush, no events): what `VerifyConfig.time_on_cpu` uses so
    that CI runs the timing protocol (fresh values, checksums, the parent's draws and judgement) through the
    interpreter. The figures time the Triton interpreter, not a kernel: they never become a speedup."""
    recent: deque[object] = deque(maxlen=calls if checks is not None else 1)
    for index in range(warmup):
        recent.append(run(source.sample_inputs(repetitions + index, 1)[0]))
    recent.clear()
    samples: list[float] = []
    kept: dict[int, Any] = {}
    chosen: set[int] | None = None
    for sample in range(repetitions):
        sample_inputs = source.sample_inputs(sample, calls)
        started = _PERF_COUNTER()
        outputs = _sample_outputs(run, sample_inputs, sample, None, checks is not None, watched)
        samples.append((_PERF_COUNTER() - started) * 1e3 / calls)
        chosen = _chosen(keep, repetitions, outputs[-1]) if chosen is None else chosen
        if sample in chosen:
            kept[sample] = clone_value(outputs[-1])
        if checks is not None:
            checks.queue(sample, outputs)
            checks.collect()
        del outputs
    return _summarise(samples, kept, calls, source, checks, watched is not None)


def _sample_outputs(run: Callable[[Sequence[object]], object], inputs: list[Sequence[object]], sample: int,
                    harness: _DeviceHarness | None, every: bool, watched: WatchedSample | None) -> list[object]:  # fmt: skip
    """One sample's outputs (`_run_sample`); the first through `watched`, where there is one."""
    if sample == 0 and watched is not None:
        return watched(inputs, lambda: _run_sample(run, inputs, sample, harness, every))
    return _run_sample(run, inputs, sample, harness, every)


def _summarise(samples_ms: list[float], kept: dict[int, Any], calls: int, source: InputSource,
               checks: OutputChecks | None, first_watched: bool) -> TimingStats:  # fmt: skip
    """Median and quartiles of one timed series (device events or wall clock), per call, over every sample run and
    checked but the first where it was watched (its span is not a timed call's)."""
    samples = sorted(samples_ms[1:] if first_watched else samples_ms)
    quartiles = statistics.quantiles(samples, n=4) if len(samples) >= 2 else [samples[0]] * 3
    return TimingStats(statistics.median(samples), quartiles[0], quartiles[2], len(samples_ms), calls, kept,
                       "fresh" if source.fresh else "rotate", checks.records if checks is not None else None,
                       checks.checked_calls if checks is not None else 0)  # fmt: skip

"""What binds a candidate's timed calls to the work it was seen doing: its launches and the device time it caused.

The timed calls run with neither the dispatch monitor nor the device's record (both cost time between launches).
A candidate can tell the two apart by cost (a glue op takes microseconds longer under the monitor) and behave
well only when watched: launch its kernels on checked calls and let PyTorch compute on timed ones, so that the
speed term measures PyTorch. The timed run's first sample is therefore run watched, as a checked call is (the
dispatch monitor on, the launches recorded, on a GPU a CUDA-only profile), its outputs checksummed against the
reference's like every sample's, and its span left out of the candidate's median (`timing.WatchedSample`). Its
work is thus checked on values it never saw before, and two checks hold the other samples to it:

- **Launches.** Every timed call issues as many launches through the harness's launcher (Triton's `run`, a HIP
  launch function) as the watched sample's calls did. Counting costs the launcher wrapper an integer increment, which no
  candidate can tell from its absence. Timed calls that launch nothing, or fewer kernels, are refused.
- **Device work (GPU).** The median timed call may not be shorter than `OWN_WORK_SHARE` of the device time the
  watched sample's calls caused per call (on values written just before, as every sample's): CUPTI's records of
  every kernel, copy and fill that ran from the sample's first call to the device's idle after its last, on any
  stream and under any name, the union of their spans. The device is idle when the record starts, so none of it is
  the harness's. The timed figure is device time too (`timing`: a spin before each sample keeps host overhead out),
  so the two compare like for like. Timed calls that launch their kernels on an empty grid and let PyTorch compute,
  or that move their work onto another stream where it runs during the spin before the sample's start event, are
  shorter than the watched work. Counting every kernel, not only those that carry the harness's prefix, leaves
  nothing to gain from a kernel loaded under another name (Triton's driver can load a binary).

The worker reports the figures; the parent (`judge`) compares them, after the timed calls' checksums (a cached
result is named as one).

What it does not do: a candidate may still let PyTorch do up to `1 - OWN_WORK_SHARE` of the work of a timed call
(the margin honest kernels need: the watched call runs warm or cold in ways the timed calls do not); the CPU has
no own-work figure (under the interpreter the host time inside a watched launch exceeded a whole timed call: 7.1
against 4.4 ms for the relu example, 10.3 against 4.3 for softmax, as the monitor handles the interpreter's copies
of the arguments; the CPU gives no speed term); and the figures come from the
candidate's own process, like every tripwire there (the static wall and the jail are the walls).
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

import torch

# Bound when the worker starts, before any candidate is imported: the candidate process cannot swap the profiler
# this module calls for its own (the harness snapshots these objects; `candidate.CandidateGuards`).
from torch.profiler import ProfilerActivity, profile

# The least share of the watched sample's device work per call a median timed call may take. The 52 performance
# cases of the honest Triton and HIP examples ran their median timed call in 0.99 to 1.80 times it on an H200
# (bench/results/2026-12-07-h200-device-work.md; 1.00 to 2.85 on an H100 counting only their prefixed kernels):
# launch-bound cases sit far above 1.
OWN_WORK_SHARE = 0.9


def busy_ns(spans: list[tuple[int, int]]) -> int:
    """How long the union of `spans` (start, end in ns) covers: overlapping kernels count once."""
    total, reach = 0, None
    for start, end in sorted(spans):
        if reach is None or start > reach:
            total += end - start
            reach = end
        elif end > reach:
            total += end - reach
            reach = end
    return total


def device_spans(events: list[Any]) -> list[tuple[int, int]]:
    """The device spans (kernels, copies, fills: every event not on the host) of a record (torch's `_KinetoEvent`s)."""
    return [(event.start_ns(), event.end_ns()) for event in events
            if event.device_type() != torch.autograd.DeviceType.CPU]  # fmt: skip


def recorded_events(recorded: Any) -> list[Any]:
    """The events of a finished `torch.profiler.profile` (torch's `_KinetoEvent`s), where torch keeps them: the one
    place that reads that part of the profiler (the device record reads its events through it too)."""
    return list(recorded.profiler.kineto_results.events()) if recorded.profiler else []


def device_work_ms(call: Callable[[], Any]) -> float:
    """Runs `call` (the watched sample) under a CUDA-only profile that starts with the device idle (every stream
    synchronised) and ends with it idle again; the milliseconds the device was busy meanwhile, whoever's kernels
    they were. Raises what the profiler raises."""
    torch.cuda.synchronize()
    with profile(activities=[ProfilerActivity.CUDA]) as recorded:
        call()
        torch.cuda.synchronize()
    return busy_ns(device_spans(recorded_events(recorded))) / 1e6


def launch_shortfall(
    timed_calls: int, timed_launches: int, watched_calls: int, watched_launches: int
) -> str | None:
    """Why timed calls that launched `timed_launches` kernels in `timed_calls` calls did not run the work of the
    watched sample's `watched_calls` calls, which launched `watched_launches` (None: they did)."""
    if watched_calls > 0 and timed_launches * watched_calls == timed_calls * watched_launches:
        return None
    return (f"unwatched_launches: {timed_calls} timed calls launched {timed_launches} kernel(s) through the "
            f"harness's launcher; {watched_calls} watched call(s) on the same kind of inputs launched "
            f"{watched_launches}: the timed calls did not run the checked work")  # fmt: skip


def speed_shortfall(candidate_ms: float, own_kernel_ms: float | None) -> str | None:
    """Why a median timed call of `candidate_ms` did not do the device work its watched calls were seen doing (None: it
    may have)."""
    if own_kernel_ms is None or own_kernel_ms <= 0 or candidate_ms >= OWN_WORK_SHARE * own_kernel_ms:
        return None
    return (f"unwatched_speed: a timed call took {candidate_ms:.4f} ms, less than {OWN_WORK_SHARE:.0%} of the "
            f"{own_kernel_ms:.4f} ms of device work a watched call caused on the same kind of inputs: the timed "
            "calls did not do the work the checked calls did")  # fmt: skip

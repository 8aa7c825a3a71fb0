"""The reference's timed figures reused across verifications, for the reward path: `ReferenceTimes`.

A GRPO step sends hundreds of completions of a few tasks at once, and every verification used to time the
task's reference again, alone on the device, right after the candidate (about 0.5 s of the 1.3 s a verification
holds the GPU alone). With `ReferenceReuse`, the parent keeps each performance case's reference median and
spread, keyed by what makes the figure comparable (`ReferenceKey`: the task's content hash, the case and its
sizes, the device, the toolchain's versions and the timing protocol), and a later verification of the same case
times only the candidate. The reference still runs every timed call's values, untimed and outside the
candidate's turn alone on the device, so that every timed output is checksummed and spot-checked exactly as
before (`judge._Check.take_turn`): reuse saves the reference's *clock*, never its *results*.

A figure is reused only once two timings of the case agree within the spread the two measurements show
(`drift_bound`): one timing disturbed by whatever shared the device with it (a candidate's leftover work
included) does not become the figure later candidates are compared with. It is then reused at most `max_uses`
times and for at most `max_age_s` seconds; then the reference is timed again and the new timing compared with
the figure. A difference beyond the bound means the device itself changed (clocks, heat, another tenant): every
figure of that device is dropped, a warning is logged, and the case is timed until two timings agree again.
The figure a candidate is compared with is thus at most `max_uses` verifications or `max_age_s` old, and a
drift larger than the protocol's spread is seen at the next re-time.

What this does NOT do: persist figures across processes (the cache lives as long as the run or the service
that made it), or reuse a figure between devices, toolchain versions or timing protocols. The corpus job keeps
the full protocol: `VerifyConfig.reference_reuse` is None there.
"""

from __future__ import annotations

import functools
import importlib.metadata
import logging
import threading
import time
from collections.abc import Callable
from dataclasses import dataclass

LOG = logging.getLogger("kernelvault.reference_times")

DRIFT_FLOOR = 0.03  # the least relative difference called a drift: the reward's speed term is faithful to 3%


@dataclass(frozen=True)
class ReferenceReuse:
    """How long a reference's timed figure may stand in for a new timing (`VerifyConfig.reference_reuse`)."""

    max_uses: int = 32  # verifications that reuse one figure before the reference is timed again
    max_age_s: float = 300.0  # seconds one figure stands, whatever its uses
    drift_floor: float = DRIFT_FLOOR


# The reward path's setting (`kernelvault rl serve`, a trainer's local lane pool): a GRPO step's completions of one
# task share a figure; a figure older than its uses or five minutes is timed again.
REWARD_REFERENCE_REUSE = ReferenceReuse()


@dataclass(frozen=True)
class ReferenceKey:
    """What makes two reference timings comparable: the same program on the same sizes, device and protocol."""

    task_id: str  # the task's content hash
    case: str  # the performance case (its sizes and dtypes are the task's, named by the case)
    device: str  # the platform and the device the lane times on
    versions: str  # torch and Triton
    protocol: tuple[object, ...]  # repetitions, warm-up, calls per sample, input sets, the inputs protocol


@dataclass
class ReferenceFigure:
    median_ms: float
    spread: float  # (p75 - p25) / median
    timed_at: float  # the clock's time of the measurement
    uses: int = 0
    confirmed: bool = False  # a second timing agreed with it: only then is it reused


@functools.cache
def toolchain_versions() -> str:
    """The versions a reference timing depends on beyond the device: PyTorch's and Triton's."""
    found = []
    for package in ("torch", "triton"):
        try:
            found.append(f"{package} {importlib.metadata.version(package)}")
        except importlib.metadata.PackageNotFoundError:
            found.append(f"{package} -")
    return ", ".join(found)


def drift_bound(old: ReferenceFigure, new_spread: float, floor: float = DRIFT_FLOOR) -> float:
    """The largest relative difference between two timings of one case that is not a drift: the spread of the
    two measurements together (each median is uncertain by about its own spread), at least `floor`."""
    return max(floor, old.spread + new_spread)


class ReferenceTimes:
    """Reference figures by `ReferenceKey`, shared by every lane of this process (thread-safe)."""

    def __init__(self, clock: Callable[[], float] = time.monotonic) -> None:
        self._clock = clock
        self._lock = threading.Lock()
        self._figures: dict[ReferenceKey, ReferenceFigure] = {}
        self.reused = 0  # verifications' cases that reused a figure
        self.timed = 0  # reference timings recorded
        self.drifts = (
            0  # timings that differed from the figure beyond `drift_bound` (the device's figures dropped)
        )

    def reuse(self, key: ReferenceKey, policy: ReferenceReuse) -> ReferenceFigure | None:
        """The figure to compare a candidate with instead of timing the reference, counted as one use; None when
        there is none or it has stood long enough (the reference is then timed, and `record` called)."""
        with self._lock:
            figure = self._figures.get(key)
            if figure is None or not figure.confirmed or figure.uses >= policy.max_uses:
                return None
            if self._clock() - figure.timed_at >= policy.max_age_s:
                return None
            figure.uses += 1
            self.reused += 1
            return ReferenceFigure(
                figure.median_ms, figure.spread, figure.timed_at, figure.uses, confirmed=True
            )

    def record(
        self, key: ReferenceKey, median_ms: float, spread: float, policy: ReferenceReuse
    ) -> str | None:
        """Keep a new timing of the reference: confirmed where it agrees with the figure it replaces (within
        `drift_bound`). The drift message where it does not: every figure of the device is then dropped, and this
        timing waits for a second one to agree with it."""
        with self._lock:
            self.timed += 1
            old = self._figures.get(key)
            drift, confirmed = None, False
            if old is not None and old.median_ms > 0:
                change = (median_ms - old.median_ms) / old.median_ms
                bound = drift_bound(old, spread, policy.drift_floor)
                confirmed = abs(change) <= bound
                if not confirmed:
                    self.drifts += 1
                    dropped = [other for other in self._figures if other.device == key.device]
                    for other in dropped:
                        del self._figures[other]
                    age = self._clock() - old.timed_at
                    drift = (f"reference timing drift on {key.device}: {key.case} of task {key.task_id[:12]} took "
                             f"{median_ms:.4f} ms; its figure, timed {old.uses} use(s) and {age:.0f} s before, "
                             f"{old.median_ms:.4f} ms ({change:+.1%}, beyond the measurements' spread of "
                             f"{bound:.1%}): {len(dropped)} reference figure(s) of this device dropped")  # fmt: skip
            self._figures[key] = ReferenceFigure(median_ms, spread, self._clock(), confirmed=confirmed)
        if drift is not None:
            LOG.warning(drift)
        return drift

    def clear(self) -> None:
        with self._lock:
            self._figures.clear()


# The process's figures: a run or a service reuses them for as long as it lives.
REFERENCE_TIMES = ReferenceTimes()

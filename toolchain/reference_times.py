"""The reference's timed figures reused across verifications, for the reward path: `ReferenceTimes`.

A GRPO step sends hundreds of completions of a few tasks at once, and every verification used to time the
task's reference again, alone on the device, right after the candidate (about 0.5 s of the 1.3 s a verification
holds the GPU alone). With `ReferenceReuse`, the parent keeps each performance case's reference median and
spread, keyed by what makes the figure comparable (`ReferenceKey`: the task's content hash, the case and its
sizes, the device, the toolchain's versions and the timing protocol), and a later verification of the same case
times only the candidate. The reference still runs every timed call's values, untimed and outside the
candidate's turn alone on the device, so that every timed output is checksummed and spot-checked exactly as
before (`judge._Check.take_turn`): reuse saves the reference's *clock*, never its *results*.

A figure is reused only once two timings of the case agree within twice its spread (`drift_bound`), and only
timings of verifications that passed count: one timing disturbed by whatever shared the device with it (a
candidate's leftover work included) does not become the figure later candidates are compared with. It is then
reused at most `max_uses` times and for at most `max_age_s` seconds; then the reference is timed again and the
new timing compared with the figure, which stays as it is where they agree (a re-time never nudges it), and is
set aside where its samples spread far wider than the figure's (`disturbed`). A difference beyond the bound means
the device itself changed (clocks, heat, another tenant): every figure of that device is dropped, a warning is
logged, and the case is timed until two timings agree again. The figure a candidate is compared with is thus at
most `max_uses` verifications or `max_age_s` old, and a drift beyond twice the figure's spread is seen at the
next re-time.

What this does NOT do: persist figures across processes (the cache lives as long as the run or the service
that made it), or reuse a figure between devices, toolchain versions or timing protocols. The corpus job keeps
the full protocol: `VerifyConfig.reference_reuse` is None there.
"""

from __future__ import annotations

import dataclasses
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
# The reward path's timings (`verify.reward_verify_config`): "rl", reuse and the RL timing profile; "full", the corpus's.
REWARD_TIMINGS = ("rl", "full")


@dataclass(frozen=True)
class ReferenceKey:
    """What makes two reference timings comparable: the same program on the same sizes, device and protocol."""

    task_id: str  # the task's content hash
    case: str  # the performance case (its sizes and dtypes are the task's, named by the case)
    device: str  # the platform and the device the lane times on
    versions: str  # torch and Triton
    protocol: tuple[object, ...]  # samples, warm-up, calls per sample, input sets, sample_ms, inputs


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


def drift_bound(figure: ReferenceFigure, floor: float = DRIFT_FLOOR) -> float:
    """The largest relative difference between a figure and a new timing of its case that is not a drift: twice
    the figure's own spread (the two medians are each uncertain by about that much), at least `floor`. The new
    timing's spread does not widen it: a disturbance that slows some of its samples widens exactly that."""
    return max(floor, 2 * figure.spread)


def disturbed(figure: ReferenceFigure, spread: float, floor: float = DRIFT_FLOOR) -> bool:
    """A new timing whose samples spread far wider than the figure's (more than twice, and beyond `floor`): something
    shared the device with part of it. It neither confirms nor replaces a figure, nor counts as a drift."""
    return spread > max(floor, 2 * figure.spread)


class ReferenceTimes:
    """Reference figures by `ReferenceKey`, shared by every lane of this process (thread-safe)."""

    def __init__(self, clock: Callable[[], float] = time.monotonic) -> None:
        self._clock = clock
        self._lock = threading.Lock()
        self._figures: dict[ReferenceKey, ReferenceFigure] = {}
        self.reused = 0  # verifications' cases that reused a figure
        self.timed = 0  # reference timings recorded
        self.drifts = 0  # timings beyond `drift_bound` of their figure (the device's figures dropped)
        self.disturbed = 0  # timings set aside as `disturbed`

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
            return dataclasses.replace(figure)

    def record(
        self, key: ReferenceKey, median_ms: float, spread: float, policy: ReferenceReuse
    ) -> str | None:
        """Keep a new timing of the reference, taken in a verification that passed (a rejected one's timing is
        never recorded: `judge.run_check`). Against the case's figure:

        - within `drift_bound`: a confirmed figure stays as it is and stands again (uses and age reset), so that a
          timing nudged by a disturbance never becomes the figure, and a slow drift adds up until it is seen; an
          unconfirmed one is confirmed, as the smaller of the two medians (a disturbance only slows a reference:
          the smaller is the one that did not overpay a candidate);
        - `disturbed` (spread far wider than the figure's): set aside, the figure unchanged;
        - beyond the bound: a drift; every figure of the device is dropped, a warning logged (its text returned),
          and this timing waits, unconfirmed, for a second one to agree with it."""
        with self._lock:
            self.timed += 1
            old = self._figures.get(key)
            now = self._clock()
            if old is None or old.median_ms <= 0:
                self._figures[key] = ReferenceFigure(median_ms, spread, now)
                return None
            if disturbed(old, spread, policy.drift_floor):
                self.disturbed += 1
                return None
            change = (median_ms - old.median_ms) / old.median_ms
            bound = drift_bound(old, policy.drift_floor)
            if abs(change) <= bound:
                if old.confirmed:
                    self._figures[key] = ReferenceFigure(old.median_ms, old.spread, now, confirmed=True)
                else:
                    kept = min((old.median_ms, old.spread), (median_ms, spread))
                    self._figures[key] = ReferenceFigure(kept[0], kept[1], now, confirmed=True)
                return None
            self.drifts += 1
            dropped = [other for other in self._figures if other.device == key.device]
            for other in dropped:
                del self._figures[other]
            self._figures[key] = ReferenceFigure(median_ms, spread, now)
            drift = (f"reference timing drift on {key.device}: {key.case} of task {key.task_id[:12]} took "
                     f"{median_ms:.4f} ms; its figure, timed {old.uses} use(s) and {now - old.timed_at:.0f} s before, "
                     f"{old.median_ms:.4f} ms ({change:+.1%}, beyond twice its spread, {bound:.1%}): {len(dropped)} "
                     "reference figure(s) of this device dropped")  # fmt: skip
        LOG.warning(drift)
        return drift

    def clear(self) -> None:
        with self._lock:
            self._figures.clear()


# The process's figures: a run or a service reuses them for as long as it lives.
REFERENCE_TIMES = ReferenceTimes()

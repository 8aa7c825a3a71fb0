"""What a timed call sees and what it must show: fresh input values for every timed call, a checksum of every
timed output, and the parent's comparison of the candidate's checksums with the reference's.

    parent                         worker (candidate's and reference's alike)
    draws a timing seed ────────►  FreshInputs: before each sample's span, every call's working buffers get
                                   base * u, u log-uniform in [0.5, 2] per element, drawn from (seed, sample, call)
                                   OutputChecks: after the span, a weighted sum of every call's output
    compare_checksums ◄─────────── the sums (the reference's with its tolerance scale)

Why: a timed call whose inputs repeat can be answered from a cache (keyed by address, version or content),
and an output that nobody reads can be anything. With values never used before in the run and every output
summed against random signs, a cached answer is a wrong answer. The refresh keeps every value's sign and every
zero (a task's domain, log or sqrt, stays valid) and never compounds (always from the pristine base); integer
and bool inputs keep their base values (indices stay valid).

The sum is S = Σ w_i x_i in float64 with w_i = ±1, the same signs on both sides and new ones for every call and
output tensor (drawn from the timing seed). A candidate whose every element is within the task's tolerance of the
reference's, |c_i - r_i| <= t_i = atol + rtol |r_i|, has X = (S_c - S_r) / T with T = sqrt(Σ t_i²) sub-Gaussian
with variance proxy 1 (Hoeffding's lemma over the random signs), whatever its errors are, so:
- per call, |X| <= 8 except with probability below 2e-14;
- over the N calls of a run (independent signs, so independent X), Σ X² <= α N except with probability below
  exp(-N (α - 1 - ln α) / 2), set to 1e-12 (`aggregate_limit`: α = 7.6 for 12 calls, 2.4 for 100, 1.3 for 1200).
A wrong output's difference has the standard deviation ||c - r||: one call is caught where its error is several
times 8 T (a cached ReLU or matmul result, by orders of magnitude), and a run whose cached calls are wrong by
about 1.5 T or more (a softmax over 32 000 values, whose outputs are the size of its atol) by the sum. Non-finite
values count 0 in S; where they are is compared exactly, through sums of random 20-bit weights over the NaN,
+inf and -inf positions (exact in float64 whatever the summation order; a moved NaN changes them except with
probability about 1e-6). Integer and bool outputs are summed exactly in int64.

What this does not do: it does not judge an output fully (two outputs, drawn by the parent after the run, are:
`kernelvault.toolchain.judge`). It does not keep a task's invariants beyond signs and zeros: inputs that a task
makes sorted, normalised or positive definite are timed on values that are not (both sides compute the same,
and are compared, but on work the task's own inputs may not cause). And it does not stop a candidate whose
process reads the timing seed from the harness's memory (frames, the garbage collector) and computes the timed
calls' outputs ahead, during the warm-up: the static wall keeps those names out; the seed itself says nothing
about the checks' inputs.
"""

from __future__ import annotations

import hashlib
import math
from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any

import torch

from kernelvault.toolchain.compare import default_tolerance
from kernelvault.toolchain.function_tasks import argument_leaves, clone_value, tensor_leaves

SIGMAS = 8.0  # |S_c - S_r| <= SIGMAS * T: a candidate within tolerance fails with probability < 2 exp(-SIGMAS² / 2)
ROUNDING = 1e-12  # float64 summation of the same values in another order: relative to 1 + |S_r|
HASH_WEIGHT_BITS = 20  # position hashes: sums of 20-bit weights over < 2**33 elements stay exact in float64
# The chance that the run's sum of squares rejects outputs that are all within tolerance (`aggregate_limit`).
FALSE_ALARM = 1e-12
_INPUTS, _WEIGHTS, _HASH_WEIGHTS = 0, 1, 2  # what a derived seed is for


def derived_seed(timing_seed: int, *parts: int) -> int:
    """A 63-bit seed for one use of the timing seed (a sample's call, a case's checksum weights)."""
    text = ",".join(str(int(part)) for part in (timing_seed, *parts)).encode()
    return int.from_bytes(hashlib.sha256(text).digest()[:8], "little") >> 1


def _refreshed(tensor: torch.Tensor) -> bool:
    """Floating-point and complex leaves get new values; integers and bools keep theirs."""
    return tensor.is_floating_point() or tensor.is_complex()


class RotatingInputs:
    """The staged input sets as they are, rotated so that no call reuses the previous one's (the protocol before
    fresh values, `VerifyConfig.timing_inputs="rotate"`): kept for side-by-side fidelity benchmarks only."""

    fresh = False
    after_flush = False  # nothing is written before a sample

    def __init__(self, input_sets: Sequence[Sequence[object]]) -> None:
        self.input_sets = input_sets

    def sample_inputs(self, sample: int, calls: int) -> list[Sequence[object]]:
        """The sample's calls, the last on set `sample % len(input_sets)` (its output is the one kept)."""
        count = len(self.input_sets)
        return [self.input_sets[(sample + call - (calls - 1)) % count] for call in range(calls)]


class FreshInputs:
    """Working buffers that get new values before every sample: call `c` of sample `s` runs on base `c % n`
    (the staged input sets, never written) times u drawn from (timing seed, s, c), in buffer `c`.

    A sample of k calls uses k buffers, so its calls never see the same values, and a call never sees values
    an earlier call of the run saw. `after_flush` (the verifier's): the values are written after the sample's L2
    flush, as a producing kernel would leave them, so a small case finds as much of its inputs in L2 as fits
    (what the rotating protocol measured, from repeats); False writes them before the flush (all cold), kept to
    measure the difference. Memory: k copies of one input set; since a case's calls per sample are
    chosen to cover a fixed device time (`timing.calls_for`), k copies are at most what the device reads in
    that time (0.5 ms at 4.8 TB/s: 2.4 GB). `sample_inputs` is called outside the timed span.
    """

    fresh = True

    def __init__(self, bases: Sequence[Sequence[object]], buffers: int, timing_seed: int,
                 device: torch.device, after_flush: bool = True) -> None:  # fmt: skip
        self.bases = bases
        self.after_flush = after_flush
        self.timing_seed = timing_seed
        self.device = device
        self.working: list[Any] = []
        self.pairs: list[list[tuple[torch.Tensor, torch.Tensor]]] = []
        self.generator = torch.Generator(device=device)
        self.reserve(buffers)

    def reserve(self, buffers: int) -> None:
        """Working buffers for samples of up to `buffers` calls."""
        while len(self.working) < buffers:
            base = self.bases[len(self.working) % len(self.bases)]
            working = clone_value(base)
            self.working.append(working)
            self.pairs.append(list(zip(argument_leaves(working), argument_leaves(base), strict=True)))

    def sample_inputs(self, sample: int, calls: int) -> list[Sequence[object]]:
        self.reserve(calls)
        with torch.no_grad():
            for call in reversed(
                range(calls)
            ):  # the first call's values written last: the likeliest still in L2
                self.refresh(sample, call)
        return self.working[:calls]

    def refresh(self, sample: int, call: int) -> None:
        """Buffer `call` := its base with every floating-point value scaled by u in [0.5, 2], drawn per element."""
        self.generator.manual_seed(derived_seed(self.timing_seed, _INPUTS, sample, call))
        for working, base in self.pairs[call]:
            if not base.numel() or working.data_ptr() == base.data_ptr():
                continue  # nothing to write, or a module argument that could not be copied (never scaled twice)
            if not _refreshed(base):
                working.copy_(base)  # a candidate that wrote into its inputs does not change the next call's
                continue
            # log-uniform: 2 ** U(-1, 1); the same draws on every device of a type, whatever the task's dtype
            scale = torch.empty(base.shape, dtype=torch.float32, device=base.device)
            scale.uniform_(-1.0, 1.0, generator=self.generator).exp2_()
            torch.mul(base.detach(), scale, out=working)


@dataclass(frozen=True)
class LeafSum:
    """One output tensor's checksum: its size, S, the position hashes of NaN, +inf and -inf, and (the reference's)
    the tolerance scale T. `exact`: an integer or bool output, compared without tolerance."""

    numel: int
    total: float | int
    nan: int = 0
    posinf: int = 0
    neginf: int = 0
    scale: float = 0.0

    def wire(self) -> list[float | int]:
        return [self.numel, self.total, self.nan, self.posinf, self.neginf, self.scale]


class SharedOutputs(Exception):  # noqa: N818 - a signal to the timing loop, not an error
    """Two calls of one sample returned outputs in the same memory: only the last one is there to check."""


class TimedCallViolation(Exception):
    """A timed call that broke the protocol (a side stream, an output that is not a plain tensor): `message`
    leads with its sub-reason, as an integrity reject's does."""

    def __init__(self, message: str) -> None:
        super().__init__(message)
        self.message = message


class ChecksumWeights:
    """The ±1 signs of every call's every output tensor (and the position hashes' weights, by output size) of one
    case, on one device: drawn from the timing seed, the same on both sides."""

    def __init__(self, timing_seed: int, device: torch.device) -> None:
        self.timing_seed = timing_seed
        self.device = device
        self.generator = torch.Generator(device=device)
        self._hash: dict[int, torch.Tensor] = {}

    def signs(self, sample: int, call: int, leaf: int, numel: int) -> torch.Tensor:
        """New for every call and output tensor: the calls' checksums are independent of one another."""
        self.generator.manual_seed(derived_seed(self.timing_seed, _WEIGHTS, sample, call, leaf))
        drawn = torch.randint(
            0, 2, (numel,), generator=self.generator, device=self.device, dtype=torch.float32
        )
        return drawn.mul_(2.0).sub_(1.0)

    def hash_weights(self, numel: int) -> torch.Tensor:
        if numel not in self._hash:
            self.generator.manual_seed(derived_seed(self.timing_seed, _HASH_WEIGHTS, numel))
            drawn = torch.randint(0, 1 << HASH_WEIGHT_BITS, (numel,), generator=self.generator,
                                  device=self.device, dtype=torch.float64)  # fmt: skip
            self._hash[numel] = drawn.add_(1.0)
        return self._hash[numel]


@dataclass(frozen=True)
class Tolerance:
    """The task's tolerance (None: the dtype's default, as `compare_outputs`), for the reference's scale T."""

    atol: float | None
    rtol: float | None

    def of(self, dtype: torch.dtype) -> tuple[float, float]:
        atol = default_tolerance(dtype) if self.atol is None else self.atol
        rtol = default_tolerance(dtype) if self.rtol is None else self.rtol
        return atol, rtol


def _flat(leaf: torch.Tensor) -> torch.Tensor:
    """A leaf as the flat real values it is judged by (complex: (real, imaginary) pairs, as `compare_outputs`)."""
    value = leaf.detach()
    if value.is_complex():
        value = torch.view_as_real(value.resolve_conj())
    return value.reshape(-1)


def _storages(output: object) -> set[int]:
    return {leaf.untyped_storage().data_ptr() for leaf in tensor_leaves(output) if leaf.numel()}


class OutputChecks:
    """The checksums of every checkable call of every timed sample, in the order they were timed.

    `queue` (after a sample's end event) puts the sums on the device without waiting for them; `collect` (after the
    sample's device-wide synchronisation, so it waits for nothing) reads them in one transfer, and computes the
    slow sums (non-finite values) for the few outputs that need them. A call whose output shares memory with a
    later call's of the same sample was overwritten: `strict` (the candidate) stops the run with `SharedOutputs`
    (the caller times it again one call per sample, where every call is the last), otherwise (the reference) the
    call is left out. `tolerance`: the reference's side, which adds the scale T to each sum.
    """

    def __init__(self, weights: ChecksumWeights, tolerance: Tolerance | None, strict: bool) -> None:
        self.weights = weights
        self.tolerance = tolerance
        self.strict = strict
        # sample -> call -> leaf -> `LeafSum.wire()` (None: a call that was not checkable)
        self.records: list[list[list[list[float | int]] | None]] = []
        self._pending: list[tuple[int, list[torch.Tensor]]] = []  # (call, leaves) of the sample in hand
        self._sample = 0
        # float64 (or int64) 0-d sums, then (the reference's) the squared tolerance scales
        self._sums: list[torch.Tensor] = []
        self._calls = 0

    def reset(self) -> None:
        """Forget every sample (the run starts again, one call per sample)."""
        self.records, self._pending, self._sums = [], [], []

    def queue(self, sample: int, outputs: list[object]) -> None:
        self._calls = len(outputs)
        later: set[int] = set()
        checkable: list[tuple[int, list[torch.Tensor]]] = []
        for call in reversed(range(len(outputs))):
            storages = _storages(outputs[call])
            if storages & later:
                if self.strict:
                    raise SharedOutputs(f"timed call {sample}/{call}: memory a later call wrote again")
                continue
            later |= storages
            leaves = tensor_leaves(outputs[call])
            for index, leaf in enumerate(leaves):
                if type(leaf) is not torch.Tensor and not isinstance(leaf, torch.nn.Parameter):
                    raise TimedCallViolation(f"tensor_subclass: timed call {sample}/{call} output {index} is a "
                                               f"{type(leaf).__name__}, not a plain tensor")  # fmt: skip
            checkable.append((call, leaves))
        self._sample = sample
        self._pending = sorted(checkable, key=lambda item: item[0])
        self._sums = [self._fast_sum(sample, call, index, leaf)
                      for call, leaves in self._pending for index, leaf in enumerate(leaves)]  # fmt: skip
        if self.tolerance is not None:
            self._sums += [self._squared_scale(leaf) for _, leaves in self._pending for leaf in leaves]

    def collect(self) -> None:
        """The queued sample's checksums, read now that the device has finished them."""
        count = sum(len(leaves) for _, leaves in self._pending)
        values = _read_all(self._sums)
        sums, scales = values[:count], values[count:]
        row: list[list[list[float | int]] | None] = [None] * self._calls
        position = 0
        for call, leaves in self._pending:
            record = []
            for index, leaf in enumerate(leaves):
                total = sums[position]
                scale = math.sqrt(scales[position]) if scales else 0.0
                position += 1
                if isinstance(total, float) and not math.isfinite(total):
                    record.append(self._slow_sum(self._sample, call, index, leaf).wire())
                else:
                    record.append(LeafSum(leaf.numel(), total, scale=scale).wire())
            row[call] = record
        self.records.append(row)
        self._pending, self._sums = [], []

    @property
    def checked_calls(self) -> int:
        return sum(call is not None for row in self.records for call in row)

    def _fast_sum(self, sample: int, call: int, index: int, leaf: torch.Tensor) -> torch.Tensor:
        """S for an output with no non-finite value (a non-finite S says there is one: `_slow_sum` then)."""
        flat = _flat(leaf)
        signs = self.weights.signs(sample, call, index, flat.numel())
        if flat.is_floating_point():  # x * ±1 is exact in its own dtype (float32 for narrower ones)
            return torch.sum(flat * signs, dtype=torch.float64)
        return torch.sum(flat.to(torch.int64) * signs.to(torch.int64))

    def _squared_scale(self, leaf: torch.Tensor) -> torch.Tensor:
        """T² = Σ (atol + rtol |r_i|)² of a reference output, in float64 (0 for integer outputs: exact)."""
        flat = _flat(leaf)
        if not flat.is_floating_point() or self.tolerance is None:
            return torch.zeros((), dtype=torch.float64, device=flat.device)
        atol, rtol = self.tolerance.of(flat.dtype)
        scale = flat.to(torch.float64).abs_().mul_(rtol).add_(atol)
        return torch.sum(scale.nan_to_num_(0.0, 0.0, 0.0).square_())

    def _slow_sum(self, sample: int, call: int, index: int, leaf: torch.Tensor) -> LeafSum:
        """S over the finite values, and the position hashes of the others (rare: waits for the device)."""
        flat = _flat(leaf)
        numel = flat.numel()
        finite = torch.isfinite(flat)
        signed = torch.where(finite, flat, 0) * self.weights.signs(sample, call, index, numel)
        total = float(torch.sum(signed, dtype=torch.float64))
        hashes = self.weights.hash_weights(numel)
        nan, posinf, neginf = (int(torch.sum(torch.where(mask, hashes, 0.0)).item())
                               for mask in (torch.isnan(flat), torch.isposinf(flat), torch.isneginf(flat)))  # fmt: skip
        scale = 0.0
        if self.tolerance is not None:
            atol, rtol = self.tolerance.of(flat.dtype)
            bounds = torch.where(finite, flat.to(torch.float64).abs().mul_(rtol).add_(atol), 0.0)
            scale = math.sqrt(float(torch.sum(bounds.square_())))
        return LeafSum(numel, total, nan, posinf, neginf, scale)


def _read_all(sums: list[torch.Tensor]) -> list[float | int]:
    """Every 0-d sum in one transfer per dtype (float64 sums and int64 sums keep their exactness)."""
    values: list[float | int] = [0] * len(sums)
    for dtype in {tensor.dtype for tensor in sums}:
        positions = [index for index, tensor in enumerate(sums) if tensor.dtype == dtype]
        read = torch.stack([sums[index] for index in positions]).tolist()
        for index, value in zip(positions, read, strict=True):
            values[index] = value
    return values


def aggregate_limit(terms: int) -> float:
    """α such that N = `terms` independent sub-Gaussian X (variance proxy 1) have Σ X² > α N with probability at
    most `FALSE_ALARM`: the root of α - 1 - ln α = 2 ln(1 / FALSE_ALARM) / N above 1 (Chernoff's bound)."""
    target = 2.0 * math.log(1.0 / FALSE_ALARM) / max(1, terms)
    alpha = 1.0 + target + math.sqrt(2.0 * target)  # above the root; Newton's steps come down to it
    for _ in range(50):
        alpha -= (alpha - 1.0 - math.log(alpha) - target) / (1.0 - 1.0 / alpha)
    return alpha


@dataclass
class _Deviations:
    """The run's X = (S_c - S_r) / T so far, and the call that deviated most (for the message)."""

    squares: float = 0.0
    terms: int = 0
    worst: float = 0.0
    where: str = ""

    def add(self, deviation: float, where: str) -> None:
        self.squares += deviation * deviation
        self.terms += 1
        if abs(deviation) > self.worst:
            self.worst, self.where = abs(deviation), where


def compare_checksums(candidate: Any, reference: Any) -> tuple[str | None, int]:
    """The first timed call whose checksums disagree (`timed call <sample>/<call>: ...`), or the run's sum of squared
    deviations past its limit (named by the call that deviated most), or None; and how many calls were compared.
    `candidate` and `reference` are the workers' `checksums` replies (sample -> call -> leaf -> `LeafSum.wire()`,
    None for a call that was not checkable), read as untrusted data.

    Every call the reference checked must have been checked by the candidate (the candidate's worker times a
    case one call per sample rather than leave a call unchecked).
    """
    if not isinstance(candidate, list) or not isinstance(reference, list) or len(candidate) != len(reference):
        samples, expected = _length(candidate), _length(reference)
        return f"the timed run reported checksums of {samples} samples, expected {expected}", 0
    compared = 0
    deviations = _Deviations()
    for sample, (mine, theirs) in enumerate(zip(candidate, reference, strict=True)):
        if not isinstance(mine, list) or not isinstance(theirs, list) or len(mine) != len(theirs):
            calls, expected = _length(mine), _length(theirs)
            return f"timed call {sample}/*: {calls} calls checked, the reference ran {expected}", compared
        for call, (got, want) in enumerate(zip(mine, theirs, strict=True)):
            if want is None:
                continue
            problem = _compare_call(got, want, deviations, f"timed call {sample}/{call}")
            if problem is not None:
                return f"timed call {sample}/{call}: {problem}", compared
            compared += 1
    limit = aggregate_limit(deviations.terms)
    if deviations.terms and deviations.squares > limit * deviations.terms:
        spread = math.sqrt(deviations.squares / deviations.terms)
        return (f"{deviations.where}: the checksums of the run's {deviations.terms} timed outputs differ from the "
                f"reference's by {spread:.3g} times their tolerance scale (root mean square; at most "
                f"{math.sqrt(limit):.3g} for results within tolerance), this one the most ({deviations.worst:.3g}): "
                "not the results of their calls' inputs", compared)  # fmt: skip
    return None, compared


def _length(value: Any) -> int:
    return len(value) if isinstance(value, list) else 0


def _compare_call(got: Any, want: list[Any], deviations: _Deviations, call: str) -> str | None:
    if not isinstance(got, list):
        return "its output was not checked"
    if len(got) != len(want):
        return f"{len(got)} output tensor(s), the reference returned {len(want)}"
    for index, (mine, theirs) in enumerate(zip(got, want, strict=True)):
        where = f"output {index}" if len(want) > 1 else "output"
        if not isinstance(mine, list) or len(mine) != 6 or not all(isinstance(v, (int, float)) for v in mine):
            return f"{where}: a malformed checksum"
        numel, total, nan, posinf, neginf, _ = mine
        r_numel, r_total, r_nan, r_posinf, r_neginf, scale = theirs
        if numel != r_numel:
            return f"{where} has {numel} elements, the reference's {r_numel}"
        if (nan, posinf, neginf) != (r_nan, r_posinf, r_neginf):
            return f"{where}: NaN/Inf at other positions than the reference's"
        if isinstance(r_total, int) and not isinstance(r_total, bool):  # an integer output: exact
            if total != r_total:
                return f"{where}: checksum {total} differs from the reference's {r_total} (an exact output)"
            continue
        difference = abs(total - r_total)
        rounding = ROUNDING * (1.0 + abs(r_total))
        allowed = SIGMAS * scale + rounding
        if not difference <= allowed:  # NaN fails too
            return (f"{where}: checksum {total:.9g} vs the reference's {r_total:.9g} (allowed difference "
                    f"{allowed:.3g}): not the result of this call's inputs")  # fmt: skip
        if scale > 0:
            deviations.add(max(0.0, difference - rounding) / scale, f"{call} {where}")
    return None

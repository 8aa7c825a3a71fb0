"""Compare a candidate's output with the reference's: structure first, then values.

Structure (not a tensor, wrong shape, wrong dtype) is an interface error, a tensor subclass (a lazy or
self-comparing object) an integrity reject; values outside
`|out - ref| <= atol + rtol * |ref|`, or NaN/Inf where the reference has none, are a mismatch.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

import torch

DEFAULT_TOLERANCE = {torch.float32: 1e-4, torch.float64: 1e-6, torch.float16: 1e-2, torch.bfloat16: 1e-2}


@dataclass(frozen=True)
class Comparison:
    failure_kind: str | None  # None, "interface_error", "mismatch" or "integrity_reject" (tensor subclass)
    message: str
    max_abs_error: float | None = None
    max_rel_error: float | None = None


def flatten_outputs(output: object) -> list[object]:
    """The leaves of an output in the order they are compared: tuples and lists opened, anything else a leaf."""
    if isinstance(output, (tuple, list)):
        return [leaf for item in output for leaf in flatten_outputs(item)]
    return [output]


def default_tolerance(dtype: torch.dtype) -> float:
    return DEFAULT_TOLERANCE.get(dtype, 0.0)  # integer and bool outputs must match exactly


def _working_dtype(dtype: torch.dtype) -> torch.dtype:
    """What a comparison computes in: float32 for float32 and narrower floats, whose differences and bounds it
    holds to about 1e-7 of their size, a thousand times finer than the tightest tolerance above; float64 for
    float64 and for integers (exact to 2**53)."""
    if dtype.is_floating_point and dtype != torch.float64:
        return torch.float32
    return torch.float64


def compare_outputs(
    reference: object,
    candidate: object,
    atol: float | None,
    rtol: float | None,
    labels: list[str] | None = None,
) -> Comparison:
    """`labels`: a name per output tensor for the messages (a function task's "call 0 gradient 1"), where the
    reference's structure gives them; otherwise outputs are numbered."""
    ref_leaves, out_leaves = flatten_outputs(reference), flatten_outputs(candidate)
    if labels is not None and len(labels) != len(ref_leaves):
        labels = None
    if len(ref_leaves) != len(out_leaves):
        return Comparison(
            "interface_error", f"expected {len(ref_leaves)} output tensor(s), got {len(out_leaves)}"
        )
    worst_abs, worst_rel = 0.0, 0.0
    for index, (ref, out) in enumerate(zip(ref_leaves, out_leaves, strict=True)):
        where = labels[index] if labels else f"output {index}" if len(ref_leaves) > 1 else "output"
        if not isinstance(out, torch.Tensor):
            return Comparison("interface_error", f"{where} is {type(out).__name__}, expected a torch.Tensor")
        if type(out) is not torch.Tensor and not isinstance(out, torch.nn.Parameter):
            return Comparison(
                "integrity_reject", f"tensor_subclass: {where} is a {type(out).__name__}, not a plain tensor"
            )
        if out.shape != ref.shape:
            return Comparison(
                "interface_error", f"{where} has shape {tuple(out.shape)}, expected {tuple(ref.shape)}"
            )
        if out.dtype != ref.dtype:
            return Comparison("interface_error", f"{where} has dtype {out.dtype}, expected {ref.dtype}")
        if out.device != ref.device:
            return Comparison("interface_error", f"{where} is on {out.device}, expected {ref.device}")
        if ref.numel() == 0:
            continue
        if (
            ref.is_complex()
        ):  # judged as (real, imaginary) pairs: a cast to a real dtype drops the imaginary part
            ref, out = torch.view_as_real(ref.resolve_conj()), torch.view_as_real(out.resolve_conj())
        a_tol = default_tolerance(ref.dtype) if atol is None else atol
        r_tol = default_tolerance(ref.dtype) if rtol is None else rtol
        if bool(torch.isfinite(ref).all()) and bool(torch.isfinite(out).all()):
            # The common case, in three passes over copies in the working precision (the judge compares
            # outputs of hundreds of MB inside a job's time limit, several lanes at once: 32 M elements took
            # 2.5 s with the masks below, 0.9 s over float64 copies, 0.35 s over float32 ones).
            got, expected = out.detach().reshape(-1), ref.detach().reshape(-1)  # for the message
            work = _working_dtype(ref.dtype)
            ref_w, out_w = ref.detach().to(work, copy=True), out.detach().to(work, copy=True)
            diff, scale = out_w.sub_(ref_w).abs_().reshape(-1), ref_w.abs_().reshape(-1)
        else:
            ref64, out64 = ref.detach().to(torch.float64), out.detach().to(torch.float64)
            ref_bad, out_bad = ~torch.isfinite(ref64), ~torch.isfinite(out64)
            # NaN never equals NaN: compare where the NaNs are, then the infinities by sign.
            same_nan = torch.equal(torch.isnan(ref64), torch.isnan(out64))
            if (
                not torch.equal(ref_bad, out_bad)
                or not same_nan
                or not torch.equal(torch.isposinf(ref64), torch.isposinf(out64))
            ):
                differs = (ref_bad != out_bad) | (torch.isnan(ref64) != torch.isnan(out64))
                differs |= torch.isposinf(ref64) != torch.isposinf(out64)
                return Comparison(
                    "mismatch",
                    f"{where}: NaN/Inf at {int(differs.sum())} position(s) where the reference differs",
                )
            finite = ~ref_bad
            got, expected = out64[finite], ref64[finite]  # the flat index below counts finite elements
            diff, scale = (got - expected).abs(), expected.abs()
        if diff.numel():
            worst_abs = max(worst_abs, float(diff.max()))
            worst_rel = max(worst_rel, float((diff / scale.clamp_min(1e-12)).max()))
            over = diff > scale.mul_(r_tol).add_(a_tol)
            if bool(over.any()):
                first = int(over.nonzero()[0, 0])
                return Comparison(
                    "mismatch",
                    f"{where}: {int(over.sum())} of {diff.numel()} elements outside atol={a_tol:g} rtol={r_tol:g}; "
                    f"max abs error {float(diff.max()):.3g} (e.g. flat index {first}: "
                    f"got {float(got[first]):.6g}, expected {float(expected[first]):.6g})",
                    worst_abs,
                    worst_rel,
                )
    return Comparison(None, "within tolerance", worst_abs, worst_rel)


def output_labels(expected: Any, kernels: bool = False) -> list[str] | None:
    """A name per tensor of a function task's judged result (`FunctionCall.forward`: per call, what it returned,
    its tensor arguments after it and, when differentiated, their gradients), in the order the judge flattens
    them, for its messages: "call 0 result", "call 1 argument 2 after the call", "call 0 gradient 0". None for
    anything else."""
    parts = ("result", "argument {} after the call", "gradient {}")
    if not isinstance(expected, (tuple, list)):
        return None
    labels = []
    for index, call in enumerate(expected):
        if not isinstance(call, (tuple, list)) or not 2 <= len(call) <= 3:
            return None
        for part, value in enumerate(call):
            count = len(flatten_outputs(value))
            for number in range(count):
                what = (
                    parts[part].format(number) if part else ("result" if count == 1 else f"result {number}")
                )
                labels.append(f"{'launch' if kernels else 'call'} {index} {what}")
    return labels

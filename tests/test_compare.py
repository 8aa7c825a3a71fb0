"""compare_outputs: the one comparison behind every correctness verdict and the run-twice check."""

from __future__ import annotations

import torch

from kernelvault.toolchain.compare import compare_outputs

NAN, INF = float("nan"), float("inf")


def test_nan_where_the_reference_has_nan_matches() -> None:
    # log of a negative number is NaN in the reference too: a faithful kernel must not be refused.
    reference = torch.tensor([1.0, NAN, INF, -INF])
    assert compare_outputs(reference, reference.clone(), 1e-4, 1e-4).failure_kind is None


def test_nan_where_the_reference_is_finite_is_a_mismatch() -> None:
    reference = torch.tensor([1.0, 2.0, 3.0, 0.0])
    result = compare_outputs(reference, torch.tensor([1.0, NAN, 3.0, NAN]), 1e-4, 1e-4)
    assert result.failure_kind == "mismatch"
    assert result.message == "output: NaN/Inf at 2 position(s) where the reference differs"


def test_infinity_of_the_wrong_sign_or_nan_for_inf_is_a_mismatch() -> None:
    reference = torch.tensor([INF, -INF])
    assert compare_outputs(reference, torch.tensor([-INF, -INF]), 1e-4, 1e-4).failure_kind == "mismatch"
    assert compare_outputs(reference, torch.tensor([NAN, -INF]), 1e-4, 1e-4).failure_kind == "mismatch"


def test_finite_values_outside_tolerance_name_the_first_bad_element() -> None:
    result = compare_outputs(torch.zeros(4), torch.tensor([0.0, 0.0, 0.5, 0.0]), 1e-4, 1e-4)
    assert result.failure_kind == "mismatch"
    assert "1 of 4 elements outside" in result.message and "flat index 2" in result.message


def test_a_comparison_leaves_both_tensors_as_they_were() -> None:
    # The judge keeps its expected outputs for later checks; a float64 .to() would alias, not copy.
    reference = torch.tensor([[-1.0, 2.0], [3.0, -4.0]], dtype=torch.float64)
    output = torch.tensor([[-1.0, 2.0], [3.5, -4.0]], dtype=torch.float64)
    kept_reference, kept_output = reference.clone(), output.clone()
    result = compare_outputs(reference, output, 1e-4, 1e-4)
    assert result.failure_kind == "mismatch" and "got 3.5, expected 3" in result.message
    assert torch.equal(reference, kept_reference) and torch.equal(output, kept_output)


def test_half_and_single_precision_outputs_get_the_verdict_and_errors_of_a_double_precision_comparison() -> (
    None
):
    """The judge compares float32 and narrower outputs in float32 (twice as fast as float64 on the parent's
    CPU): the verdict near the tolerance's edge and the recorded errors are those of exact arithmetic."""
    generator = torch.Generator().manual_seed(0)
    for dtype, tolerance in ((torch.float32, 1e-4), (torch.float16, 1e-2), (torch.bfloat16, 1e-2)):
        reference = torch.randn(4096, generator=generator).to(dtype)
        for scale in (0.5, 0.9, 1.1, 2.0):  # errors around the edge atol + rtol * |ref|
            noise = torch.rand(4096, generator=generator) * scale * tolerance * (1 + reference.double().abs())
            candidate = (reference.double() + noise).to(dtype)
            result = compare_outputs(reference, candidate, tolerance, tolerance)
            diff = (candidate.double() - reference.double()).abs()
            exact_fail = bool((diff > tolerance + tolerance * reference.double().abs()).any())
            assert (result.failure_kind == "mismatch") == exact_fail, (dtype, scale)
            if not exact_fail:
                assert abs(result.max_abs_error - float(diff.max())) <= 1e-7 * float(diff.max()) + 1e-12

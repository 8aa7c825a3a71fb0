"""Duplicate detection among candidates of one task, and decontamination of tasks against an eval set."""

from __future__ import annotations

import pytest
from datasketch import MinHash

from kernelvault.contracts import Task
from kernelvault.corpus.dedup import (
    Contamination,
    DedupReport,
    Duplicate,
    code_shingles,
    find_contaminated_tasks,
    find_duplicates,
    minhash_of,
    normalize_source,
    normalized_hash,
)
from kernelvault.toolchain.tasks import BUNDLED_TASKS, load_tasks, parse_task

# A realistic Triton softmax candidate and variants of it, as an agent might produce them.

ORIGINAL = """\
import torch
import torch.nn as nn
import triton
import triton.language as tl


@triton.jit
def softmax_kernel(out_ptr, in_ptr, in_row_stride, out_row_stride, n_cols, BLOCK_SIZE: tl.constexpr):
    # One program per row; the whole row fits in one block.
    row = tl.program_id(0)
    offsets = tl.arange(0, BLOCK_SIZE)
    mask = offsets < n_cols
    row_start = in_ptr + row * in_row_stride
    x = tl.load(row_start + offsets, mask=mask, other=-float("inf"))
    x = x - tl.max(x, axis=0)  # subtract the max for stability
    numerator = tl.exp(x)
    denominator = tl.sum(numerator, axis=0)
    y = numerator / denominator
    tl.store(out_ptr + row * out_row_stride + offsets, y, mask=mask)


class ModelNew(nn.Module):
    def __init__(self):
        super().__init__()

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        x = x.contiguous()
        n_rows, n_cols = x.shape
        out = torch.empty_like(x)
        block = triton.next_power_of_2(n_cols)
        softmax_kernel[(n_rows,)](out, x, x.stride(0), out.stride(0), n_cols, BLOCK_SIZE=block)
        return out
"""

WHITESPACE = """\
import torch
import torch.nn as nn
import triton
import triton.language as tl

@triton.jit
def softmax_kernel(out_ptr, in_ptr,
                   in_row_stride, out_row_stride,
                   n_cols, BLOCK_SIZE: tl.constexpr):
    # One program per row; the whole row fits in one block.
    row = tl.program_id(0)

    offsets = tl.arange(0,BLOCK_SIZE)
    mask = offsets<n_cols
    row_start = in_ptr + row*in_row_stride
    x = tl.load(row_start + offsets,
        mask=mask,
        other=-float('inf'))
    x = x - tl.max(x, axis=0)  # subtract the max for stability

    numerator = tl.exp(x)
    denominator = tl.sum(numerator, axis=0)
    y = (numerator / denominator)
    tl.store(out_ptr + row * out_row_stride + offsets, y, mask=mask,)
class ModelNew(nn.Module):
  def __init__(self):
    super().__init__()
  def forward(self, x: torch.Tensor) -> torch.Tensor:
    x = x.contiguous()
    n_rows, n_cols = x.shape
    out = torch.empty_like(x)
    block = triton.next_power_of_2(n_cols)
    softmax_kernel[(n_rows,)](
        out, x, x.stride(0), out.stride(0), n_cols, BLOCK_SIZE=block
    )
    return out
"""

COMMENTED = '''\
"""Row-wise softmax in Triton."""
import torch
import torch.nn as nn
import triton
import triton.language as tl


@triton.jit
def softmax_kernel(out_ptr, in_ptr, in_row_stride, out_row_stride, n_cols, BLOCK_SIZE: tl.constexpr):
    """Numerically stable softmax of one row."""
    row = tl.program_id(0)  # which row this program handles
    offsets = tl.arange(0, BLOCK_SIZE)
    mask = offsets < n_cols
    row_start = in_ptr + row * in_row_stride
    # padding lanes read -inf so they vanish in the exp
    x = tl.load(row_start + offsets, mask=mask, other=-float("inf"))
    x = x - tl.max(x, axis=0)
    numerator = tl.exp(x)
    denominator = tl.sum(numerator, axis=0)
    y = numerator / denominator
    tl.store(out_ptr + row * out_row_stride + offsets, y, mask=mask)


class ModelNew(nn.Module):
    """Drop-in replacement for the reference Model."""

    def __init__(self):
        super().__init__()

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        """Launch one program per row."""
        x = x.contiguous()
        n_rows, n_cols = x.shape
        out = torch.empty_like(x)
        block = triton.next_power_of_2(n_cols)
        softmax_kernel[(n_rows,)](out, x, x.stride(0), out.stride(0), n_cols, BLOCK_SIZE=block)
        return out
'''

RENAMED = """\
import torch
import torch.nn as nn
import triton
import triton.language as tl


@triton.jit
def _row_softmax(dst, src, src_stride, dst_stride, width, BLOCK: tl.constexpr):
    # One program per row; the whole row fits in one block.
    pid = tl.program_id(0)
    cols = tl.arange(0, BLOCK)
    valid = cols < width
    base = src + pid * src_stride
    vals = tl.load(base + cols, mask=valid, other=-float("inf"))
    vals = vals - tl.max(vals, axis=0)  # subtract the max for stability
    num = tl.exp(vals)
    den = tl.sum(num, axis=0)
    res = num / den
    tl.store(dst + pid * dst_stride + cols, res, mask=valid)


class ModelNew(nn.Module):
    def __init__(self):
        super().__init__()

    def forward(self, inp: torch.Tensor) -> torch.Tensor:
        inp = inp.contiguous()
        rows, width = inp.shape
        result = torch.empty_like(inp)
        blk = triton.next_power_of_2(width)
        _row_softmax[(rows,)](result, inp, inp.stride(0), result.stride(0), width, BLOCK=blk)
        return result
"""

REORDERED = ORIGINAL.replace(
    "        out = torch.empty_like(x)\n        block = triton.next_power_of_2(n_cols)\n",
    "        block = triton.next_power_of_2(n_cols)\n        out = torch.empty_like(x)\n",
)
RELU = """\
import torch
import torch.nn as nn
import triton
import triton.language as tl


@triton.jit
def relu_kernel(x_ptr, out_ptr, n_elements, BLOCK_SIZE: tl.constexpr):
    pid = tl.program_id(0)
    offsets = pid * BLOCK_SIZE + tl.arange(0, BLOCK_SIZE)
    mask = offsets < n_elements
    x = tl.load(x_ptr + offsets, mask=mask)
    tl.store(out_ptr + offsets, tl.maximum(x, 0.0), mask=mask)


class ModelNew(nn.Module):
    def __init__(self):
        super().__init__()

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        x = x.contiguous()
        out = torch.empty_like(x)
        n_elements = x.numel()
        grid = (triton.cdiv(n_elements, 1024),)
        relu_kernel[grid](x, out, n_elements, BLOCK_SIZE=1024)
        return out
"""

ONLINE = """\
import torch
import torch.nn as nn
import triton
import triton.language as tl


@triton.jit
def softmax_kernel(out_ptr, in_ptr, stride, n_cols, BLOCK_SIZE: tl.constexpr):
    row = tl.program_id(0)
    m = -float("inf")
    d = 0.0
    for start in range(0, n_cols, BLOCK_SIZE):
        offsets = start + tl.arange(0, BLOCK_SIZE)
        x = tl.load(in_ptr + row * stride + offsets, mask=offsets < n_cols, other=-float("inf"))
        m_new = tl.maximum(m, tl.max(x, axis=0))
        d = d * tl.exp(m - m_new) + tl.sum(tl.exp(x - m_new), axis=0)
        m = m_new
    for start in range(0, n_cols, BLOCK_SIZE):
        offsets = start + tl.arange(0, BLOCK_SIZE)
        x = tl.load(in_ptr + row * stride + offsets, mask=offsets < n_cols)
        tl.store(out_ptr + row * stride + offsets, tl.exp(x - m) / d, mask=offsets < n_cols)


class ModelNew(nn.Module):
    def __init__(self):
        super().__init__()

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        x = x.contiguous()
        out = torch.empty_like(x)
        softmax_kernel[(x.shape[0],)](out, x, x.stride(0), x.shape[1], BLOCK_SIZE=1024)
        return out
"""


def _softmax_set() -> list[tuple[str, str, str]]:
    return [
        ("original", "softmax", ORIGINAL),
        ("whitespace", "softmax", WHITESPACE),
        ("commented", "softmax", COMMENTED),
        ("renamed", "softmax", RENAMED),
        ("reordered", "softmax", REORDERED),
        ("relu", "softmax", RELU),
        ("online", "softmax", ONLINE),
    ]


def test_variants_of_one_candidate_are_exact_or_near_duplicates_of_the_first() -> None:
    report = find_duplicates(_softmax_set())

    assert isinstance(report, DedupReport)
    assert (report.exact, report.near, report.unique) == (2, 2, 3)
    by_id = report.duplicate_of()
    assert set(by_id) == {"whitespace", "commented", "renamed", "reordered"}
    assert all(duplicate.duplicate_of == "original" for duplicate in by_id.values())
    assert by_id["whitespace"] == Duplicate("whitespace", "original", "exact", 1.0)
    assert by_id["commented"].kind == "exact"
    assert by_id["renamed"].kind == "near" and by_id["reordered"].kind == "near"
    assert all(0.0 <= duplicate.similarity <= 1.0 for duplicate in report.duplicates)
    assert 0.85 <= by_id["renamed"].similarity < 1.0  # the kernel's constexpr keyword changed too


def test_different_kernels_score_well_below_the_threshold() -> None:
    original = minhash_of(ORIGINAL)
    assert original.jaccard(minhash_of(RELU)) < 0.6
    assert original.jaccard(minhash_of(ONLINE)) < 0.6
    assert original.jaccard(minhash_of(REORDERED)) > 0.9


def test_the_first_occurrence_is_kept_whatever_it_is() -> None:
    items = [("a", "softmax", RENAMED), ("b", "softmax", ORIGINAL), ("c", "softmax", COMMENTED)]
    report = find_duplicates(items)

    assert report.unique == 1
    assert {d.attempt_id: d.duplicate_of for d in report.duplicates} == {"b": "a", "c": "a"}


def test_a_copy_of_a_near_duplicate_points_to_the_kept_attempt() -> None:
    items = [("a", "softmax", ORIGINAL), ("b", "softmax", RENAMED), ("c", "softmax", RENAMED)]
    by_id = find_duplicates(items).duplicate_of()

    assert by_id["c"].duplicate_of == "a"
    assert by_id["c"].kind == "near"
    assert by_id["c"].similarity == by_id["b"].similarity


def test_duplicates_are_only_sought_within_one_task() -> None:
    items = [("a", "softmax", ORIGINAL), ("b", "row_softmax", ORIGINAL), ("c", "row_softmax", RENAMED)]
    report = find_duplicates(items)

    assert report.unique == 2
    assert report.exact == 0
    assert [(d.attempt_id, d.duplicate_of) for d in report.duplicates] == [("c", "b")]


def test_attempts_without_code_are_ignored() -> None:
    items = [
        ("none", "softmax", None),
        ("empty", "softmax", ""),
        ("comment", "softmax", "# nothing here\n\n"),
        ("original", "softmax", ORIGINAL),
    ]
    report = find_duplicates(items)  # type: ignore[arg-type]

    assert (report.exact, report.near, report.unique, report.duplicates) == (0, 0, 1, ())


def test_a_bad_threshold_is_refused() -> None:
    with pytest.raises(ValueError, match="threshold"):
        find_duplicates([("a", "t", ORIGINAL)], threshold=1.5)


def test_shingles_ignore_local_names_but_keep_the_library_calls() -> None:
    renamed = ORIGINAL.replace("softmax_kernel", "kern").replace("numerator", "e").replace("row", "r")
    shingles = code_shingles(ORIGINAL)

    assert code_shingles(renamed) == shingles
    text = " ".join(shingles)
    assert ". load (" in text and ". empty_like (" in text and "mask = v" in text
    assert "numerator" not in text and "softmax_kernel" not in text
    assert code_shingles("") == set()
    minhash = minhash_of(ORIGINAL, num_perm=64)
    assert isinstance(minhash, MinHash) and len(minhash) == 64


def test_normalize_source_ignores_formatting_comments_and_docstrings() -> None:
    assert normalize_source(WHITESPACE) == normalize_source(ORIGINAL) == normalize_source(COMMENTED)
    assert "#" not in normalize_source(ORIGINAL)
    assert "Row-wise softmax" not in normalize_source(COMMENTED)
    assert normalized_hash(COMMENTED) == normalized_hash(ORIGINAL) != normalized_hash(RENAMED)
    assert normalize_source('def f():\n    """Only a docstring."""\n') == "def f():\n    pass"


def test_normalize_source_of_unparsable_code_drops_comments_and_collapses_whitespace() -> None:
    broken = 'def f(x)\n    s = "a # b"   # the colon is missing\n    return  s\n'
    reformatted = 'def f(x)\n  s = "a # b"\n\n  return s  # same code\n'

    assert normalize_source(broken) == 'def f(x) s = "a # b" return s'
    assert normalized_hash(broken) == normalized_hash(reformatted)
    assert normalized_hash(broken) != normalized_hash(broken.replace("return", "yield"))
    # Unclosed bracket: tokenize fails too, and a regex removes the comment.
    assert normalize_source("y = f(a,  # first\n      b") == "y = f(a, b"
    assert code_shingles("y = f(a,  # first\n      b", size=3) == {
        "v0 = v1",
        "= v1 (",
        "v1 ( v2",
        "( v2 ,",
        "v2 , v3",
    }


def test_normalize_source_of_empty_code() -> None:
    assert normalize_source("") == ""
    assert normalize_source("   \n\n# just a comment\n") == ""
    assert normalized_hash("") == normalized_hash("\n\n")
    assert len(normalized_hash("")) == 16


# -- decontamination ----------------------------------------------------------------------------------

MLP = '''\
import torch
import torch.nn as nn
import torch.nn.functional as F


class Model(nn.Module):
    """Three-layer perceptron with GELU between the layers."""

    def __init__(self, in_features: int, hidden: int, out_features: int):
        super().__init__()
        self.fc1 = nn.Linear(in_features, hidden)
        self.fc2 = nn.Linear(hidden, hidden)
        self.fc3 = nn.Linear(hidden, out_features)

    def forward(self, x):
        h = F.gelu(self.fc1(x))
        h = F.gelu(self.fc2(h))
        return self.fc3(h)


batch_size = 64
in_features = 512
hidden = 2048
out_features = 256


def get_inputs():
    return [torch.randn(batch_size, in_features)]


def get_init_inputs():
    return [in_features, hidden, out_features]
'''


def _eval_tasks() -> list[Task]:
    softmax = (BUNDLED_TASKS / "softmax.py").read_text()
    softmax = softmax.replace('"""Softmax over', '# held out for evaluation\n"""Row softmax over')
    layer_norm = (BUNDLED_TASKS / "layer_norm.py").read_text()
    layer_norm = layer_norm[: layer_norm.index("KERNELVAULT")]
    for old, new in [
        ("self.norm", "self.ln"), ("dim: int", "features: int"), ("(dim)", "(features)"),
        ("dim = ", "features = "), ("batch = ", "rows = "), ("(batch, dim)", "(rows, features)"),
        ("[dim]", "[features]"), ("x: torch.Tensor", "inp: torch.Tensor"), ("(x)", "(inp)"),
    ]:  # fmt: skip
        assert old in layer_norm
        layer_norm = layer_norm.replace(old, new)
    return [
        parse_task(softmax, "eval/softmax", "folder:eval"),
        parse_task(layer_norm, "eval/layer_norm", "folder:eval"),
        parse_task(MLP, "eval/mlp_gelu", "folder:eval"),
    ]


def test_only_the_copied_bundled_tasks_are_contaminated() -> None:
    tasks = load_tasks(None).tasks
    by_name = {task.name: task for task in tasks}
    report = find_contaminated_tasks(tasks, _eval_tasks())

    found = {(c.task_name, c.eval_task, c.kind) for c in report.contaminated}
    # row_sum, row_max, cumsum share ~83% of softmax's shingles (one torch call differs): not reported.
    assert found == {("softmax", "eval/softmax", "exact"), ("layer_norm", "eval/layer_norm", "near")}
    assert report.task_ids() == {by_name["softmax"].task_id, by_name["layer_norm"].task_id}
    assert all(isinstance(c, Contamination) and 0.8 <= c.similarity <= 1.0 for c in report.contaminated)


def test_an_unrelated_program_is_far_from_every_bundled_task() -> None:
    tasks = load_tasks(None).tasks
    mlp = parse_task(MLP, "eval/mlp_gelu", "folder:eval")

    assert find_contaminated_tasks(tasks, [mlp], threshold=0.5).contaminated == ()
    assert find_contaminated_tasks(tasks, []).contaminated == ()

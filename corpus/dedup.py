"""Exact and near-duplicate detection of candidate kernels, and decontamination of a task suite.

Exact duplicates have equal canonical forms (`normalize_source`): the source is parsed with `ast`,
module/class/function docstrings are dropped and the tree is printed back with `ast.unparse`. That
erases comments, blank lines, indentation of continuation lines, redundant parentheses, quote style and
trailing commas. Code that does not parse gets a textual form instead (comments removed, whitespace runs
collapsed to one space), which still catches reformatting within a line and comment edits, but not
docstring edits or a call wrapped over two lines versus one.

Near duplicates have a high Jaccard similarity of their token 5-grams (`code_shingles`), estimated with
MinHash (`datasketch`). Local names (variables, parameters, functions, kernels, classes, attributes of
`self`) become placeholders numbered afresh in each statement, so consistent renaming changes nothing
and swapping two statements changes only the few shingles that straddle them. Keywords, operators,
literals, builtins, keyword-argument names and attribute names (`tl.load`, `torch.empty_like`) stay as
written, so kernels built from different operations stay apart. On the test set a renamed softmax
candidate scores 0.96 against the original, a reordered one 1.0, a ReLU kernel 0.42 and a loop-based
(online) softmax 0.33; a log-softmax made by editing three lines of the softmax scores 0.85-0.88.

What it does not catch: the same algorithm written differently (a loop instead of a block, `x += 1`
for `x = x + 1`, a helper inlined or split out), one kernel translated between Triton and HIP, or any
semantic equivalence. Inconsistent renaming (one name for two roles) is only partly forgiven. Short code
has few shingles, so one edited line moves its similarity a lot. MinHash is an estimate (standard error
about 0.03 at 128 permutations), and LSH can miss a pair right at the threshold: the banding is tuned
for recall (about 93% at the threshold, over 99% five points above), which is cheap because every LSH
candidate is confirmed with the estimated Jaccard before it is reported.

Duplicates are sought within one task only: the same kernel submitted for two tasks is not a
duplicate. Decontamination compares task references with an evaluation set, leaving the task file's
`KERNELVAULT` extras out because evaluation programs do not carry them; since KernelBench programs are
mostly boilerplate, a near match must also call mostly the same functions (see `find_contaminated_tasks`).
Throughput is about 2 ms per item on one core (parse, unparse, tokenize, MinHash); nothing is compared
across tasks, and within a task only LSH candidates are.
"""

from __future__ import annotations

import ast
import builtins
import functools
import hashlib
import io
import keyword
import re
import tokenize
from collections.abc import Callable, Iterable, Sequence
from dataclasses import dataclass
from typing import Literal

from datasketch import MinHash, MinHashLSH

from kernelvault.contracts import Task
from kernelvault.toolchain.tasks import EXTRAS_NAME

SHINGLE_SIZE = 5
# Missing a duplicate costs more than a spurious LSH candidate (every candidate is confirmed with the
# estimated Jaccard), so the banding weighs false negatives heavily: (false positive, false negative).
_LSH_WEIGHTS = (0.05, 0.95)
_KEPT_NAMES = frozenset(dir(builtins)) | frozenset(keyword.kwlist)
_STRUCTURE = {tokenize.NEWLINE: "<newline>", tokenize.INDENT: "<indent>", tokenize.DEDENT: "<dedent>"}
_SKIPPED = {tokenize.NL, tokenize.COMMENT, tokenize.ENCODING, tokenize.ENDMARKER}
_COMMENT_OR_STRING = re.compile(r"""("(?:\\.|[^"\\\n])*"|'(?:\\.|[^'\\\n])*')|#[^\n]*""")
_LEXEME = re.compile(r"""[A-Za-z_]\w*|\d[\w.]*|"(?:\\.|[^"\\])*"|'(?:\\.|[^'\\])*'|\S""")
_IDENTIFIER = re.compile(r"[A-Za-z_]\w*")


# ---------------------------------------------------------------------------------------------------
# Canonical form, hash, shingles, MinHash


def _drop_docstrings(node: ast.AST) -> None:
    # Statements only: docstrings cannot hide in expressions, and skipping those is most of the speed.
    body = getattr(node, "body", None)
    if isinstance(node, (ast.Module, ast.ClassDef, ast.FunctionDef, ast.AsyncFunctionDef)) and body:
        first = body[0]
        if isinstance(first, ast.Expr) and isinstance(first.value, ast.Constant):
            if isinstance(first.value.value, str):
                node.body = body[1:] or ([] if isinstance(node, ast.Module) else [ast.Pass()])
    for field in ("body", "orelse", "finalbody", "handlers", "cases"):
        for child in getattr(node, field, None) or ():
            if isinstance(child, (ast.stmt, ast.excepthandler, getattr(ast, "match_case", ast.stmt))):
                _drop_docstrings(child)


def _parse(code: str) -> ast.Module | None:
    try:
        return ast.parse(code)
    except (SyntaxError, ValueError, RecursionError):  # ValueError: NUL bytes; RecursionError: deep nesting
        return None


def _unparse(tree: ast.Module) -> str | None:
    _drop_docstrings(tree)
    try:
        return ast.unparse(tree)
    except (RecursionError, ValueError):
        return None


def _strip_comments(code: str) -> str:
    try:
        comments = [
            token.start
            for token in tokenize.generate_tokens(io.StringIO(code).readline)
            if token.type == tokenize.COMMENT
        ]
    except (tokenize.TokenError, SyntaxError):  # IndentationError is a SyntaxError
        return _COMMENT_OR_STRING.sub(lambda match: match.group(1) or "", code)
    lines = io.StringIO(code).readlines()  # the same line split as tokenize's
    for row, column in comments:
        lines[row - 1] = lines[row - 1][:column]
    return "".join(lines)


def normalize_source(code: str) -> str:
    """Canonical form of Python source: docstrings and comments dropped, formatting by `ast.unparse`.

    Unparsable code gets a textual form instead: comments removed and whitespace runs collapsed.
    """
    tree = _parse(code)
    if tree is not None:
        text = _unparse(tree)
        if text is not None:
            return text
    return " ".join(_strip_comments(code).split())


def _hash(normalized: str) -> str:
    return hashlib.sha256(normalized.encode("utf-8")).hexdigest()[:16]


def normalized_hash(code: str) -> str:
    """sha256 (16 hex digits) of `normalize_source(code)`: equal for exact duplicates."""
    return _hash(normalize_source(code))


def _lexemes(normalized: str) -> list[tuple[bool, str]]:
    """(is_name, text) for each token, with newline, indent and dedent as `<newline>`, `<indent>`, `<dedent>`."""
    try:
        tokens = list(tokenize.generate_tokens(io.StringIO(normalized).readline))
    except (tokenize.TokenError, SyntaxError):  # only text from the unparsable fallback gets here
        return [(bool(_IDENTIFIER.fullmatch(text)), text) for text in _LEXEME.findall(normalized)]
    lexemes = []
    for token in tokens:
        if token.type in _SKIPPED:
            continue
        text = _STRUCTURE.get(token.type, token.string)
        lexemes.append((token.type == tokenize.NAME, text))
    return lexemes


def _canonicalize(normalized: str) -> tuple[list[str], set[str]]:
    """The tokens with local names replaced, and the set of library functions and builtins called."""
    # Local names become v0, v1, ... by first appearance, numbered afresh in every statement. Against
    # one shared `ID` this keeps which operand is which (`x = x - m` vs `y = x - m`); against one
    # numbering for the whole file it survives reordered statements, since a swap renumbers only the
    # two statements swapped. On the test set (5-grams, softmax candidate): renamed 0.96, reordered
    # 1.0 and a ReLU kernel 0.42, a loop-based softmax 0.33; with `ID` those two score 0.50 and 0.48,
    # with file-wide numbering reordered drops to 0.77-0.80, below the default threshold.
    lexemes = _lexemes(normalized)
    placeholders: dict[str, str] = {}
    tokens: list[str] = []
    calls: set[str] = set()
    brackets: list[str] = []  # "call", "params" (a def's parameter list) or "other", innermost last
    for position, (is_name, text) in enumerate(lexemes):
        raw_before = lexemes[position - 2][1] if position >= 2 else ""
        after_dot = bool(tokens) and tokens[-1] == "."
        following = lexemes[position + 1][1] if position + 1 < len(lexemes) else ""
        # `mask=`, `other=`, `axis=` name the callee's parameters, not ours: they stay as written.
        keyword_argument = following == "=" and brackets[-1:] == ["call"]
        # An attribute of `self` is the class's own name (`self.norm`), not a library's: it is local.
        local = not after_dot or raw_before == "self"
        if is_name and local and not keyword_argument and text not in _KEPT_NAMES:
            text = placeholders.setdefault(text, f"v{len(placeholders)}")
        elif is_name and following == "(" and not keyword.iskeyword(text):
            calls.add(text)
        if text in ("(", "[", "{"):
            defining = len(tokens) >= 2 and tokens[-2] == "def"
            brackets.append("params" if defining else "call" if text == "(" else "other")
        elif text in (")", "]", "}") and brackets:
            brackets.pop()
        elif text == "<newline>":
            placeholders = {}
        tokens.append(text)
    return tokens, calls


def _shingles(normalized: str, size: int) -> set[str]:
    return _shingles_of(_canonicalize(normalized)[0], size)


def _shingles_of(tokens: list[str], size: int) -> set[str]:
    if len(tokens) <= size:
        return {" ".join(tokens)} if tokens else set()
    return {" ".join(tokens[start : start + size]) for start in range(len(tokens) - size + 1)}


def code_shingles(code: str, size: int = SHINGLE_SIZE) -> set[str]:
    """Token `size`-grams of the canonical form, with local identifiers replaced by numbered placeholders."""
    if size < 1:
        raise ValueError(f"shingle size must be at least 1, got {size}")
    return _shingles(normalize_source(code), size)


@functools.lru_cache(maxsize=8)
def _permutations(num_perm: int) -> MinHash:
    # Building a MinHash draws its permutations (~0.4 ms); sharing one set makes it ~50x cheaper.
    return MinHash(num_perm=num_perm)


def _minhash(shingles: Iterable[str], num_perm: int) -> MinHash:
    minhash = MinHash(num_perm=num_perm, permutations=_permutations(num_perm).permutations, scheme="affine32")
    minhash.update_batch([shingle.encode("utf-8") for shingle in shingles])
    return minhash


def minhash_of(code: str, num_perm: int = 128) -> MinHash:
    """MinHash of `code_shingles(code)`; compare two with `a.jaccard(b)`."""
    return _minhash(code_shingles(code), num_perm)


@functools.lru_cache(maxsize=32)
def _lsh_params(threshold: float, num_perm: int) -> tuple[int, int]:
    # datasketch finds (bands, rows) by numerical integration (~25 ms); once per setting is enough.
    lsh = MinHashLSH(threshold=threshold, num_perm=num_perm, weights=_LSH_WEIGHTS)
    return lsh.b, lsh.r


def _new_lsh(threshold: float, num_perm: int) -> MinHashLSH:
    if not 0.0 < threshold <= 1.0:
        raise ValueError(f"threshold must be in (0, 1], got {threshold}")
    return MinHashLSH(threshold=threshold, num_perm=num_perm, params=_lsh_params(threshold, num_perm))


def _best_match(
    lsh: MinHashLSH,
    minhash: MinHash,
    others: Sequence[MinHash],
    threshold: float,
    eligible: Callable[[int], bool] = lambda index: True,
) -> tuple[int, float] | None:
    """The indexed item most similar to `minhash` (earliest on ties), if any eligible one reaches `threshold`."""
    best: tuple[int, float] | None = None
    for index in sorted(lsh.query(minhash)):
        similarity = float(minhash.jaccard(others[index]))
        if similarity >= threshold and (best is None or similarity > best[1]) and eligible(index):
            best = (index, similarity)
    return best


# ---------------------------------------------------------------------------------------------------
# Duplicates among candidates


@dataclass(frozen=True)
class Duplicate:
    attempt_id: str
    duplicate_of: str  # always an attempt that the report keeps (the first of its group)
    kind: Literal["exact", "near"]
    similarity: float  # 1.0 for exact; the estimated Jaccard of the shingles for near


@dataclass(frozen=True)
class DedupReport:
    duplicates: tuple[Duplicate, ...]
    exact: int
    near: int
    unique: int  # attempts kept: those with code that duplicate nothing earlier in their task

    def duplicate_of(self) -> dict[str, Duplicate]:
        return {duplicate.attempt_id: duplicate for duplicate in self.duplicates}


@dataclass
class _TaskIndex:
    lsh: MinHashLSH
    kept_ids: list[str]
    kept_minhashes: list[MinHash]


def find_duplicates(
    items: Iterable[tuple[str, str, str]], threshold: float = 0.85, num_perm: int = 128
) -> DedupReport:
    """Mark later attempts at a task that repeat an earlier one, exactly or nearly.

    `items` are (attempt_id, task_id, code) in a stable order; the first attempt of each group is kept
    and later ones point to it. Attempts with no code (None, blank, or only comments) are ignored.
    Exact duplicates (equal `normalized_hash`) are found first; the rest are compared, through one
    MinHash LSH index per task, with the attempts kept so far in that task.
    """
    _new_lsh(threshold, num_perm)  # check the arguments before reading any item
    # (task_id, normalized hash) -> the first attempt with that form: its id if kept, else its Duplicate
    by_hash: dict[tuple[str, str], Duplicate | str] = {}
    indexes: dict[str, _TaskIndex] = {}
    duplicates: list[Duplicate] = []
    for attempt_id, task_id, code in items:
        if not code:
            continue
        normalized = normalize_source(code)
        if not normalized:
            continue
        key = (task_id, _hash(normalized))
        first = by_hash.get(key)
        if isinstance(first, str):
            duplicates.append(Duplicate(attempt_id, first, "exact", 1.0))
            continue
        if isinstance(first, Duplicate):  # same form as a near duplicate: near to what that one is near to
            duplicates.append(Duplicate(attempt_id, first.duplicate_of, "near", first.similarity))
            continue
        index = indexes.get(task_id)
        if index is None:
            index = indexes[task_id] = _TaskIndex(_new_lsh(threshold, num_perm), [], [])
        minhash = _minhash(_shingles(normalized, SHINGLE_SIZE), num_perm)
        match = _best_match(index.lsh, minhash, index.kept_minhashes, threshold)
        if match is not None:
            duplicate = Duplicate(attempt_id, index.kept_ids[match[0]], "near", match[1])
            duplicates.append(duplicate)
            by_hash[key] = duplicate
            continue
        by_hash[key] = attempt_id
        index.lsh.insert(len(index.kept_ids), minhash)
        index.kept_ids.append(attempt_id)
        index.kept_minhashes.append(minhash)
    return DedupReport(
        duplicates=tuple(duplicates),
        exact=sum(duplicate.kind == "exact" for duplicate in duplicates),
        near=sum(duplicate.kind == "near" for duplicate in duplicates),
        unique=sum(len(index.kept_ids) for index in indexes.values()),
    )


# ---------------------------------------------------------------------------------------------------
# Decontamination of a task suite against an evaluation set


@dataclass(frozen=True)
class Contamination:
    task_id: str
    task_name: str
    eval_task: str  # name of the evaluation task it matches (the most similar one)
    kind: Literal["exact", "near"]
    similarity: float


@dataclass(frozen=True)
class DecontaminationReport:
    contaminated: tuple[Contamination, ...]

    def task_ids(self) -> set[str]:
        return {contamination.task_id for contamination in self.contaminated}


def _reference_program(source: str) -> str:
    """Canonical form of a task's reference without its `KERNELVAULT` extras."""
    tree = _parse(source)
    if tree is None:
        return normalize_source(source)
    tree.body = [
        node
        for node in tree.body
        if not (
            (isinstance(node, ast.Assign) and any(_names(target, EXTRAS_NAME) for target in node.targets))
            or (isinstance(node, ast.AnnAssign) and _names(node.target, EXTRAS_NAME))
        )
    ]
    return _unparse(tree) or normalize_source(source)


def _names(target: ast.expr, name: str) -> bool:
    return isinstance(target, ast.Name) and target.id == name


def _set_similarity(first: set[str], second: set[str]) -> float:
    union = first | second
    return len(first & second) / len(union) if union else 1.0


def find_contaminated_tasks(
    tasks: Sequence[Task], eval_tasks: Sequence[Task], threshold: float = 0.8, num_perm: int = 128
) -> DecontaminationReport:
    """Tasks whose reference program is an exact or near copy of an evaluation task's reference.

    Exact: equal canonical forms (without `KERNELVAULT`). Near: estimated shingle Jaccard of at least
    `threshold`, *and* the two programs call mostly the same functions (Jaccard of the sets of library
    functions and builtins called, such as `softmax`, `LayerNorm`, `randn`, at least `threshold`).
    The second test is needed because KernelBench programs are mostly boilerplate: `torch.sum(x, dim=-1)`
    and `torch.softmax(x, dim=-1)` tasks share about 83% of their shingles, as much as a renamed copy.
    One entry per contaminated task, in the order of `tasks`, naming its closest evaluation task.
    """
    lsh = _new_lsh(threshold, num_perm)
    eval_by_hash: dict[str, str] = {}
    eval_names: list[str] = []
    eval_calls: list[set[str]] = []
    eval_minhashes: list[MinHash] = []
    for eval_task in eval_tasks:
        program = _reference_program(eval_task.source)
        if not program:
            continue
        eval_by_hash.setdefault(_hash(program), eval_task.name)
        tokens, calls = _canonicalize(program)
        minhash = _minhash(_shingles_of(tokens, SHINGLE_SIZE), num_perm)
        lsh.insert(len(eval_names), minhash)
        eval_names.append(eval_task.name)
        eval_calls.append(calls)
        eval_minhashes.append(minhash)

    contaminated = []
    for task in tasks:
        program = _reference_program(task.source)
        if not program:
            continue
        exact = eval_by_hash.get(_hash(program))
        if exact is not None:
            contaminated.append(Contamination(task.task_id, task.name, exact, "exact", 1.0))
            continue
        tokens, calls = _canonicalize(program)
        minhash = _minhash(_shingles_of(tokens, SHINGLE_SIZE), num_perm)
        match = _best_match(
            lsh,
            minhash,
            eval_minhashes,
            threshold,
            lambda i, calls=calls: _set_similarity(calls, eval_calls[i]) >= threshold,
        )
        if match is not None:
            contaminated.append(
                Contamination(task.task_id, task.name, eval_names[match[0]], "near", match[1])
            )
    return DecontaminationReport(tuple(contaminated))

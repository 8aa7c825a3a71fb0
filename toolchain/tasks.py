"""Task loaders: a folder of task files, a KernelBench-layout tree, or a Hugging Face dataset.

Task files are read, never executed, here: the structure and the optional `KERNELVAULT` extras are
taken from the syntax tree (`ast.literal_eval`), so a broken or hostile task file cannot affect the
pipeline's own process. References run only inside worker processes (see `kernelvault.toolchain.sandbox`).
A malformed task is reported with a one-line reason and skipped; the other tasks still load.
"""

from __future__ import annotations

import ast
import dataclasses
import importlib.resources
import re
import tempfile
from collections.abc import Iterable
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from kernelvault.contracts import BASELINES_NAME, TARGETS, Task, TaskCase, content_hash
from kernelvault.dataset_ref import parse_dataset_ref, pin
from kernelvault.toolchain.function_tasks import (
    PERFORMANCE_INPUTS_OVERRIDE,
    FunctionTaskError,
    function_layout,
    performance_program_problem,
    with_performance_program,
)
from kernelvault.toolchain.source_tree import parse as parse_source

BUNDLED_TASKS = Path(str(importlib.resources.files("kernelvault.tasks"))).resolve()  # package data
REQUIRED_NAMES = ("Model", "get_inputs", "get_init_inputs")
EXTRAS_NAME = "KERNELVAULT"
BASELINE_FILE = re.compile(
    r"^(?P<task>[A-Za-z0-9_]+)\.(?P<target>triton|hip)\.py$"
)  # a suite's baseline file
_EXTRAS_KEYS = {
    "category", "dtype", "atol", "rtol", "allow_tf32", "correctness_cases", "performance_cases",
    "source", "license",
}  # fmt: skip
_CODE_COLUMNS = ("code", "pytorch_code", "reference", "source", "program")
_LEVEL_DIR = re.compile(r"^level[_-]?\d+$")


class TaskFormatError(ValueError):
    """A task file that is not a valid KernelBench program (one-line message)."""


@dataclass
class LoadedTasks:
    tasks: list[Task] = field(default_factory=list)
    errors: list[tuple[str, str]] = field(default_factory=list)  # (where, one-line reason)
    notes: list[tuple[str, str]] = field(default_factory=list)  # (where, what was loaded with a caveat)


def module_assignments(tree: ast.Module) -> dict[str, ast.expr]:
    """Each name a module assigns at its top level (the last assignment wins) and the expression it is given."""
    names: dict[str, ast.expr] = {}
    for node in tree.body:
        if isinstance(node, ast.Assign):
            for target in node.targets:
                if isinstance(target, ast.Name):
                    names[target.id] = node.value
        elif isinstance(node, ast.AnnAssign) and isinstance(node.target, ast.Name) and node.value is not None:
            names[node.target.id] = node.value
    return names


def _cases(raw: Any, kind: str, settable: set[str]) -> tuple[TaskCase, ...]:
    if raw is None:
        return ()
    if not isinstance(raw, list) or not all(isinstance(case, dict) for case in raw):
        raise TaskFormatError(f"{EXTRAS_NAME}['{kind}_cases'] must be a list of dicts")
    cases = []
    for index, overrides in enumerate(raw):
        unknown = sorted(set(overrides) - settable)
        if unknown:
            raise TaskFormatError(
                f"{kind} case {index} overrides names the module does not define: {unknown}"
            )
        label = ",".join(f"{key}={value}" for key, value in overrides.items()) or "defaults"
        cases.append(TaskCase(name=f"{kind[0]}{index}:{label}", kind=kind, overrides=dict(overrides)))
    return tuple(cases)


def parse_task(source: str, name: str, origin: str) -> Task:
    """Build a `Task` from source text, or raise `TaskFormatError` with a one-line reason."""
    try:
        tree = parse_source(source)
    except SyntaxError as error:
        raise TaskFormatError(f"not valid Python: {error.msg} (line {error.lineno})") from None
    defined = {
        node.name
        for node in tree.body
        if isinstance(node, (ast.ClassDef, ast.FunctionDef, ast.AsyncFunctionDef))
    }
    module_globals = module_assignments(tree)
    missing = [required for required in REQUIRED_NAMES if required not in defined | set(module_globals)]
    baselines = _baselines(module_globals)
    if missing and len(missing) == len(REQUIRED_NAMES):
        return dataclasses.replace(_function_task(source, name, origin), baselines=baselines)
    if missing:
        raise TaskFormatError(
            f"missing {', '.join(missing)} (a KernelBench task defines Model, get_inputs, get_init_inputs)"
        )

    extras: dict[str, Any] = {}
    if EXTRAS_NAME in module_globals:
        extras = _literal(module_globals, EXTRAS_NAME, "a literal dict (numbers, strings, lists, dicts)")
        if not isinstance(extras, dict):
            raise TaskFormatError(f"{EXTRAS_NAME} must be a dict")
        unknown = sorted(set(extras) - _EXTRAS_KEYS)
        if unknown:
            raise TaskFormatError(f"unknown {EXTRAS_NAME} keys {unknown}; known: {sorted(_EXTRAS_KEYS)}")

    settable = set(module_globals) - {EXTRAS_NAME, BASELINES_NAME}
    correctness = _cases(extras.get("correctness_cases"), "correctness", settable)
    performance = _cases(extras.get("performance_cases"), "performance", settable)
    if not correctness:
        correctness = (TaskCase(name="c0:defaults", kind="correctness", overrides={}),)
    if not performance:
        performance = (TaskCase(name="p0:defaults", kind="performance", overrides={}),)
    for key in ("atol", "rtol"):
        if key in extras and not (isinstance(extras[key], (int, float)) and extras[key] >= 0):
            raise TaskFormatError(f"{EXTRAS_NAME}['{key}'] must be a non-negative number")
    return Task(
        task_id=content_hash(source),
        name=name,
        source=source,
        origin=origin,
        category=extras.get("category"),
        correctness_cases=correctness,
        performance_cases=performance,
        atol=extras.get("atol"),
        rtol=extras.get("rtol"),
        allow_tf32=bool(extras.get("allow_tf32", False)),
        dtype=extras.get("dtype"),
        provenance=extras.get("source"),
        license=extras.get("license"),
        baselines=baselines,
    )


def _literal(module_globals: dict[str, ast.expr], name: str, what: str) -> Any:
    """The value a module-level literal assigns to `name`, read without running anything (TaskFormatError)."""
    try:
        return ast.literal_eval(module_globals[name])
    except (ValueError, SyntaxError, TypeError):
        raise TaskFormatError(f"{name} must be {what}") from None


def _baselines(module_globals: dict[str, ast.expr]) -> dict[str, str]:
    """`KERNELVAULT_BASELINES = {"triton": "...", "hip": "..."}`: each a whole candidate file, as a literal
    (read, never run, here). Embedded, not named by path, so the task's id covers them and a task travels as
    one text (a folder, a Hub dataset's code column) with its baselines."""
    if BASELINES_NAME not in module_globals:
        return {}
    raw = _literal(module_globals, BASELINES_NAME, "a literal dict of target -> candidate source")
    if not isinstance(raw, dict) or not raw:
        raise TaskFormatError(f"{BASELINES_NAME} must be a non-empty dict of target -> candidate source")
    for target, code in raw.items():
        if target not in TARGETS:
            raise TaskFormatError(
                f"{BASELINES_NAME} names target {target!r}; targets are {', '.join(TARGETS)}"
            )
        if not isinstance(code, str) or not code.strip():
            raise TaskFormatError(
                f"{BASELINES_NAME}[{target!r}] must be the baseline's source, a non-empty string"
            )
    return dict(raw)


def _function_task(source: str, name: str, origin: str) -> Task:
    """A reference function and its test (`kernelvault.toolchain.function_tasks`): one correctness case, the test's
    calls; timed on the same calls (a suite with larger inputs names them as performance cases)."""
    try:
        layout = function_layout(source, name)
    except FunctionTaskError as error:
        raise TaskFormatError(
            f"neither a module task (Model, get_inputs, get_init_inputs) nor a function task: {error}"
        ) from None
    if layout.kernels:  # ROCmBench: the correctness tests' launches, and test_performance's where it has one
        correctness = [
            TaskCase(name="c0:test launches", kind="correctness", overrides={"tests": "correctness"})
        ]
        if any(test.startswith("test_performance") for test in layout.test_functions):
            # checked before they are timed, as a function task's performance inputs are (below)
            timed = {"tests": "performance"}
            correctness.append(
                TaskCase(name="c1:performance test launches", kind="correctness", overrides=timed)
            )
            performance = TaskCase(name="p0:performance test launches", kind="performance", overrides=timed)
        else:
            performance = TaskCase(
                name="p0:correctness test launches", kind="performance", overrides={"tests": "correctness"}
            )
    else:
        correctness = [TaskCase(name="c0:test calls", kind="correctness", overrides={})]
        performance = TaskCase(name="p0:test calls", kind="performance", overrides={})
        if layout.performance:  # checked on the performance inputs before they are timed (function_tasks)
            larger = {PERFORMANCE_INPUTS_OVERRIDE: "performance"}
            correctness.append(TaskCase(name="c1:performance inputs", kind="correctness", overrides=larger))
            performance = TaskCase(name="p0:performance inputs", kind="performance", overrides=larger)
    return Task(
        task_id=content_hash(source),
        name=name,
        source=source,
        origin=origin,
        correctness_cases=tuple(correctness),
        performance_cases=(performance,),
        entry=layout.entry,
        kernel_entry=layout.kernels,
    )


def _with_tritonbench_performance(path: Path, source: str, name: str, notes: list[tuple[str, str]]) -> str:
    """`source` with TritonBench's perf_T program embedded, where the task file sits in a checkout that has
    one (`<checkout>/data/TritonBench_T_v1/x.py` has `<checkout>/performance_metrics/perf_T/golden_metrics/
    x_perf.py`); a program whose text cannot run is left out with a note (TritonBench's own scripts have
    bugs: the task keeps its test's calls for timing)."""
    checkout = path.resolve().parent.parent.parent
    relative = f"performance_metrics/perf_T/golden_metrics/{path.stem}_perf.py"
    program = checkout / relative
    if not program.is_file():
        return source
    text = program.read_text(encoding="utf-8")
    problem = performance_program_problem(text)
    if problem:
        notes.append((name, f"{relative} not used ({problem}); timed on the test's calls"))
        return source
    return with_performance_program(source, text, relative)


def load_task_file(path: Path, name: str | None = None, origin: str | None = None) -> Task:
    try:
        source = path.read_text(encoding="utf-8")
    except (OSError, UnicodeDecodeError) as error:
        raise TaskFormatError(f"cannot read {path}: {error}") from None
    return parse_task(source, name or path.stem, origin or f"file:{path}")


def _collect(items: Iterable[tuple[str, str, str]]) -> LoadedTasks:
    """items: (name, origin, source); parse each and keep errors beside the tasks."""
    loaded = LoadedTasks()
    seen: set[str] = set()
    for name, origin, source in items:
        try:
            task = parse_task(source, name, origin)
        except TaskFormatError as error:
            loaded.errors.append((name, str(error)))
            continue
        if task.task_id in seen:  # identical programs under two names are one task
            continue
        seen.add(task.task_id)
        loaded.tasks.append(task)
    return loaded


def _read_files(
    paths: Iterable[Path], root: Path, origin: str, notes: list[tuple[str, str]]
) -> Iterable[tuple[str, str, str]]:
    for path in paths:
        name = path.relative_to(root).with_suffix("").as_posix()
        try:
            yield (
                name,
                origin,
                _with_tritonbench_performance(path, path.read_text(encoding="utf-8"), name, notes),
            )
        except (OSError, UnicodeDecodeError) as error:
            yield name, origin, f"# unreadable: {error}\n"


def load_folder(folder: Path) -> LoadedTasks:
    """A flat folder of task files, or a KernelBench tree whose level folders hold them."""
    level_dirs = sorted(
        (d for d in folder.iterdir() if d.is_dir() and _LEVEL_DIR.match(d.name)),
        key=lambda d: int("".join(ch for ch in d.name if ch.isdigit())),  # level2 before level10
    )
    if level_dirs:
        files = [path for level in level_dirs for path in sorted(level.glob("*.py"), key=_kernelbench_order)]
        origin = f"kernelbench:{folder}"
    else:
        candidates = sorted(path for path in folder.glob("*.py") if not path.name.startswith("_"))
        baselines = [path for path in candidates if BASELINE_FILE.match(path.name)]
        files = [path for path in candidates if not BASELINE_FILE.match(path.name)]
        origin = "bundled" if folder.resolve() == BUNDLED_TASKS else f"folder:{folder}"
        if folder.resolve().parent == BUNDLED_TASKS:
            origin = f"bundled:{folder.name}"
        if baselines:
            return _optimisation_folder(folder, files, baselines, origin)
    notes: list[tuple[str, str]] = []
    loaded = _collect(_read_files(files, folder, origin, notes))  # reading the files fills the notes
    loaded.notes = notes
    return loaded


def _optimisation_folder(folder: Path, files: list[Path], baselines: list[Path], origin: str) -> LoadedTasks:
    """A folder of baseline files, `REFERENCE__VARIANT.TARGET.py` (the bundled `tasks/optimise/`): each
    REFERENCE__VARIANT is an optimisation task, the reference `REFERENCE.py` (in the folder, else beside it)
    with the variant's baselines embedded (`KERNELVAULT_BASELINES`). The baselines stay plain candidate files
    (readable, linted, runnable alone), and no reference is copied."""
    groups: dict[str, dict[str, str]] = {}
    loaded = LoadedTasks()
    for path in baselines:
        match = BASELINE_FILE.match(path.name)
        assert match is not None
        try:
            code = path.read_text(encoding="utf-8")
        except (OSError, UnicodeDecodeError) as error:
            loaded.errors.append((path.name, f"cannot read: {error}"))
            continue
        groups.setdefault(match["task"], {})[match["target"]] = code
    items = []
    for task_name, codes in sorted(groups.items()):
        reference_name = task_name.split("__", 1)[0]
        reference = next((f for f in (folder / f"{reference_name}.py", folder.parent / f"{reference_name}.py")
                          if f.is_file()), None)  # fmt: skip
        if reference is None or "__" not in task_name:
            loaded.errors.append((task_name, f"no reference {reference_name}.py in {folder} or beside it "
                                             "(baseline files are named REFERENCE__VARIANT.TARGET.py)"))  # fmt: skip
            continue
        embedded = (
            "{\n" + "".join(f"    {target!r}: {code!r},\n" for target, code in sorted(codes.items())) + "}"
        )
        source = reference.read_text(encoding="utf-8").rstrip("\n") + f"\n\n\n{BASELINES_NAME} = {embedded}\n"
        items.append((task_name, origin, source))
    composed = _collect(items)
    composed.errors = loaded.errors + composed.errors
    plain = _collect(_read_files(files, folder, origin, composed.notes)) if files else LoadedTasks()
    composed.tasks += plain.tasks
    composed.errors += plain.errors
    return composed


def _kernelbench_order(path: Path) -> tuple[int, str]:
    number = path.name.split("_", 1)[0]
    return (int(number) if number.isdigit() else 1 << 30, path.name)


# The columns of KernelVault's own attempt rows (a corpus, or a release's triton/hip configs): their `code` is a
# candidate's kernel and `task_source` the task it answered, so reading `code` as task programs is a mistake.
_ATTEMPT_COLUMNS = frozenset({"attempt_id", "task_source", "code"})


class KernelDatasetError(TaskFormatError):
    """A dataset of KernelVault attempt rows named where task programs were expected. Its tasks are in the
    `task_source` column (`hub:ORG/NAME@vX#task_source` loads them)."""


def _refuse_kernel_dataset(where: str, columns: Iterable[str], found: str = "KernelVault attempt rows",
                           hint: str = "") -> None:  # fmt: skip
    if _ATTEMPT_COLUMNS <= set(columns):
        raise KernelDatasetError(
            f"{where} is a kernel dataset ({found}), not a task suite (a reference program per row){hint}"
        )


def _kernel_dataset_folder(folder: Path) -> None:
    """Refuse a KernelVault corpus (`data/<config>/`), release or hub checkout (`<config>/`) folder: its
    Parquet files sit one or two levels down, where the task loaders would find no task file and say only
    that nothing loaded. One shard's schema per subfolder is read."""
    import pyarrow.parquet as pq

    for sub in sorted({*folder.glob("data/*/"), *folder.glob("*/")}):
        shard = next(iter(sorted(sub.glob("*.parquet"))), None)
        if shard is None:
            continue
        try:
            columns = pq.read_schema(shard).names
        except (OSError, ValueError):  # not Parquet after all: the task loaders say what they find
            continue
        _refuse_kernel_dataset(
            str(folder), columns, f"KernelVault attempt rows in {sub.relative_to(folder)}/"
        )


def load_hub_dataset(repo: str, split: str | None = None, column: str | None = None,
                     revision: str | None = None, origin: str | None = None) -> LoadedTasks:  # fmt: skip
    """A Hugging Face dataset (Hub repo id or local dataset folder) with one task program per row. A row
    whose code cell is empty or not text is an invalid task (named, skipped); a dataset of KernelVault
    attempt rows, a split or column it lacks, or one `datasets` cannot load is a one-line TaskFormatError."""
    try:
        import datasets
    except ImportError:  # pragma: no cover - datasets is a core dependency
        raise TaskFormatError("loading tasks from a dataset needs the 'datasets' package") from None
    where = origin or repo
    # A local folder is read with a throwaway cache, in memory: `datasets` keys a local folder's cache on its
    # base name, and a local hub checkout is named after its repo and tag, so the same version in another
    # hub folder (or one published again) would be served from the first one's cache.
    local = Path(repo).is_dir()
    try:
        with tempfile.TemporaryDirectory(prefix="kv-tasks-cache-") as cache:
            dataset = datasets.load_dataset(repo, split=split, revision=revision, cache_dir=cache if local else None,
                                            keep_in_memory=local)  # fmt: skip
    except (ValueError, FileNotFoundError, datasets.exceptions.DatasetsError) as error:
        # an unknown split, a dataset with several configs and no default, files it cannot read
        first_line = str(error).strip().splitlines()[0] if str(error).strip() else type(error).__name__
        raise TaskFormatError(f"cannot load tasks from {where}: {first_line}") from None
    if isinstance(dataset, datasets.DatasetDict):
        splits = list(dataset.values())
    else:
        splits = [dataset]
    items = []
    loaded = LoadedTasks()
    for part in splits:
        # A column named explicitly is the user's choice (`#task_source` of a kernel dataset).
        if column is None:
            hint = f"; its tasks load as {origin}#task_source" if origin and origin.startswith("hub:") else ""
            _refuse_kernel_dataset(where, part.column_names, hint=hint)
        code_column = column or next((c for c in _CODE_COLUMNS if c in part.column_names), None)
        if code_column is None:
            raise TaskFormatError(
                f"no code column in {where}: columns are {part.column_names}; name one with #COLUMN"
            )
        if code_column not in part.column_names:
            raise TaskFormatError(f"no column {code_column!r} in {where}: columns are {part.column_names}")
        for index, row in enumerate(part):
            name = str(row.get("name") or row.get("task_name") or f"row{index}")
            level = row.get("level")
            if level is not None:
                name = f"level{level}/{name}"
            code = row[code_column]
            if not isinstance(code, str) or not code.strip():
                loaded.errors.append(
                    (name, f"row {index}: no program in column {code_column!r} ({code!r:.40})")
                )
                continue
            items.append((name, origin or f"hub:{repo}", code))
    collected = _collect(items)
    collected.errors[:0] = loaded.errors
    return collected


def load_hub_tasks(spec: str) -> LoadedTasks:
    """`hub:ORG/NAME[@REVISION][:SPLIT][#COLUMN]`: a dataset of task programs named as every command names a
    dataset (`kernelvault.dataset_ref`): on the hub `KV_HUB` picks (the local hub by default, read from
    the checkout of the version; the Hugging Face Hub with `KV_HUB=hf`), at `@REVISION` or the latest version
    tag; `:SPLIT` and `#COLUMN` pick the rows and the code column."""
    name, _, column = spec.removeprefix("hub:").partition("#")
    name, _, split = name.partition(":")
    try:
        ref = pin(parse_dataset_ref(f"hub:{name}", bare_repo=False))
    except ValueError as error:
        raise TaskFormatError(f"task suite {spec}: {error}") from None
    assert ref.repo is not None
    origin = f"hub:{ref.repo}@{ref.revision}" if ref.revision else f"hub:{ref.repo}"
    if ref.folder is not None:  # the local hub: `datasets` ignores a revision for a folder, so its checkout
        return load_hub_dataset(str(ref.folder), split or None, column or None, origin=origin)
    return load_hub_dataset(ref.repo, split or None, column or None, ref.revision, origin)


def load_tasks(spec: str | Path | None = None) -> LoadedTasks:
    """Load tasks from `spec`: None (bundled), `bundled:NAME` (a bundled suite: `bundled:optimise`), a file, a
    folder or KernelBench tree, or a dataset of task programs `hub:ORG/NAME[@REVISION][:SPLIT][#COLUMN]`
    (`load_hub_tasks`)."""
    if spec is None:
        return load_folder(BUNDLED_TASKS)
    text = str(spec)
    if text.startswith("bundled:"):  # a bundled suite beside the default one: `bundled:optimise`
        name = text.removeprefix("bundled:")
        suite = BUNDLED_TASKS / name
        if not name.isidentifier() or not suite.is_dir():
            known = sorted(
                d.name for d in BUNDLED_TASKS.iterdir() if d.is_dir() and not d.name.startswith("_")
            )
            raise TaskFormatError(f"no bundled suite {text}; bundled suites: {', '.join(known) or 'none'}")
        return load_folder(suite)
    if text.startswith("hub:"):
        return load_hub_tasks(text)
    path = Path(text)
    if path.is_file():
        try:
            return LoadedTasks(tasks=[load_task_file(path)])
        except TaskFormatError as error:
            return LoadedTasks(errors=[(path.stem, str(error))])
    if path.is_dir():
        has_dataset_files = any(path.glob("*.parquet")) or any(path.glob("**/dataset_info.json"))
        if has_dataset_files:
            return load_hub_dataset(str(path))
        _kernel_dataset_folder(path)
        return load_folder(path)
    raise TaskFormatError(f"no task file, folder or dataset at {text}")

"""Task loaders: bundled suite, task files, folders, KernelBench trees and Hugging Face datasets."""

from __future__ import annotations

import textwrap
from pathlib import Path

import pytest

from kernelvault.contracts import content_hash
from kernelvault.toolchain.tasks import (
    LoadedTasks,
    TaskFormatError,
    load_folder,
    load_hub_dataset,
    load_tasks,
    parse_task,
)

CATEGORIES = {
    "elementwise", "activation", "reduction", "softmax", "normalization", "matmul", "convolution",
    "pooling", "attention", "loss", "scan", "fused",
}  # fmt: skip

PLAIN = textwrap.dedent(
    """
    import torch
    import torch.nn as nn


    class Model(nn.Module):
        def forward(self, x):
            return torch.relu(x)


    batch = 16
    dim = 1024


    def get_inputs():
        return [torch.randn(batch, dim)]


    def get_init_inputs():
        return []
    """
)


def with_extras(extras: str, source: str = PLAIN) -> str:
    return source + "\n\nKERNELVAULT = " + extras + "\n"


def plain_task(marker: str) -> str:
    """A distinct valid task source (distinct content, hence distinct task id)."""
    return PLAIN.replace("torch.relu(x)", f"torch.relu(x)  # {marker}")


@pytest.fixture(scope="module")
def bundled() -> LoadedTasks:
    return load_tasks(None)


@pytest.fixture
def hf_cache(tmp_path, monkeypatch):
    """Keep the datasets cache inside the test's temporary folder."""
    import datasets

    cache = tmp_path / "hf-cache"
    monkeypatch.setattr(datasets.config, "HF_DATASETS_CACHE", cache)
    return cache


# --- the bundled suite -------------------------------------------------------------------------


def test_bundled_suite_loads_without_errors(bundled):
    assert bundled.errors == []
    assert len(bundled.tasks) >= 40
    assert all(task.origin == "bundled" for task in bundled.tasks)


def test_bundled_suite_covers_all_categories(bundled):
    categories = {task.category for task in bundled.tasks}
    assert CATEGORIES <= categories
    assert categories <= CATEGORIES, f"unknown categories: {categories - CATEGORIES}"


def test_every_bundled_task_has_several_correctness_shapes_and_a_performance_case(bundled):
    for task in bundled.tasks:
        assert len(task.correctness_cases) >= 2, task.name
        distinct = {tuple(sorted(case.overrides.items())) for case in task.correctness_cases}
        assert len(distinct) >= 2, task.name
        assert len(task.performance_cases) >= 1, task.name
        assert all(case.kind == "correctness" for case in task.correctness_cases), task.name
        assert all(case.kind == "performance" for case in task.performance_cases), task.name


def test_bundled_task_ids_are_content_hashes_and_unique(bundled):
    for task in bundled.tasks:
        assert task.task_id == content_hash(task.source)
    assert len({task.task_id for task in bundled.tasks}) == len(bundled.tasks)


# --- parse_task -----------------------------------------------------------------------------------


def test_plain_kernelbench_file_gets_a_single_defaults_case():
    task = parse_task(PLAIN, "relu", "test")
    assert len(task.correctness_cases) == 1
    assert "defaults" in task.correctness_cases[0].name
    assert task.correctness_cases[0].overrides == {}
    assert task.category is None
    assert task.task_id == content_hash(PLAIN)


def test_extras_are_read():
    source = with_extras(
        '{"category": "activation", "atol": 1e-5, "rtol": 0, "allow_tf32": True, "dtype": "float32",'
        ' "correctness_cases": [{"batch": 1, "dim": 17}, {"batch": 3, "dim": 1000}],'
        ' "performance_cases": [{"batch": 4096, "dim": 8192}], "source": "test", "license": "MIT"}'
    )
    task = parse_task(source, "relu", "test")
    assert task.category == "activation"
    assert (task.atol, task.rtol, task.allow_tf32) == (1e-5, 0, True)
    assert [case.overrides for case in task.correctness_cases] == [
        {"batch": 1, "dim": 17},
        {"batch": 3, "dim": 1000},
    ]
    assert [case.overrides for case in task.performance_cases] == [{"batch": 4096, "dim": 8192}]
    assert len({case.name for case in task.correctness_cases}) == 2
    assert (task.provenance, task.license) == ("test", "MIT")


@pytest.mark.parametrize(
    ("source", "needle"),
    [
        (PLAIN.replace("def get_inputs", "def make_inputs"), "get_inputs"),
        (PLAIN.replace("def forward(self, x):", "def forward(self, x)"), "line"),
        (with_extras("dict(category='activation')"), "literal"),
        (
            with_extras('{"category": "activation", "atol": tolerance}', PLAIN + "\ntolerance = 1e-3\n"),
            "literal",
        ),
        (with_extras('{"category": "activation", "colour": "red"}'), "colour"),
        (with_extras('{"correctness_cases": [{"batch": 2, "width": 3}]}'), "width"),
        (with_extras('{"atol": -1e-3}'), "atol"),
    ],
    ids=[
        "missing-get_inputs",
        "syntax",
        "call",
        "variable",
        "unknown-key",
        "unknown-override",
        "negative-atol",
    ],
)
def test_malformed_tasks_raise_a_one_line_error(source, needle):
    with pytest.raises(TaskFormatError) as info:
        parse_task(source, "bad", "test")
    message = str(info.value)
    assert "\n" not in message
    assert needle in message


# --- folders and KernelBench trees ------------------------------------------------------------


def test_folder_with_one_good_and_one_malformed_file(tmp_path):
    (tmp_path / "good.py").write_text(PLAIN)
    (tmp_path / "broken.py").write_text("import torch\n\nclass Model:\n    pass\n")
    loaded = load_folder(tmp_path)
    assert [task.name for task in loaded.tasks] == ["good"]
    assert len(loaded.errors) == 1
    where, reason = loaded.errors[0]
    assert "broken" in where
    assert reason


def test_same_source_under_two_names_is_one_task(tmp_path):
    (tmp_path / "a.py").write_text(PLAIN)
    (tmp_path / "b.py").write_text(PLAIN)
    (tmp_path / "c.py").write_text(plain_task("other"))
    loaded = load_tasks(str(tmp_path))
    assert loaded.errors == []
    assert len(loaded.tasks) == 2
    assert loaded.tasks[0].task_id == content_hash(PLAIN)
    assert loaded.tasks[1].task_id != loaded.tasks[0].task_id


def test_kernelbench_tree_in_numeric_order(tmp_path):
    files = {
        "level1/1_Foo.py": "foo",
        "level1/10_Bar.py": "bar",
        "level1/2_Baz.py": "baz",
        "level2/1_Qux.py": "qux",
    }
    for relative, marker in files.items():
        path = tmp_path / relative
        path.parent.mkdir(exist_ok=True)
        path.write_text(plain_task(marker))
    loaded = load_tasks(str(tmp_path))
    assert loaded.errors == []
    assert [task.name for task in loaded.tasks] == [
        "level1/1_Foo",
        "level1/2_Baz",
        "level1/10_Bar",
        "level2/1_Qux",
    ]
    assert all(task.origin.startswith("kernelbench:") for task in loaded.tasks)


def test_single_task_file(tmp_path):
    path = tmp_path / "relu.py"
    path.write_text(PLAIN)
    loaded = load_tasks(path)
    assert [task.name for task in loaded.tasks] == ["relu"]


def test_missing_path_raises(tmp_path):
    with pytest.raises(TaskFormatError):
        load_tasks(str(tmp_path / "no-such-folder"))


# --- Hugging Face datasets --------------------------------------------------------------------


def _write_parquet_dataset(folder: Path, columns: dict[str, list]) -> Path:
    import datasets

    folder.mkdir(parents=True, exist_ok=True)
    datasets.Dataset.from_dict(columns).to_parquet(str(folder / "train.parquet"))
    return folder


def test_parquet_dataset_folder_is_loaded_with_names(tmp_path, hf_cache):
    folder = _write_parquet_dataset(
        tmp_path / "ds", {"name": ["relu_a", "relu_b"], "code": [plain_task("a"), plain_task("b")]}
    )
    loaded = load_tasks(str(folder))
    assert loaded.errors == []
    assert sorted(task.name for task in loaded.tasks) == ["relu_a", "relu_b"]
    assert {task.task_id for task in loaded.tasks} == {
        content_hash(plain_task("a")),
        content_hash(plain_task("b")),
    }


def test_hub_dataset_with_named_column_and_bad_rows(tmp_path, hf_cache):
    folder = _write_parquet_dataset(
        tmp_path / "ds",
        {"name": ["good", "bad"], "program_text": [plain_task("good"), "print('no task here')\n"]},
    )
    loaded = load_hub_dataset(str(folder), column="program_text")
    assert [task.name for task in loaded.tasks] == ["good"]
    assert [where for where, _ in loaded.errors] == ["bad"]
    assert loaded.tasks[0].origin.startswith("hub:")


def test_dataset_without_code_column_names_the_columns(tmp_path, hf_cache):
    folder = _write_parquet_dataset(tmp_path / "ds", {"title": ["x"], "body": [PLAIN]})
    with pytest.raises(TaskFormatError) as info:
        load_hub_dataset(str(folder))
    assert "title" in str(info.value)
    assert "body" in str(info.value)


def test_a_row_without_a_program_is_an_invalid_task_and_a_missing_split_or_column_is_one_line(
    tmp_path, hf_cache
):
    folder = _write_parquet_dataset(
        tmp_path / "ds", {"name": ["empty", "good"], "code": [None, plain_task("g")]}
    )
    loaded = load_tasks(str(folder))
    assert [task.name for task in loaded.tasks] == ["good"]
    assert loaded.errors == [("empty", "row 0: no program in column 'code' (None)")]
    with pytest.raises(TaskFormatError, match=r"^no column 'nope' in .*: columns are \['name', 'code'\]$"):
        load_hub_dataset(str(folder), column="nope")
    with pytest.raises(TaskFormatError, match=r'^cannot load tasks from .*: Unknown split "test"'):
        load_hub_dataset(str(folder), split="test")


def test_a_task_dataset_on_the_hub_is_named_like_every_dataset_and_loads_by_version(
    tmp_path, hf_cache, monkeypatch
):
    """`hub:ORG/NAME@vX.Y.Z` names a version of a dataset of task programs as it names a corpus version in
    sft, rl and publish: on the local hub by default, each version its own rows; without @ the latest."""
    from kernelvault.hub import LocalHub

    hub = LocalHub(tmp_path / "hub")
    monkeypatch.setenv("KV_HUB_DIR", str(hub.root))
    monkeypatch.delenv("KV_HUB", raising=False)
    for version, names in (("0.1.0", ["relu_a"]), ("0.2.0", ["relu_a", "relu_b"])):
        release = _write_parquet_dataset(
            tmp_path / f"release-{version}" / "data",
            {"name": names, "program_text": [plain_task(name) for name in names]},
        ).parent
        hub.publish(release, "acme/tasks", version)

    first = load_tasks("hub:acme/tasks@v0.1.0#program_text")
    assert [task.name for task in first.tasks] == ["relu_a"]
    assert first.tasks[0].origin == "hub:acme/tasks@v0.1.0"
    latest = load_tasks("hub:acme/tasks:train#program_text")
    assert sorted(task.name for task in latest.tasks) == ["relu_a", "relu_b"]
    assert latest.tasks[0].origin == "hub:acme/tasks@v0.2.0"
    with pytest.raises(TaskFormatError, match="v9.9.9"):
        load_tasks("hub:acme/tasks@v9.9.9")
    with pytest.raises(TaskFormatError, match="no dataset acme/other in the local hub"):
        load_tasks("hub:acme/other")

"""The `rl` config of a dataset version, as `kernelvault rl` and `kernelvault.rl.verifiers.execution_reward` read it.

    a release folder (RELEASE/rl/) ──────────────────────┐
    hub:ORG/NAME@vX.Y.Z (local hub checkout, or the Hub) ─┴─► DatasetDict {train, validation}

The version is named as in every other command (`kernelvault.dataset_ref`). The validation split holds the
prompts of the tasks the release held out (`kernelvault.corpus.split`); a folder of plain parquet files with
the `rl` columns is read whole as train.
"""

from __future__ import annotations

from typing import Any

from kernelvault.dataset_ref import parse_dataset_ref, pin

# What GRPOTrainer and the reward need (task_name and target are read where present).
RL_COLUMNS = ("prompt", "task_source")
SPLITS = ("train", "validation", "test")


def load_rl_dataset(dataset: str, revision: str | None = None, config: str = "rl") -> Any:
    """The splits (a `datasets.DatasetDict`) of a version's `rl` config; a one-line ValueError when `dataset`
    names nothing with the `rl` columns."""
    import datasets

    ref = pin(parse_dataset_ref(str(dataset), revision, bare_repo=False))
    if ref.folder is None:
        loaded = datasets.load_dataset(ref.repo, config, revision=ref.revision)
    else:
        folder = ref.folder / config if (ref.folder / config).is_dir() else ref.folder
        files = {split: sorted(str(p) for p in folder.glob(f"{split}-*.parquet")) for split in SPLITS}
        files = {split: paths for split, paths in files.items() if paths}
        if "train" not in files:
            files = {"train": sorted(str(path) for path in folder.glob("*.parquet"))}
        if not files["train"]:
            raise ValueError(f"no parquet files in {folder} (expected a release folder with {config}/)")
        loaded = datasets.load_dataset("parquet", data_files=files)
    missing = set(RL_COLUMNS) - set(loaded["train"].column_names)
    if missing:
        raise ValueError(f"{dataset} lacks the columns {sorted(missing)} of the rl config")
    return loaded

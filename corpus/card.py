"""The dataset card (README.md at the root of a release): YAML metadata for the Hub, then the prose.

The metadata lists one config per subfolder of the release that holds `train-*.parquet` shards, with every
split the folder holds, so that `datasets.load_dataset(folder_or_repo_id, config)` finds the files of that
config and nothing else (plots and the card itself are never read as data). The body says what the dataset
is, how to load it, which schema it uses, its statistics and plots, and the platforms the results come from.

`write_release_card` is the one card writer: `kernelvault release` (a folder, not yet a version) and
`kernelvault publish` (a tagged version of a repo) both call it.

The card reports only what the rows record: statistics come from `kernelvault.corpus.stats`, which counts a row as
correct only when correctness was established and takes speedups only from measured timings.
"""

from __future__ import annotations

from collections import Counter
from collections.abc import Sequence
from pathlib import Path

import pyarrow.parquet as pq
from huggingface_hub import DatasetCard, DatasetCardData

from kernelvault.corpus.qa_release import load_qa_release, qa_card_lines
from kernelvault.corpus.schema import ATTEMPT_CONFIGS, ATTEMPT_SCHEMA, SCHEMA_VERSION
from kernelvault.corpus.stats import (
    ConfigStats,
    compute_stats,
    format_table,
    load_attempts,
    per_model_stats,
    write_plots,
)

KNOWN_CONFIGS: dict[str, str] = {
    "triton": "verified attempts at Triton kernels, one row per attempt (schema below)",
    "hip": "verified attempts at HIP kernels, one row per attempt (schema below)",
    "triton2triton": "kernel-to-kernel: verified attempts to make a slow Triton baseline faster, one row per attempt "
    "(schema below; the speed reward is over the baseline)",
    "hip2hip": "kernel-to-kernel: verified attempts to make a slow HIP baseline faster, one row per attempt (schema "
    "below; the speed reward is over the baseline)",
    "sft": "chat-format supervised fine-tuning examples built from verified trajectories",
    "rl": "prompts and reference data for reinforcement learning with the execution reward",
    "rl_verl": "the `rl` prompts in verl's RLHFDataset layout (prompt, data_source, ability, reward_model, "
    "extra_info)",
    "qa": "question-answer entries about the ROCm libraries, each with what was checked: API existence against the "
    "installed headers, compile, link, run (QA schema: the statistics below say what a row proves)",
}
TAGS = ["code", "gpu-kernels", "triton", "hip"]
LANGUAGES = ["en"]  # prompts, feedback and explanations; the kernels themselves are code (the `code` tag)
# The Hub's size buckets (`size_categories`), by the number of rows of the whole release.
SIZE_CATEGORIES = [(1_000, "n<1K"), (10_000, "1K<n<10K"), (100_000, "10K<n<100K"), (1_000_000, "100K<n<1M"),
                   (10_000_000, "1M<n<10M"), (100_000_000, "10M<n<100M")]  # fmt: skip


def size_category(rows: int) -> str:
    """The Hub's `size_categories` bucket for a dataset of `rows` rows."""
    return next((name for limit, name in SIZE_CATEGORIES if rows < limit), "n>100M")


PLATFORM_MEANING: dict[str, str] = {
    "rocm": "AMD Instinct GPU with a ROCm build of PyTorch: compiled for the device, checked and timed",
    "cuda": "NVIDIA GPU with a CUDA build of PyTorch: compiled, checked and timed on the device "
    "(HIP sources through a HIP-to-CUDA portability header)",
    "cpu": "no GPU: Triton kernels checked with the Triton interpreter and cross-compiled for AMD CDNA; "
    "HIP kernels compiled only; no timing, so no speedup",
}


def release_configs(release_dir: Path) -> list[str]:
    """Subfolders of a release holding train-*.parquet shards: known configs first, then the others by name."""
    found = {
        path.name
        for path in Path(release_dir).iterdir()
        if path.is_dir() and not path.name.startswith(".") and any(path.glob("train-*.parquet"))
    }
    return [name for name in KNOWN_CONFIGS if name in found] + sorted(found - set(KNOWN_CONFIGS))


SPLITS = ("train", "validation", "test")


def _splits(folder: Path) -> list[str]:
    """The splits a config folder holds ({split}-*.parquet), train first."""
    return [split for split in SPLITS if any(folder.glob(f"{split}-*.parquet"))]


def _rows(folder: Path) -> int:
    return sum(
        pq.ParquetFile(path).metadata.num_rows
        for split in SPLITS
        for path in folder.glob(f"{split}-*.parquet")
    )


def _relative(plot: Path, release_dir: Path) -> str:
    try:
        return Path(plot).resolve().relative_to(Path(release_dir).resolve()).as_posix()
    except ValueError:
        raise ValueError(
            f"plot {plot} is outside the release folder {release_dir}: write plots inside it (e.g. plots/)"
        ) from None


def _loading_lines(
    configs: Sequence[str], repo_id: str | None, tag: str | None, folder_name: str, sft_test: bool
) -> list[str]:
    """How to load each config: a repo's version by its tag, or (a release not yet published) this folder."""
    held_out = [
        "",
        "The `sft` config's `test` split holds every row of the tasks held out of training (whole tasks, chosen by "
        "a hash of the task id); the `rl` and `rl_verl` configs' `validation` split holds the same tasks' prompts.",
    ] if sft_test else []  # fmt: skip
    if repo_id is not None and tag is not None:
        where, pinned = f'"{repo_id}"', f', revision="{tag}"'
        intro = (f"Each release is one commit with a tag; `{tag}` is this one. Pin the tag to get exactly these "
                 f"rows (`{configs[0]}` is the default config):")  # fmt: skip
    else:
        where, pinned = f'"path/to/{folder_name}"', ""
        intro = (f"This folder is a release not yet published as a version (`kernelvault publish` tags one). Load "
                 f"a config from the folder that holds this card (`{configs[0]}` is the default config):")  # fmt: skip
    return [
        intro,
        "",
        "```python",
        "import datasets",
        "",
        *(
            f'{config} = datasets.load_dataset({where}, "{config}"{pinned}, split="train")'
            for config in configs
        ),
        "```",
        *held_out,
    ]


def build_card(
    release_dir: Path,
    repo_id: str | None,
    version: str | None,
    stats: Sequence[ConfigStats],
    plots: Sequence[Path],
    license: str = "apache-2.0",
    model_stats: Sequence[ConfigStats] = (),
    qa_lines: Sequence[str] = (),
) -> DatasetCard:
    """The dataset card of one release; save it as README.md at the root of `release_dir`.

    `repo_id` and `version` name the published version; both None for a release folder not yet published."""
    release_dir = Path(release_dir)
    configs = release_configs(release_dir)
    if not configs:
        raise ValueError(f"{release_dir} holds no config folder with train-*.parquet shards")
    name = repo_id.split("/")[-1] if repo_id else Path(release_dir).resolve().name
    rows = {config: _rows(release_dir / config) for config in configs}
    # The first config (the kernel attempts where there are any) is the default: `load_dataset(repo)` with no
    # config name loads it instead of failing.
    data = DatasetCardData(
        license=license,
        pretty_name=name,
        tags=TAGS,
        language=LANGUAGES,
        size_categories=[size_category(sum(rows.values()))],
        task_categories=["text-generation"],
        configs=[
            {"config_name": config,
             "data_files": [{"split": split, "path": f"{config}/{split}-*.parquet"}
                            for split in _splits(release_dir / config)],
             **({"default": True} if index == 0 else {})}
            for index, config in enumerate(configs)
        ],
    )  # fmt: skip
    tag = f"v{version}" if version else None
    lines = [
        f"# {name} {tag}" if tag else f"# {name}",
        "",
        "Execution-verified GPU kernels built by KernelVault. PyTorch reference programs went in; Triton "
        "and HIP kernels written for them were compiled, checked against the reference on several inputs and, "
        "where a GPU was available, timed against it. Every attempt is kept, failed ones included, with its "
        "failure kind, its evidence and its graded execution reward, so the data serves supervised "
        "fine-tuning (correct kernels) and reinforcement learning (the full reward distribution).",
        "",
        "## Configs",
        "",
        "| config | rows | contents |",
        "|---|---|---|",
        *(
            f"| `{config}` | {rows[config]} | {KNOWN_CONFIGS.get(config, 'additional data')} |"
            for config in configs
        ),
        "",
        "## Loading a version" if tag else "## Loading",
        "",
        *_loading_lines(configs, repo_id, tag, name, "test" in _splits(release_dir / "sft")),
        "",
        "## Schema",
        "",
        f"Attempt rows (`triton`, `hip`, `triton2triton`, `hip2hip`) follow KernelVault attempt schema v{SCHEMA_VERSION}; the version is "
        "also stored in each Parquet file's metadata (`kernelvault.schema_version`). Nested evidence (stages, "
        "per-case checks and timings, the conversation) are lists of structs; toolchain versions and sampling "
        "settings are JSON strings.",
        "",
        "<details><summary>Columns</summary>",
        "",
        "| column | type |",
        "|---|---|",
        *(f"| `{field.name}` | `{field.type}` |" for field in ATTEMPT_SCHEMA),
        "",
        "</details>",
        "",
        "## Statistics",
        "",
    ]
    if stats:
        lines += [
            format_table(stats, markdown=True),
            "",
            'Rates are over all attempts. "Correct" means correctness was established on the recorded '
            "platform; attempts that compiled where nothing could run them are counted separately and never "
            "as correct. Speedups are `sum(reference ms) / sum(candidate ms)` over the performance cases, "
            "only for correct attempts that were timed on a GPU. The reward is 0 (no compile), 0.4 "
            "(compiles), 1.4 (correct) plus up to 1.5 for speed: `min(1.5, 0.375 * log2(speedup)^2)`.",
            "",
        ]
    else:
        lines += ["No attempt statistics in this release.", ""]
    lines += list(qa_lines)  # the qa config's own statistics (corpus.qa_release.qa_card_lines)
    if model_stats:
        lines += [
            "### Per model",
            "",
            "The same statistics for each model whose answers are in this release (one column per model; "
            "a `_rag` suffix marks answers written with retrieval).",
            "",
            format_table(model_stats, markdown=True),
            "",
        ]
    if plots:
        lines += ["## Plots", ""]
        lines += [f"![{Path(plot).stem}]({_relative(plot, release_dir)})" for plot in plots]
        lines.append("")
    platforms = Counter[str]()
    for s in stats:
        platforms.update(s.platforms)
    lines += ["## Where the results come from", ""]
    if platforms:
        lines += ["| platform | attempts | what was measured |", "|---|---|---|"]
        lines += [
            f"| `{platform}` | {count} | {PLATFORM_MEANING.get(platform, 'see the rows')} |"
            for platform, count in platforms.most_common()
        ]
        lines.append("")
    lines += [
        "Every row records its platform, device, compile target and toolchain versions. Nothing in this "
        "dataset claims more than was measured: a kernel only compiled is not called correct, a kernel "
        "checked without a GPU has no speedup, and a result from one GPU is not claimed for another.",
        "",
        "## License",
        "",
        f"`{license}`.",
        "",
    ]
    return DatasetCard(f"---\n{data.to_yaml()}\n---\n\n" + "\n".join(lines))


def write_release_card(
    release_dir: Path, repo_id: str | None = None, version: str | None = None, license: str = "apache-2.0"
) -> Path:
    """Statistics, plots (`plots/`) and the card of a release folder, the card saved as its README.md.

    The one card writer of `kernelvault release` (no repo or version yet) and `kernelvault publish`."""
    release_dir = Path(release_dir)
    tables = {
        config: load_attempts(release_dir / config)
        for config in ATTEMPT_CONFIGS
        if (release_dir / config).is_dir() and any((release_dir / config).glob("*.parquet"))
    }
    stats = [compute_stats(table, config) for config, table in tables.items()]
    plots = write_plots(tables, stats, release_dir / "plots") if tables else []
    model_stats = [column for table in tables.values() for column in per_model_stats(table)]
    qa = load_qa_release(release_dir)
    card = build_card(release_dir, repo_id, version, stats, plots, license=license, model_stats=model_stats,
                      qa_lines=qa_card_lines(qa) if qa is not None else ())  # fmt: skip
    path = release_dir / "README.md"
    card.save(path)
    return path

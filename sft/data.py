"""SFT data: the `sft` config of one dataset version, filtered, mixed, in chat form.

    corpus folder ──► build_release (temporary) ─┐
    release folder ──────────────────────────────┼─► load_dataset(…, "sft") ─► filter ─┬─ train split
    ORG/NAME@vX.Y.Z (local hub or the Hub) ──────┘                                     └─ test split
                      train: mix HIP/Triton by ratio ◄─────────────────────────────────────┤
                      eval: every row of the held-out tasks ◄──────────────────────────────┘
                      both ─► messages with `reasoning_content` + chat_template_kwargs

The split is the release's, not chosen here: the `sft` config's test split holds every row of the tasks the
release held out (`kernelvault.corpus.split`, a hash of the task id), the same tasks whose prompts are the `rl`
config's validation split, so a plain TRL user of the version and `kernelvault sft` train and evaluate on the
same tasks. A release with no test split (built by an older KernelVault) is split here by the same rule.

Loss masking. Each sample carries `chat_template_kwargs = {"loss_from_message": k}`; TRL passes it to
the chat template, and the kernelvault template marks assistant turns from message k on as generation
(TRL's assistant_only_loss then trains on those tokens only). k is the first assistant message the agent
wrote: the few-shot example the agents put in their prompt is an assistant message too, and training on
it in every sample would only teach the model to recite it. The agent's turns are the last `turn + 1`
assistant messages, `turn` being the last field of the row's attempt_id (`run/task/sample/turn`).
"""

from __future__ import annotations

import tempfile
from collections import Counter
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import datasets

from kernelvault.contracts import TARGETS, Task
from kernelvault.corpus.qa_schema import QA_CONFIG
from kernelvault.corpus.split import held_out_tasks
from kernelvault.dataset_ref import parse_dataset_ref, pin
from kernelvault.sft.config import SFTRunConfig
from kernelvault.toolchain.tasks import TaskFormatError, parse_task


@dataclass(frozen=True)
class DatasetSource:
    kind: str  # "corpus" | "release" | "local-hub" | "hub"
    location: str  # the folder, or the repo id
    revision: str | None = None  # the tag (or branch) of a repo
    folder: Path | None = None  # what is read from disk: the folder or the local hub's checkout

    def describe(self) -> str:
        if self.kind in ("corpus", "release"):
            return f"{self.kind} folder {self.location}"
        where = "local hub" if self.kind == "local-hub" else "Hugging Face Hub"
        return f"{self.location}@{self.revision} ({where})"


def resolve_source(dataset: str, revision: str | None = None) -> DatasetSource:
    """A folder on disk, else a dataset repo on the hub `hub_from_env` picks, pinned to a version tag
    (`kernelvault.dataset_ref`: `hub:ORG/NAME@vX.Y.Z`, or the older `ORG/NAME` with `--revision`)."""
    ref = pin(parse_dataset_ref(dataset, revision))
    if ref.repo is not None:
        kind = "local-hub" if ref.folder is not None else "hub"  # the Hub's default branch moves: say which
        return DatasetSource(kind, ref.repo, ref.revision, ref.folder)
    path = ref.folder
    assert path is not None
    if any(any((path / "data" / target).glob("*.parquet")) for target in (*TARGETS, QA_CONFIG)):
        return DatasetSource("corpus", str(path), folder=path)
    if any((path / "sft").glob("*.parquet")):
        return DatasetSource("release", str(path), folder=path)
    raise ValueError(
        f"{path} is neither a corpus folder (data/<target>/*.parquet) nor a release (sft/*.parquet)"
    )


def _every_split(loaded: datasets.DatasetDict) -> datasets.Dataset:
    """All rows of a config: the `rl` config holds its held-out tasks in a validation split."""
    return datasets.concatenate_datasets(
        [loaded[split] for split in sorted(loaded, key=lambda s: s != "train")]
    )


def _load_folder_config(folder: Path, config: str) -> datasets.DatasetDict:
    # A throwaway cache: `datasets` keys a local folder's cache on the folder's base name and the config,
    # and a local hub checkout is named after its tag, so every `v0.1.0` of every repo would share one cache
    # entry and a load could silently return another dataset's rows.
    with tempfile.TemporaryDirectory(prefix="kv-sft-cache-") as cache:
        by_card = {"name": config} if (folder / "README.md").is_file() else {"data_dir": config}
        return datasets.load_dataset(str(folder), cache_dir=cache, keep_in_memory=True, **by_card)


def load_configs(source: DatasetSource) -> tuple[datasets.DatasetDict, datasets.Dataset]:
    """The `sft` config's splits and every split of the `rl` config (the prompts of the held-out tasks are in
    its validation split); a corpus folder is released (dedup included) on the fly."""
    if source.kind == "hub":
        sft = datasets.load_dataset(source.location, "sft", revision=source.revision)
        rl = _every_split(datasets.load_dataset(source.location, "rl", revision=source.revision))
        return sft, rl
    assert source.folder is not None
    if source.kind == "corpus":
        from kernelvault.corpus.release import build_release

        with tempfile.TemporaryDirectory(prefix="kv-sft-release-") as temporary:
            release = Path(temporary) / "release"
            build_release(source.folder, release)
            return _load_folder_config(release, "sft"), _load_rl(release)
    return _load_folder_config(source.folder, "sft"), _load_rl(source.folder)


def _load_rl(folder: Path) -> datasets.Dataset:
    """Every split of a release folder's `rl` config; none in a release of QA entries only (no tasks)."""
    if not (folder / "rl").is_dir():
        return datasets.Dataset.from_list([])
    return _every_split(_load_folder_config(folder, "rl"))


def keep_row(row: dict[str, Any], config: SFTRunConfig) -> bool:
    if row["target"] not in config.targets:
        return False
    if config.platforms and row["platform"] not in config.platforms:
        return False
    if row["reward"] is None or row["reward"] < config.min_reward:
        return False
    if config.min_speedup is not None and (row["speedup"] is None or row["speedup"] < config.min_speedup):
        return False
    return bool(row["messages"]) and row["messages"][-1]["role"] == "assistant"


def train_and_test(sft: datasets.DatasetDict) -> tuple[datasets.Dataset, datasets.Dataset]:
    """The `sft` config's train and test splits; a release without a test split (built by an older KernelVault)
    is split by the release's own rule (`corpus.split.held_out_tasks`) over its kernel tasks and QA entries."""
    if "test" in sft:
        return sft["train"], sft["test"]
    rows = _every_split(sft)
    targets, ids = rows["target"], rows["task_id"]
    held = held_out_tasks({i for i, t in zip(ids, targets, strict=True) if t != QA_CONFIG})
    held |= held_out_tasks({i for i, t in zip(ids, targets, strict=True) if t == QA_CONFIG})
    train = rows.filter(lambda row: row["task_id"] not in held)
    return train, rows.filter(lambda row: row["task_id"] in held)


def agent_turn_count(row: dict[str, Any]) -> int:
    """How many trailing assistant messages the agent wrote (turn + 1); all of them when unknown."""
    assistants = sum(message["role"] == "assistant" for message in row["messages"])
    try:
        return min(int(row["attempt_id"].rsplit("/", 1)[1]) + 1, assistants)
    except (ValueError, IndexError):
        return assistants


def training_example(row: dict[str, Any], final_answer_only: bool) -> dict[str, Any]:
    """Messages with each assistant turn's reasoning as `reasoning_content`, and where the loss starts.

    Releases keep the reasoning in the message already; releases built before December 2026 kept it in a
    column of its own (`reasoning`, one entry per assistant message), which is still read."""
    legacy = row.get("reasoning")
    separate = iter(legacy or [])
    messages = []
    for message in row["messages"]:
        text = None
        if message["role"] == "assistant":
            text = next(separate, "") if legacy is not None else message.get("reasoning_content")
        messages.append({"role": message["role"], "content": message["content"] or "",
                         "reasoning_content": text or None})  # fmt: skip
    assistant_positions = [i for i, m in enumerate(messages) if m["role"] == "assistant"]
    first_agent = assistant_positions[-agent_turn_count(row)]
    if final_answer_only:  # the prompt as the agent first saw it, then the answer that passed
        messages = messages[:first_agent] + messages[-1:]
        first_agent = len(messages) - 1
    return {"messages": messages, "chat_template_kwargs": {"loss_from_message": first_agent}}


def mix_targets(train: datasets.Dataset, hip_fraction: float | None, seed: int) -> datasets.Dataset:
    """HIP and Triton samples in the ratio asked for, by subsampling the side that has too many; other rows (the
    QA entries) are kept as they are."""
    if hip_fraction is None:
        return train
    others = train.filter(lambda row: row["target"] not in ("hip", "triton"))
    if others.num_rows:
        kernels = train.filter(lambda row: row["target"] in ("hip", "triton"))
        return datasets.concatenate_datasets([mix_targets(kernels, hip_fraction, seed), others])
    hip = train.filter(lambda row: row["target"] == "hip")
    triton = train.filter(lambda row: row["target"] == "triton")
    if hip_fraction in (0.0, 1.0):
        return hip if hip_fraction == 1.0 else triton
    if hip.num_rows == 0 or triton.num_rows == 0:
        raise ValueError(f"hip_fraction={hip_fraction} needs HIP and Triton samples; the training split has "
                         f"{hip.num_rows} HIP and {triton.num_rows} Triton")  # fmt: skip
    return datasets.interleave_datasets([triton, hip], probabilities=[1 - hip_fraction, hip_fraction], seed=seed,
                                        stopping_strategy="first_exhausted")  # fmt: skip


def drop_overlong(dataset: datasets.Dataset, tokenizer: Any, max_length: int) -> tuple[datasets.Dataset, int]:
    """The samples that fit in `max_length` tokens, and how many did not.

    Packing (best-fit decreasing) and truncation both keep a sample's beginning, so a trajectory longer
    than the sequence would lose its end, which is the answer that passed, and still train on the failed
    turns before it. Such samples are dropped instead (`final_answer_only` shortens them).
    """

    def fits(row: dict[str, Any]) -> bool:
        rendered = tokenizer.apply_chat_template(row["messages"], tokenize=True, return_dict=True,
                                                 **row["chat_template_kwargs"])  # fmt: skip
        return len(rendered["input_ids"]) <= max_length

    kept = dataset.filter(fits)
    return kept, dataset.num_rows - kept.num_rows


@dataclass
class SFTData:
    source: DatasetSource
    train: datasets.Dataset  # messages, chat_template_kwargs and the row's metadata
    eval: datasets.Dataset | None  # every sample of the held-out tasks; None when nothing is held out
    train_tasks: dict[str, str]  # task id -> name
    eval_tasks: dict[str, str]
    # (target, task) pairs whose pass rate the agents measure after training
    eval_prompts: list[tuple[str, Task]] = field(default_factory=list)
    counts: dict[str, int] = field(default_factory=dict)

    def summary_lines(self) -> list[str]:
        targets = Counter(self.train["target"])
        return [
            f"dataset: {self.source.describe()}",
            f"rows: {self.counts['loaded']} loaded, {self.counts['kept']} kept by the filters",
            f"tasks: {len(self.train_tasks)} train, {len(self.eval_tasks)} held out"
            + (f" ({', '.join(sorted(self.eval_tasks.values()))})" if self.eval_tasks else ""),
            f"samples: {self.train.num_rows} train ({', '.join(f'{n} {t}' for t, n in sorted(targets.items()))}), "
            f"{self.eval.num_rows if self.eval is not None else 0} eval",
        ]

    def split_record(self) -> dict[str, Any]:
        return {
            "dataset": self.source.location, "kind": self.source.kind, "revision": self.source.revision,
            "train_tasks": sorted(self.train_tasks.values()), "eval_tasks": sorted(self.eval_tasks.values()),
            "train_samples": self.train.num_rows, "eval_samples": self.eval.num_rows if self.eval is not None else 0,
        }  # fmt: skip


def _eval_prompts(
    rl: datasets.Dataset, eval_ids: set[str], targets: list[str], source: str
) -> list[tuple[str, Task]]:
    prompts = []
    for row in rl:
        if row["task_id"] not in eval_ids or row["target"] not in targets:
            continue
        try:
            task = parse_task(row["task_source"], row["task_name"], f"dataset:{source}")
        except TaskFormatError:
            continue  # a reference that no longer parses cannot be measured; the eval loss still covers it
        if task.entry and row["target"] != "triton":
            continue  # the toolchain takes only Triton candidates for a function task (agents.prompting)
        prompts.append((row["target"], task))
    return sorted(prompts, key=lambda item: (item[0], item[1].name))


def load_sft_data(config: SFTRunConfig) -> SFTData:
    source = resolve_source(config.dataset, config.revision)
    splits, rl = load_configs(source)
    train, test = train_and_test(splits)
    train, held = (split.filter(keep_row, fn_kwargs={"config": config}) for split in (train, test))
    loaded, kept = sum(split.num_rows for split in splits.values()), train.num_rows + held.num_rows
    if kept == 0:
        raise ValueError(f"no SFT rows left in {source.describe()} after the filters ({loaded} before)")
    if train.num_rows == 0:
        raise ValueError(f"no SFT rows of a training task left in {source.describe()} after the filters (the "
                         f"{held.num_rows} left are all of held-out tasks)")  # fmt: skip
    train_tasks = dict(zip(train["task_id"], train["task_name"], strict=True))
    eval_tasks = dict(zip(held["task_id"], held["task_name"], strict=True))
    to_chat = {
        "fn_kwargs": {"final_answer_only": config.final_answer_only},
        "remove_columns": [name for name in ("messages", "reasoning") if name in train.column_names],
    }
    train = mix_targets(train, config.hip_fraction, config.seed).map(training_example, **to_chat)
    if config.max_train_samples is not None:
        train = train.shuffle(seed=config.seed).select(range(min(config.max_train_samples, train.num_rows)))
    return SFTData(
        source=source, train=train, eval=held.map(training_example, **to_chat) if held.num_rows else None,
        train_tasks=train_tasks, eval_tasks=eval_tasks,
        eval_prompts=_eval_prompts(rl, set(eval_tasks), config.targets, source.describe()),
        counts={"loaded": loaded, "kept": kept},
    )  # fmt: skip

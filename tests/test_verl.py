"""verl 0.9.1's own classes over KernelVault's release, reward function and agent loop.

These run in the verl environment: `make test` builds .venv-verl from the `verl` extra with
constraints/verl-cpu.txt and runs the tests marked `verl` there (verl 0.9.1 needs transformers < 5.11, TRL 1.16's
tests run on a later one, so the two are separate environments). Nothing here copies a verl class: the dataset
is verl's `RLHFDataset`, the reward manager comes from verl's `load_reward_manager` and registry and runs inside
verl's `RewardLoopWorker`, and the agent loop is looked up in verl's registry from our YAML file and built with
hydra's `instantiate` exactly as verl's `AgentLoopWorker` does.
"""

from __future__ import annotations

import asyncio
from pathlib import Path
from typing import Any

import pytest

verl = pytest.importorskip("verl", reason="needs the verl extra (make test runs these in .venv-verl)")

import datasets  # noqa: E402
import pyarrow.parquet as pq  # noqa: E402
import torch  # noqa: E402
from corpus_rows import ROOT, example_code, row_for  # noqa: E402
from omegaconf import DictConfig, OmegaConf  # noqa: E402

from kernelvault.agents.prompting import initial_messages  # noqa: E402
from kernelvault.corpus.release import build_release  # noqa: E402
from kernelvault.corpus.shards import ShardWriter  # noqa: E402
from kernelvault.rl.verifiers import verdict_source_from_env  # noqa: E402
from kernelvault.sft.chat_template import KERNELVAULT_TEMPLATE  # noqa: E402
from kernelvault.sft.models import train_tokenizer  # noqa: E402

pytestmark = pytest.mark.verl
TASKS = ("relu", "silu", "softmax", "vector_add", "leaky_relu", "gelu", "sigmoid", "tanh")
VERL_CONFIG = Path(verl.__file__).parent / "trainer" / "config" / "_generated_ppo_trainer.yaml"


@pytest.fixture(scope="module", autouse=True)
def cpu_verdicts() -> Any:
    """verl's reward workers and agent loops read where verdicts come from in the environment."""
    with pytest.MonkeyPatch.context() as patch:
        patch.delenv("KV_REWARD_URL", raising=False)
        patch.setenv("KV_PLATFORM", "cpu")
        patch.setenv("KV_DEVICES", "cpu")
        verdict_source_from_env.cache_clear()
        yield
        verdict_source_from_env.cache_clear()


@pytest.fixture(scope="module")
def release(tmp_path_factory: pytest.TempPathFactory) -> Path:
    root = tmp_path_factory.mktemp("verl")
    names = [name for name in TASKS if (ROOT / "tasks" / f"{name}.py").exists()]
    assert len(names) >= 4
    rows = [row_for(name, example_code("relu"), name == "relu", 0) for name in names]
    with ShardWriter(root / "corpus", "triton", "run1", max_rows=100) as writer:
        writer.write_many(rows)
    build_release(root / "corpus", root / "release", held_out_fraction=0.25)
    return root / "release"


@pytest.fixture(scope="module")
def tokenizer_dir(release: Path, tmp_path_factory: pytest.TempPathFactory) -> Path:
    """A small BPE tokenizer with Qwen3's control tokens, saved as a model folder verl loads by path."""
    prompts = pq.read_table(release / "rl_verl" / "train-00000-of-00001.parquet").column("prompt").to_pylist()
    texts = [message["content"] for prompt in prompts for message in prompt] + [example_code("relu")]
    folder = tmp_path_factory.mktemp("tokenizer")
    train_tokenizer(texts, 2048, chat_template=KERNELVAULT_TEMPLATE.read_text()).save_pretrained(folder)
    return folder


def verl_row(release: Path, task_name: str) -> dict[str, Any]:
    """The `rl_verl` row of a task, from whichever split holds it."""
    rows = datasets.load_dataset(str(release), data_dir="rl_verl")
    return next(
        row for split in rows.values() for row in split if row["extra_info"]["task_name"] == task_name
    )


def prompt_tokens(tokenizer: Any, messages: list[dict[str, Any]]) -> list[int]:
    """The chat template's rendering of the opening messages, with the assistant generation prompt."""
    text = tokenizer.apply_chat_template(messages, add_generation_prompt=True, tokenize=False)
    return tokenizer.encode(text, add_special_tokens=False)


def verl_config(**dotted: Any) -> DictConfig:
    """verl's own trainer defaults (its generated ppo_trainer.yaml) with the given dotted keys set."""
    config = OmegaConf.load(VERL_CONFIG)
    for key, value in dotted.items():
        OmegaConf.update(config, key, value, force_add=True)
    return config


def test_rl_verl_loads_through_verls_dataset_with_the_agents_prompt_and_a_validation_split(
    release: Path, tokenizer_dir: Path, tmp_path: Path
) -> None:
    from transformers import AutoTokenizer
    from verl.utils.dataset.rl_dataset import RLHFDataset

    tokenizer = AutoTokenizer.from_pretrained(tokenizer_dir)

    def load(split: str, max_prompt_length: int) -> RLHFDataset:
        files = sorted(str(path) for path in (release / "rl_verl").glob(f"{split}-*.parquet"))
        options = {"prompt_key": "prompt", "max_prompt_length": max_prompt_length, "return_raw_chat": True,
                   "filter_overlong_prompts": True, "cache_dir": str(tmp_path / "cache")}  # fmt: skip
        return RLHFDataset(data_files=files, tokenizer=tokenizer, config=OmegaConf.create(options))

    train, validation = load("train", 1 << 20), load("validation", 1 << 20)
    assert len(validation) >= 1 and len(train) >= 3
    tasks = {item["extra_info"]["task_name"]: item for item in [*train, *validation]}
    assert not {item["extra_info"]["task_name"] for item in validation} & {
        item["extra_info"]["task_name"] for item in train
    }
    relu = tasks["relu"]
    # The prompt verl hands the agent loop is the agents' own opening, built once by the release.
    assert relu["raw_prompt"] == initial_messages(relu["reward_model"]["ground_truth"], "triton", "cpu")
    assert relu["data_source"] == "kernelvault/triton"
    # verl's overlong filter measures that prompt: a bound just under the shortest drops every row.
    lengths = [len(prompt_tokens(tokenizer, item["raw_prompt"])) for item in train]
    assert (
        min(lengths) > 1000
    )  # system prompt, few-shot exchange, task: not the 1-2k characters of a bare task
    assert len(load("train", min(lengths) - 1)) == 0 and len(load("train", max(lengths))) == len(train)
    # The card lists the split, so `datasets` loads it by name as well.
    assert datasets.load_dataset(str(release), data_dir="rl_verl", split="validation").num_rows == len(
        validation
    )


def data_proto(tokenizer: Any, items: list[dict[str, Any]], responses: list[str]) -> Any:
    """A batch as verl's rollout leaves it for the reward loop: prompts, responses, attention mask, and the
    dataset's non-tensor fields."""
    import numpy as np
    from verl import DataProto

    prompt_ids = [prompt_tokens(tokenizer, item["raw_prompt"]) for item in items]
    response_ids = [tokenizer.encode(text, add_special_tokens=False) for text in responses]
    width_p, width_r = max(map(len, prompt_ids)), max(map(len, response_ids))
    pad = tokenizer.pad_token_id
    prompts = torch.tensor([[pad] * (width_p - len(p)) + p for p in prompt_ids])
    answers = torch.tensor([r + [pad] * (width_r - len(r)) for r in response_ids])
    mask = torch.tensor([[0] * (width_p - len(p)) + [1] * len(p) + [1] * len(r) + [0] * (width_r - len(r))
                         for p, r in zip(prompt_ids, response_ids, strict=True)])  # fmt: skip
    return DataProto.from_dict(
        tensors={"prompts": prompts, "responses": answers, "attention_mask": mask,
                 "input_ids": torch.cat([prompts, answers], dim=1)},
        non_tensors={key: np.array([item[key] for item in items], dtype=object)
                     for key in ("data_source", "reward_model", "extra_info")},
    )  # fmt: skip


def test_verls_reward_loop_scores_a_batch_with_the_toolchains_reward(
    release: Path, tokenizer_dir: Path
) -> None:
    """`reward.custom_reward_function` names `compute_score_async`; verl's `RewardLoopWorker` loads it through its
    `load_reward_manager` (the `naive` manager from verl's registry) and scores every sample of the batch."""
    from transformers import AutoTokenizer
    from verl.experimental.reward_loop.reward_loop import RewardLoopWorker
    from verl.experimental.reward_loop.reward_manager import get_reward_manager_cls

    tokenizer = AutoTokenizer.from_pretrained(tokenizer_dir)
    relu = verl_row(release, "relu")
    items = [{**relu, "raw_prompt": relu["prompt"]}] * 3
    answers = [
        f"```python\n{example_code('relu')}```",
        f"```python\n{example_code('silu')}```",
        "no code at all",
    ]
    config = verl_config(**{
        "actor_rollout_ref.model.path": str(tokenizer_dir),
        "reward.custom_reward_function.path": str(ROOT / "rl" / "verl_score.py"),
        "reward.custom_reward_function.name": "compute_score_async",
    })  # fmt: skip
    assert config.reward.reward_manager.name == "naive"  # verl's default manager, from its registry
    worker = RewardLoopWorker(config)
    assert isinstance(worker.reward_manager, get_reward_manager_cls("naive"))

    async def score() -> list[dict[str, Any]]:
        return await worker.compute_score_batch(data_proto(tokenizer, items, answers))

    results = worker.loop.run_until_complete(score())  # the loop verl's worker and manager were made on
    scores = [result["reward_score"] for result in results]
    assert scores == [
        pytest.approx(1.4),
        pytest.approx(0.4),
        0.0,
    ]  # correct on cpu, compiles but wrong, no code
    assert [result["reward_extra_info"]["parsed"] for result in results] == [1.0, 1.0, 0.0]


class ScriptedServer:
    """verl's `server_manager` for the agent loop: `generate` answers from a script, as a vLLM server would."""

    def __init__(self, tokenizer: Any, answers: list[str]) -> None:
        self.tokenizer = tokenizer
        self.answers = list(answers)
        self.requests: list[dict[str, Any]] = []

    async def generate(self, request_id: str, prompt_ids: list[int], sampling_params: dict[str, Any],
                       **_: Any) -> Any:  # fmt: skip
        from verl.workers.rollout.replica import TokenOutput

        self.requests.append({"request_id": request_id, "prompt_ids": list(prompt_ids), **sampling_params})
        text = self.answers.pop(0) + "<|im_end|>"
        return TokenOutput(token_ids=self.tokenizer.encode(text, add_special_tokens=False))


def test_the_agent_loop_from_verls_yaml_registry_runs_a_trajectory(
    release: Path, tokenizer_dir: Path
) -> None:
    import hydra
    from transformers import AutoTokenizer
    from verl.experimental.agent_loop.agent_loop import DictConfigWrap, _agent_loop_registry
    from verl.utils.dataset.rl_dataset import RLHFDataset

    tokenizer = AutoTokenizer.from_pretrained(tokenizer_dir)
    for entry in OmegaConf.load(ROOT / "rl" / "configs" / "verl_agent_loops.yaml"):  # as AgentLoopWorker does
        _agent_loop_registry[entry.name] = entry
    config = verl_config(**{
        "actor_rollout_ref.model.path": str(tokenizer_dir),
        "actor_rollout_ref.rollout.response_length": 4096,
        "actor_rollout_ref.rollout.agent.agent_loop_config_path": str(ROOT / "rl" / "configs" / "verl_agent_loops.yaml"),
    })  # fmt: skip
    server = ScriptedServer(tokenizer, [f"```python\n{example_code('silu')}```",
                                        f"```python\n{example_code('relu')}```"])  # fmt: skip
    loop = hydra.utils.instantiate(
        config=_agent_loop_registry["kernelvault_agent"], trainer_config=DictConfigWrap(config=config),
        server_manager=server, tokenizer=tokenizer, processor=None, dataset_cls=RLHFDataset,
        data_config=DictConfigWrap(config.data),
    )  # fmt: skip
    relu = verl_row(release, "relu")

    async def run() -> Any:
        return await loop.run({"temperature": 1.0, "top_p": 1.0}, raw_prompt=relu["prompt"], **relu)

    output = asyncio.run(run())
    # Two turns: a wrong kernel (compiles, mismatches), then the right one; the return is discounted.
    assert output.extra_fields["turn_scores"] == [pytest.approx(0.4), pytest.approx(1.4)]
    assert output.reward_score == pytest.approx(0.4 + 0.6 * 1.4)
    # The first request's prompt is the dataset's prompt, rendered by the tokenizer's template: nothing rebuilt.
    first = server.requests[0]["prompt_ids"]
    assert first == prompt_tokens(tokenizer, relu["prompt"])
    assert output.prompt_ids == first
    assert (
        len({request["request_id"] for request in server.requests}) == 1
    )  # one id per trajectory: prefix reuse
    # The feedback between the turns is in the response with mask 0; the model's tokens have mask 1.
    assert (
        0 in output.response_mask
        and output.response_mask[0] == 1
        and len(output.response_ids) == len(output.response_mask)
    )

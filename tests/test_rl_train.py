"""`kernelvault rl`: real GRPOTrainer steps on a tiny Qwen3 built here, scored by the real toolchain on cpu."""

from __future__ import annotations

import argparse
import json
from pathlib import Path

import pytest

from kernelvault.cli import UsageError
from kernelvault.cli.rl import register as add_rl_parser
from kernelvault.rl.config import ConfigError, load_config
from kernelvault.rl.tiny_model import build_tiny_policy
from kernelvault.rl.train import grpo_arguments

ROOT = Path(__file__).resolve().parents[1]
CONFIGS = ROOT / "rl" / "configs"


def tiny_policy_path(factory: pytest.TempPathFactory) -> Path:
    """One tiny Qwen3 per test session (each test module may ask; the first builds it)."""
    path = factory.getbasetemp() / "tiny-qwen3"
    if not (path / "config.json").exists():
        build_tiny_policy(path)
    return path


def run_cli(*argv: str) -> int:
    parser = argparse.ArgumentParser()
    add_rl_parser(parser.add_subparsers(dest="command", required=True))
    args = parser.parse_args(["rl", *argv])
    return args.handler(args)


def logged_steps(output_dir: Path) -> list[dict]:
    state = sorted(output_dir.glob("checkpoint-*/trainer_state.json"))
    if state:
        return [e for e in json.loads(state[-1].read_text())["log_history"] if "reward" in e]
    raise AssertionError(f"no trainer state under {output_dir}")


def test_grpo_steps_scored_by_the_toolchain(tmp_path_factory: pytest.TempPathFactory, tmp_path: Path,
                                               capsys: pytest.CaptureFixture[str]) -> None:  # fmt: skip
    model = tiny_policy_path(tmp_path_factory)
    out = tmp_path / "run"
    assert run_cli("--config", str(CONFIGS / "tiny.yaml"), "--model", str(model), "--output-dir", str(out),
                   "--max-steps", "2", "--save-steps", "2") == 0  # fmt: skip
    printed = capsys.readouterr().out
    assert "verdicts from local toolchain (cpu (Triton interpreter), lanes on cpu,cpu)" in printed
    first, step = logged_steps(out)
    assert (first["step"], step["step"]) == (1, 2)
    for key in ("frac_reward_zero_std", "reward/compile", "reward/correct", "reward/speed", "reward/binary",
                "signal/graded_zero_spread", "signal/binary_usable", "timing/generation_s",
                "timing/verification_s", "timing/optimisation_s", "rewards/execution/mean"):  # fmt: skip
        assert key in step, key
    # A random model's answers are noise (mostly no code block; now and then a fence around noise, which the
    # static wall refuses): the toolchain says why each earns nothing, and every group is dead.
    lines = [json.loads(line) for line in (out / "rewards-rank0.jsonl").read_text().splitlines()]
    assert len(lines) == 8 and all(line["failure_kind"] and line["graded"] == 0.0 for line in lines)
    assert [line["step"] for line in lines] == [0] * 4 + [1] * 4
    parsed = sum(line["failure_kind"] != "parse_error" for line in lines[4:]) / 4
    assert step["frac_reward_zero_std"] == 1.0 and step["verify/frac_parsed"] == parsed
    assert (out / "model.safetensors").exists()


def test_one_multi_turn_grpo_step_masks_feedback(
    tmp_path_factory: pytest.TempPathFactory, tmp_path: Path
) -> None:
    model = tiny_policy_path(tmp_path_factory)
    out = tmp_path / "run"
    assert run_cli("--config", str(CONFIGS / "tiny.yaml"), "--model", str(model), "--output-dir", str(out),
                   "--multi-turn", "true", "--max-steps", "1", "--save-steps", "1", "--num-generations", "2",
                   "--per-device-train-batch-size", "2", "--max-completion-length", "1024") == 0  # fmt: skip
    (step,) = logged_steps(out)
    assert step["rollout/turns"] == 2.0  # both turns used: nothing parses, so nothing stops early
    assert step["rollout/masked_tokens"] > 50  # the feedback turn, in the completion but out of the loss
    assert step["completions/mean_length"] <= 2 * 16  # TRL counts policy tokens only (turn_max_tokens 16)
    assert "rewards/trajectory_return/mean" in step and "frac_reward_zero_std" in step


def test_shipped_configs_load_and_map_onto_grpo_config(tmp_path: Path) -> None:
    for path in sorted(p for p in CONFIGS.glob("*.yaml") if not p.name.startswith("verl_")):
        config = load_config(path, {"output_dir": str(tmp_path / path.stem), "bf16": False})
        arguments = grpo_arguments(config)
        assert (
            arguments.num_generations == config.num_generations
            and arguments.scale_rewards == config.scale_rewards
        )
    config = load_config(CONFIGS / "qwen3-8b-h200.yaml", {"max_steps": "3", "beta": "0.01"})
    assert (
        config.max_steps == 3 and config.beta == 0.01 and config.scale_rewards == "batch" and config.use_peft
    )


def test_bad_settings_are_one_line_usage_errors(tmp_path: Path) -> None:
    with pytest.raises(ConfigError, match="unknown setting"):
        load_config(None, {"model": "m", "tasks": "tasks", "group_size": 8})
    with pytest.raises(ConfigError, match="not a valid"):
        load_config(None, {"model": "m", "tasks": "tasks", "max_steps": "many"})
    with pytest.raises(ConfigError, match="multiple of num_generations"):
        load_config(None, {"model": "m", "tasks": "tasks", "num_generations": 3})
    with pytest.raises(UsageError, match="needs --config"):
        run_cli()
    with pytest.raises(UsageError, match="config file not found"):
        run_cli("--config", str(tmp_path / "missing.yaml"))


def test_prompts_come_from_a_release_folder(tmp_path: Path) -> None:
    import pyarrow as pa
    import pyarrow.parquet as pq
    from corpus_rows import example_code, row_for

    from kernelvault.corpus.release import build_release
    from kernelvault.corpus.schema import ATTEMPT_SCHEMA
    from kernelvault.rl.rollout import prompt_key
    from kernelvault.rl.train import build_dataset

    rows = [row_for("relu", example_code("relu"), True, 0), row_for("silu", example_code("silu"), False, 0)]
    (tmp_path / "corpus" / "data" / "triton").mkdir(parents=True)
    pq.write_table(
        pa.Table.from_pylist(rows, schema=ATTEMPT_SCHEMA),
        tmp_path / "corpus" / "data" / "triton" / "s.parquet",
    )
    build_release(tmp_path / "corpus", tmp_path / "release")
    config = load_config(None, {"model": "m", "dataset": str(tmp_path / "release"), "max_tasks": 1})
    dataset, tasks = build_dataset(config)
    assert len(dataset) == 1 and set(dataset.column_names) >= {"prompt", "task_source", "task_name"}
    row = dataset[0]
    assert (
        row["prompt"][-1]["role"] == "user" and tasks[prompt_key(row["prompt"])].source == row["task_source"]
    )

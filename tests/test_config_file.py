"""Config files of `kernelvault sft` and `kernelvault rl` used from another folder: a bundled config by its
name, relative paths resolved against the config (the package's data for a bundled one), outputs and
command-line values left relative to the current folder."""

from __future__ import annotations

import re
import subprocess
import sys
from pathlib import Path

import pytest

from kernelvault.rl.config import ConfigError
from kernelvault.rl.config import load_config as load_rl_config
from kernelvault.sft.config import load_config as load_sft_config
from kernelvault.toolchain.tasks import load_tasks

ROOT = Path(__file__).resolve().parents[1]


def test_a_bundled_config_by_name_finds_its_tasks_from_any_folder(tmp_path: Path, monkeypatch) -> None:  # noqa: ANN001
    monkeypatch.chdir(tmp_path)
    config = load_rl_config("tiny")
    assert Path(config.tasks).is_absolute()
    assert [task.name for task in load_tasks(config.tasks).tasks] == ["relu"]
    # What an earlier step writes (the tiny model) and where this run writes stay in the current folder.
    assert (config.model, config.output_dir) == ("out/tiny-qwen3", "out/rl-tiny")
    assert load_rl_config("tiny.yaml") == config
    assert load_sft_config("tiny").chat_template == "kernelvault"  # a template's name, not a path
    with pytest.raises(
        ConfigError, match=r"config file not found: tiyn \(and no bundled config of that name: .*tiny"
    ):
        load_rl_config("tiyn")


def test_a_users_config_names_paths_beside_itself_but_flags_and_hub_ids_stay_as_given(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    experiment = tmp_path / "experiment"
    (experiment / "suite").mkdir(parents=True)
    (experiment / "suite" / "relu.py").write_text((ROOT / "tasks" / "relu.py").read_text())
    (experiment / "template.jinja").write_text("{{ messages }}")
    (experiment / "rl.yaml").write_text("model: Qwen/Qwen3-8B\ntasks: suite/relu.py\noutput_dir: out/rl\n")
    (experiment / "sft.yaml").write_text(
        "model: Qwen/Qwen3-8B\ndataset: suite\nchat_template: template.jinja\n"
    )
    elsewhere = tmp_path / "elsewhere"
    elsewhere.mkdir()
    monkeypatch.chdir(elsewhere)
    config = load_rl_config(str(experiment / "rl.yaml"))
    assert (config.tasks, config.model, config.output_dir) == (
        str(experiment / "suite" / "relu.py"),
        "Qwen/Qwen3-8B",
        "out/rl",
    )
    assert load_rl_config(str(experiment / "rl.yaml"), {"tasks": "suite"}).tasks == "suite"  # typed here
    sft = load_sft_config(experiment / "sft.yaml")
    assert (sft.dataset, sft.chat_template) == (str(experiment / "suite"), str(experiment / "template.jinja"))


def test_the_bundled_rl_config_runs_from_another_folder(tmp_path: Path) -> None:
    """A real `kernelvault rl --config tiny` from a folder without tasks/: the tasks are found, and the run
    gets as far as the model, which is not there: one line naming it."""
    missing = tmp_path / "no-model"
    done = subprocess.run([sys.executable, "-m", "kernelvault.cli", "rl", "--config", "tiny", "--model", str(missing)],
                          capture_output=True, text=True, cwd=tmp_path, timeout=300)  # fmt: skip
    assert done.returncode == 2, done.stderr[-3000:]
    errors = [line for line in done.stderr.splitlines() if line.startswith("kernelvault:")]
    assert errors == [errors[0]] and "Traceback" not in done.stderr, done.stderr[-3000:]
    assert errors[0].startswith(
        f"kernelvault: error: cannot load the model '{missing}' (no folder {missing})"
    )


@pytest.mark.parametrize("command", ["sft", "rl"])
def test_help_names_each_value_and_says_each_default_once(
    command: str, capsys: pytest.CaptureFixture
) -> None:
    from kernelvault.cli import main

    with pytest.raises(SystemExit) as stopped:
        main([command, "--help"])
    assert stopped.value.code == 0
    text = " ".join(capsys.readouterr().out.split())  # the help as one line: wrapping undone
    assert " VALUE" not in text and re.search(r"\(default: [^)]*\) \(default:", text) is None, text
    assert "--max-steps MAX_STEPS" in text and "--bf16 [BOOL]" in text
    if command == "rl":
        assert "verifications in flight (default: twice the lanes) --" in text
        assert "--lora-target-modules YAML_LIST" in text and "--grpo YAML_MAPPING" in text

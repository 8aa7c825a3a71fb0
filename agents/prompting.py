"""Prompt text shared by the agents, the SFT data and the RL prompts (one source, so they agree).

The files live in `agents/prompt_files/`: a system prompt per language and GPU family
(`system_{target}_{amd|nvidia}.md`), one few-shot exchange per language (`fewshot_{target}.md`,
sections `### reference` and `### answer`), and the feedback templates (`feedback.md`, one `## kind`
section per verdict). The cpu platform proves compilation for AMD CDNA, so it gets the AMD prompts.
"""

from __future__ import annotations

import re
from functools import cache
from pathlib import Path

PROMPT_FILES = Path(__file__).resolve().parent / "prompt_files"

SYSTEM_PROMPT = (
    "You are an expert GPU kernel engineer. You replace PyTorch reference programs with faster custom "
    "kernels that compute the same function."
)

_TARGET_INSTRUCTIONS = {
    "triton": (
        "Write a Python module that defines `class ModelNew(torch.nn.Module)` with the same constructor and "
        "forward signature as `Model`, and computes the forward pass with one or more `@triton.jit` kernels "
        "defined at module level. Do not call the PyTorch operators that do the work; allocation, views and "
        "`.contiguous()` are fine. Handle any input size with masks."
    ),
    "hip": (
        "Write a Python module that defines `class ModelNew(torch.nn.Module)` with the same constructor and "
        "forward signature as `Model`, and computes the forward pass with HIP C++ kernels: a module-level "
        '`HIP_SOURCE` string with `__global__` kernels and `extern "C"` launch functions, loaded with '
        "`kernelvault.hip.load_hip`. Do not call the PyTorch operators that do the work. Handle any input size."
    ),
}


def gpu_family(platform: str) -> str:
    return "nvidia" if platform == "cuda" else "amd"


@cache
def _read(name: str) -> str:
    return (PROMPT_FILES / name).read_text(encoding="utf-8").strip()


def system_prompt(target: str, platform: str) -> str:
    """The system prompt for a language on the GPU family the platform verifies for."""
    path = PROMPT_FILES / f"system_{target}_{gpu_family(platform)}.md"
    return _read(path.name) if path.exists() else SYSTEM_PROMPT


def task_prompt(reference_source: str, target: str) -> str:
    """The first user turn for a task."""
    instructions = _TARGET_INSTRUCTIONS[target]
    return (
        f"Here is a PyTorch reference program:\n\n```python\n{reference_source.rstrip()}\n```\n\n"
        f"{instructions}\n\nAnswer with the complete module in one ```python code block."
    )


def answer_from_code(code: str) -> str:
    """An assistant answer carrying `code` in the fenced form the parse stage reads."""
    return f"```python\n{code.rstrip()}\n```"


def few_shot(target: str) -> tuple[str, str] | None:
    """(reference source, assistant answer) of the worked example for a language, if there is one."""
    path = PROMPT_FILES / f"fewshot_{target}.md"
    if not path.exists():
        return None
    text = _read(path.name)
    match = re.search(r"^### reference\s*\n(.*?)^### answer\s*\n(.*)\Z", text, re.DOTALL | re.MULTILINE)
    if match is None:
        raise ValueError(f"{path} must have '### reference' and '### answer' sections")
    reference = re.sub(r"^```(?:python)?\s*\n|\n```\s*$", "", match.group(1).strip())
    return reference, match.group(2).strip()


def initial_messages(reference_source: str, target: str, platform: str) -> list[dict[str, str]]:
    """System prompt, the few-shot exchange, then the task."""
    messages = [{"role": "system", "content": system_prompt(target, platform)}]
    example = few_shot(target)
    if example is not None:
        messages.append({"role": "user", "content": task_prompt(example[0], target)})
        messages.append({"role": "assistant", "content": example[1]})
    messages.append({"role": "user", "content": task_prompt(reference_source, target)})
    return messages


@cache
def feedback_templates() -> dict[str, str]:
    text = _read("feedback.md")
    sections = re.split(r"^## +(\w+)\s*$", text, flags=re.MULTILINE)
    return {name: body.strip() for name, body in zip(sections[1::2], sections[2::2], strict=True)}

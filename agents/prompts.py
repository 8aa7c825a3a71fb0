"""Prompt text shared by the agents, the SFT data and the RL prompts (one source, so they agree).

The first user turn shows the PyTorch reference and asks for a `ModelNew` in one fenced code block.
The per-platform prompt files and the feedback turns arrive with the agents; this module keeps the
part every stage needs.
"""

from __future__ import annotations

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
        "forward signature as `Model`, and computes the forward pass with HIP C++ kernels. Do not call the "
        "PyTorch operators that do the work. Handle any input size."
    ),
}


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

"""Prompt text shared by the agents, the SFT data and the RL prompts (one source, so they agree).

The files live in `agents/prompt_files/`: a system prompt per language and GPU family
(`system_{target}_{amd|nvidia}.md`), the paragraph that says where the kernels are verified, per platform and
language (`platforms.md`, one `## platform target` section), one few-shot exchange per language
(`fewshot_{target}.md`, sections `### reference` and `### answer`), and the feedback templates (`feedback.md`,
one `## kind` section per verdict, and `## kind (function tasks)` where a function task needs other words). The
cpu platform proves compilation for AMD CDNA, so it gets the AMD prompts, with its own platform paragraph: the
GPUs the prompt writes for are not where a cpu row was verified, and nothing there was timed.

`initial_messages` is the one opening of a conversation: the agents', the release's `rl`/`rl_verl` prompts and
the `sft` rows of candidates that came without a conversation all use it, with the platform the rows were
verified on.

Two task forms (`Task.form`), told apart from the reference's source (`task_prompt` is given only the
source by the release's sft/rl configs and by rl/, so every prompt for one task agrees):

- module (`class Model`): the candidate defines `class ModelNew`.
- function (TritonBench-T's layout, `kernelvault.toolchain.function_tasks`): the reference function(s), then a test
  that calls them. The candidate defines the same functions (`function_entries`: the ones the test calls)
  with the same names and signatures, launching its own Triton kernels. The system prompt's paragraphs about
  `ModelNew` are replaced by the function form's, and the module few-shot exchange is left out (it would
  teach `ModelNew`). HIP candidates for function tasks are refused by the toolchain (they define
  `ModelNew`), so asking for one raises `UnsupportedPrompt` instead of spending model requests.
"""

from __future__ import annotations

import ast
import re
from collections.abc import Sequence
from functools import cache
from pathlib import Path
from typing import TYPE_CHECKING

from kernelvault.contracts import BASELINES_NAME

if TYPE_CHECKING:
    from kernelvault.contracts import Task

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


_FUNCTION_INSTRUCTIONS = (
    "Write a Python module that defines {functions} with the same names and signatures as the reference "
    "({signatures}), computing the same results with one or more `@triton.jit` kernels defined at module "
    "level and launched from {those}. The test above shows the calls it will make: each call is judged by what "
    "it returns and by the tensor arguments it leaves behind (an `out=` tensor must hold the result). Do not "
    "call the PyTorch operators that do the work; allocation, views and `.contiguous()` are fine. Handle any "
    "input size with masks. Do not wrap them in an `nn.Module` class, and leave out the test and any `__main__` "
    "block."
)

# Added where the test differentiates what the functions return (`function_tasks`, "Gradients").
_GRADIENT_INSTRUCTIONS = (
    "The test differentiates these calls: your outputs must carry gradients from your own backward (a "
    "`torch.autograd.Function` whose `backward` launches Triton kernels as well; PyTorch must not compute the "
    "gradients either). Each such call is also judged by the gradients of its arguments, for a random incoming "
    "gradient, not only the test's `.sum()`."
)
_DIFFERENTIATES = re.compile(r"\.backward\(|autograd\.grad\(")

# The function form's words for the system prompt's lines about ModelNew (see `system_prompt`).
_FUNCTION_INTRO = (
    "You are given a PyTorch reference *function* (one or more functions, then a test that calls them) and "
    "you write the same function(s), with the same names and signatures, which compute the same results, "
    "faster, with your own `@triton.jit` kernels."
)
_FUNCTION_FORMAT = (
    "- One or two sentences on the approach, then exactly ONE ```python fenced block with the complete module: "
    "imports, kernels, and the reference's function(s) under their own names (no `nn.Module` class, no test). "
    "No other code blocks.\n- The test's calls are the inputs: each call is judged by what it returns and by the tensor "
    "arguments it leaves (write an `out=` argument when one is given; otherwise leave the inputs unchanged)."
)


class UnsupportedPrompt(ValueError):
    """A task and target the toolchain does not verify (one-line reason)."""


def function_signatures(reference_source: str) -> tuple[tuple[str, str], ...]:
    """(name, `name(arguments)`) of each function a candidate for a function task defines; () for a module
    task or a source that is neither (its verification says why)."""
    from kernelvault.toolchain.function_tasks import function_entries
    from kernelvault.toolchain.tasks import TaskFormatError, parse_task

    try:
        task = parse_task(reference_source, "task", "prompt")
    except TaskFormatError:
        return ()
    entries = function_entries(task)
    if not entries:
        return ()
    tree = ast.parse(reference_source)
    defined = {node.name: node.args for node in tree.body if isinstance(node, ast.FunctionDef)}
    # `Class.method` entries: an autograd function's `apply` takes `forward`'s arguments
    for node in tree.body:
        if isinstance(node, ast.ClassDef):
            for method in node.body:
                if isinstance(method, ast.FunctionDef):
                    defined[f"{node.name}.{method.name}"] = method.args
                    if method.name == "forward" and method.args.args:
                        applied = ast.arguments(**{**vars(method.args), "args": method.args.args[1:]})
                        defined.setdefault(f"{node.name}.apply", applied)  # without `ctx`
    for node in tree.body:  # `layer_norm = LayerNorm.apply`
        if isinstance(node, ast.Assign) and isinstance(node.value, ast.Attribute):
            bound = defined.get(ast.unparse(node.value))
            for target in node.targets:
                if bound is not None and isinstance(target, ast.Name):
                    defined.setdefault(target.id, bound)
    return tuple((name, f"{name}({ast.unparse(defined[name])})") for name in entries if name in defined)


def gpu_family(platform: str) -> str:
    return "nvidia" if platform == "cuda" else "amd"


@cache
def _read(name: str) -> str:
    return (PROMPT_FILES / name).read_text(encoding="utf-8").strip()


def system_prompt(target: str, platform: str, form: str = "module") -> str:
    """The system prompt for a language on the GPU family the platform verifies for, in a task form.

    For a function task the file's opening sentence about `ModelNew` and its answer-format lines about
    `ModelNew`/`Model` are replaced by the function form's; every other line (how kernels are judged, the
    GPU facts) is the same."""
    path = PROMPT_FILES / f"system_{target}_{gpu_family(platform)}.md"
    text = _read(path.name) if path.exists() else SYSTEM_PROMPT
    intro, _, rest = text.partition("\n\n")
    note = platform_notes().get(f"{platform} {target}")
    text = "\n\n".join(part for part in (intro, note, rest) if part)
    if form != "function":
        return text
    lines = []
    for line in text.splitlines():
        if "Model" not in line:
            lines.append(line.replace("a forward that launches", "a function that launches"))
        elif line.startswith("You are"):
            lines.append(re.sub(r"You are given a PyTorch reference program.*$", _FUNCTION_INTRO, line))
        elif line.startswith("- One or two sentences"):
            lines.append(_FUNCTION_FORMAT)
        # other lines about ModelNew's constructor and parameters do not apply to a function
    return "\n".join(lines)


def split_baselines(source: str) -> tuple[str, dict[str, str]]:
    """An optimisation task's source without its `KERNELVAULT_BASELINES` literal, and the baselines it holds
    (`kernelvault.toolchain.optimisation`); any other source as it is, with none."""
    try:
        tree = ast.parse(source)
    except SyntaxError:
        return source, {}
    for node in tree.body:
        if isinstance(node, ast.Assign) and any(
            isinstance(target, ast.Name) and target.id == BASELINES_NAME for target in node.targets
        ):
            try:
                baselines = ast.literal_eval(node.value)
            except (ValueError, SyntaxError, TypeError):
                return source, {}
            lines = source.splitlines(keepends=True)
            kept = "".join(lines[: node.lineno - 1] + lines[node.end_lineno or node.lineno :])
            return kept.rstrip() + "\n", baselines if isinstance(baselines, dict) else {}
    return source, {}


def task_prompt(reference_source: str, target: str) -> str:
    """The first user turn for a task (a function task's when the source is one; see the module docstring). An
    optimisation task's shows its baseline for `target` after the reference, and asks to beat it."""
    reference_source, baselines = split_baselines(reference_source)
    prompt = _reference_prompt(reference_source, target)
    baseline = baselines.get(target)
    if not isinstance(baseline, str):
        return prompt
    head, _, ask = prompt.rpartition("\n\nAnswer with")
    return (
        f"{head}\n\nThis {_TARGET_NAMES[target]} implementation (the baseline) is correct but slow:\n\n"
        f"```python\n{_without_docstring(baseline).rstrip()}\n```\n\n{_OPTIMISE_INSTRUCTIONS}\n\nAnswer with{ask}"
    )


def _without_docstring(code: str) -> str:
    """A baseline without its module docstring: the bundled ones say there why they are slow, which is the
    task's answer, not its statement."""
    try:
        first = ast.parse(code).body[0]
    except (SyntaxError, IndexError):
        return code
    if not (
        isinstance(first, ast.Expr)
        and isinstance(first.value, ast.Constant)
        and isinstance(first.value.value, str)
    ):
        return code
    lines = code.splitlines(keepends=True)
    return "".join(lines[first.end_lineno or 0 :]).lstrip("\n")


_TARGET_NAMES = {"triton": "Triton", "hip": "HIP"}
_OPTIMISE_INSTRUCTIONS = (
    "Your module must compute the same results as the reference and run faster than the baseline: it is timed "
    "against the baseline on the same GPU with the same inputs, and the speedup over the baseline is what "
    "counts. Keep what the baseline gets right (its interface, its handling of every size) and remove what makes "
    "it slow."
)


def _reference_prompt(reference_source: str, target: str) -> str:
    signatures = function_signatures(reference_source)
    if not signatures:
        instructions = _TARGET_INSTRUCTIONS[target]
        return (
            f"Here is a PyTorch reference program:\n\n```python\n{reference_source.rstrip()}\n```\n\n"
            f"{instructions}\n\nAnswer with the complete module in one ```python code block."
        )
    names = [name for name, _ in signatures]
    if target != "triton":
        raise UnsupportedPrompt(
            f"a function task ({', '.join(names)}) takes Triton candidates only: the toolchain refuses {target} "
            "candidates for function tasks (they define ModelNew); use --target triton"
        )
    functions = " and ".join(f"`{name}`" for name in names)
    instructions = _FUNCTION_INSTRUCTIONS.format(
        functions=f"the function{'s' if len(names) > 1 else ''} {functions}",
        signatures=", ".join(f"`{signature}`" for _, signature in signatures),
        those="them" if len(names) > 1 else "it",
    )
    if _DIFFERENTIATES.search(_test_part(reference_source)):
        instructions = f"{instructions} {_GRADIENT_INSTRUCTIONS}"
    return (
        "Here is a PyTorch reference function with the test that calls it (the reference above the `#` line, "
        f"the test below):\n\n```python\n{reference_source.rstrip()}\n```\n\n"
        f"{instructions}\n\nAnswer with the complete module in one ```python code block."
    )


def _test_part(reference_source: str) -> str:
    from kernelvault.toolchain.function_tasks import FunctionTaskError, function_layout

    try:
        return function_layout(reference_source, "task").test
    except FunctionTaskError:
        return ""


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


def check_prompts(tasks: Sequence[Task], target: str) -> None:
    """Raise UnsupportedPrompt, naming them, when some tasks cannot be asked for in `target` (HIP for a
    function task): an agent run refuses before its first model request rather than spend them."""
    refused = [task.name for task in tasks if task.entry and target != "triton"]
    if refused:
        listed = ", ".join(refused[:5]) + (f" and {len(refused) - 5} more" if len(refused) > 5 else "")
        raise UnsupportedPrompt(
            f"{len(refused)} function task(s) ({listed}) take Triton candidates only: the toolchain refuses "
            f"{target} candidates for function tasks (they define ModelNew); use --target triton or other tasks"
        )


def initial_messages(reference_source: str, target: str, platform: str) -> list[dict[str, str]]:
    """System prompt, the few-shot exchange (module tasks only), then the task."""
    form = "function" if function_signatures(reference_source) else "module"
    prompt = task_prompt(reference_source, target)  # raises UnsupportedPrompt before anything else is built
    messages = [{"role": "system", "content": system_prompt(target, platform, form)}]
    example = few_shot(target) if form == "module" else None
    if example is not None:
        messages.append({"role": "user", "content": task_prompt(example[0], target)})
        messages.append({"role": "assistant", "content": example[1]})
    messages.append({"role": "user", "content": prompt})
    return messages


@cache
def platform_notes() -> dict[str, str]:
    """`platform target` -> the system prompt's paragraph on where the kernels are verified."""
    sections = re.split(r"^## +(\w+ \w+)\s*$", _read("platforms.md"), flags=re.MULTILINE)
    return {name: body.strip() for name, body in zip(sections[1::2], sections[2::2], strict=True)}


FUNCTION_VARIANT = " (function tasks)"
OPTIMISATION_VARIANT = " (optimisation tasks)"


@cache
def feedback_templates() -> dict[str, str]:
    """Section title -> template: `kind`, and `kind (function tasks)` / `kind (optimisation tasks)` where
    such a task's differs."""
    text = _read("feedback.md")
    sections = re.split(r"^## +(\w+(?: \((?:function|optimisation) tasks\))?)\s*$", text, flags=re.MULTILINE)
    return {name: body.strip() for name, body in zip(sections[1::2], sections[2::2], strict=True)}

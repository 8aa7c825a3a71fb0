"""The parse stage: take the candidate's code out of a model's answer.

A model answers with markdown that holds ONE fenced python code block (```python, ```py, or an
unlabeled fence when no block is labeled). Several python blocks are a `parse_error`: guessing which
one is "the kernel" would put words in the model's mouth, and the contract we train on is one block.
Blocks in other languages (a shell command, a C++ excerpt) are ignored, and thinking text
(`<think>…</think>`) is dropped before looking. A plain Python file (no fences at all) is taken whole
when it parses as Python, so ready candidate files and KernelBench generations work unchanged.
Anything else is a `parse_error`, recorded with the raw text, never raised.
"""

from __future__ import annotations

import re
from dataclasses import dataclass

from kernelvault.toolchain.source_tree import parse as parse_source

# A fence opens with ``` or ~~~ (three or more), an optional info string, and closes with the same.
_FENCE = re.compile(
    r"^(?P<fence>`{3,}|~{3,})[ \t]*(?P<info>[^\n`]*)\n(?P<body>.*?)^(?P=fence)[ \t]*$",
    re.MULTILINE | re.DOTALL,
)
_PYTHON_LABELS = {"python", "py", "python3"}
# Reasoning models may leave their thinking in the answer; code inside it is not the answer.
_THINK = re.compile(r"<think>.*?</think>", re.DOTALL)


@dataclass(frozen=True)
class ExtractedCode:
    code: str | None  # None when nothing usable was found
    message: str  # why, when code is None; how it was found otherwise


def extract_code(answer: str) -> ExtractedCode:
    text = _THINK.sub("", answer).strip()
    if not text:
        return ExtractedCode(None, "the answer is empty")
    blocks = [(m.group("info").strip().lower(), m.group("body")) for m in _FENCE.finditer(text)]
    if blocks:
        labeled = [body for info, body in blocks if info.split()[:1] and info.split()[0] in _PYTHON_LABELS]
        unlabeled = [body for info, body in blocks if not info]
        chosen = labeled or unlabeled
        if not chosen:
            labels = sorted({info.split()[0] for info, _ in blocks if info})
            return ExtractedCode(None, f"no python code block in the answer (found blocks labeled {labels})")
        if len(chosen) > 1:
            return ExtractedCode(
                None, f"the answer has {len(chosen)} python code blocks; answer with exactly one"
            )
        code = chosen[-1].strip("\n")
        if not code.strip():
            return ExtractedCode(None, "the python code block is empty")
        return ExtractedCode(code + "\n", "one fenced python block")
    if "```" in text:
        return ExtractedCode(None, "unterminated code fence in the answer")
    try:
        parse_source(text)
    except SyntaxError:
        return ExtractedCode(None, "no fenced code block in the answer, and the answer is not Python source")
    return ExtractedCode(text + "\n", "plain Python source")

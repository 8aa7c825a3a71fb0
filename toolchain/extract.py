"""The parse stage: take the candidate's code out of a model's answer.

A model answers with markdown that holds ONE fenced python code block (```python, ```py, or an
unlabeled fence when no block is labeled). Several python blocks are a `parse_error`: guessing which
one is "the kernel" would put words in the model's mouth, and the contract we train on is one block.
Blocks in other languages (a shell command, a C++ excerpt) are ignored, and thinking text
(`<think>…</think>`) is dropped before looking. A plain Python file (no fences at all) is taken whole
when it parses as Python, so ready candidate files and KernelBench generations work unchanged.
Anything else is a `parse_error`, recorded with the raw text, never raised.

Fences are found by a CommonMark parser (markdown-it-py), so a block indented inside a list item or quoted in
a blockquote is read as markdown renders it, without its indentation or `>` markers. Raw HTML is not parsed
as HTML (a stray `</think>` line must not swallow the block after it). CommonMark closes an unclosed fence at
the end of its container; here such a block counts only as an unterminated fence, never as the answer.
"""

from __future__ import annotations

import re
from dataclasses import dataclass

from markdown_it import MarkdownIt

from kernelvault.toolchain.source_tree import parse as parse_source

_MARKDOWN = MarkdownIt("commonmark", {"html": False})
_PYTHON_LABELS = {"python", "py", "python3"}
# Reasoning models may leave their thinking in the answer; code inside it is not the answer.
_THINK = re.compile(r"<think>.*?</think>", re.DOTALL)


@dataclass(frozen=True)
class _Fence:
    info: str  # the info string, lower case ("" for an unlabeled fence)
    body: str
    closed: bool  # False: the answer (or the list item, quote) ended before a closing fence


def _fences(text: str) -> list[_Fence]:
    lines = text.splitlines()
    fences = []
    for token in _MARKDOWN.parse(text):
        if token.type != "fence" or token.map is None:
            continue
        start, end = token.map
        # The block's last line is its closing fence: the fence character, at least as many (list indentation
        # and blockquote markers before it).
        last = lines[end - 1].lstrip(" \t>").rstrip() if start < end - 1 and end <= len(lines) else ""
        closed = len(last) >= len(token.markup) and set(last) == {token.markup[0]}
        fences.append(_Fence(token.info.strip().lower(), token.content, closed))
    return fences


@dataclass(frozen=True)
class ExtractedCode:
    code: str | None  # None when nothing usable was found
    message: str  # why, when code is None; how it was found otherwise


def extract_code(answer: str) -> ExtractedCode:
    text = _THINK.sub("", answer).strip()
    if not text:
        return ExtractedCode(None, "the answer is empty")
    fences = _fences(text)
    blocks = [(fence.info, fence.body) for fence in fences if fence.closed]
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
    if fences:
        return ExtractedCode(None, "unterminated code fence in the answer")
    try:
        parse_source(text)
    except SyntaxError:
        return ExtractedCode(None, "no fenced code block in the answer, and the answer is not Python source")
    return ExtractedCode(text + "\n", "plain Python source")

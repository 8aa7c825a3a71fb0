"""API existence: which ROCm identifiers a QA answer names, and whether the installed headers declare them.

    answer ──► code block + backticked spans of the prose ──► named identifiers ──► inventory lookup
                                                                                    ──► found / internal /
                                                                                        invented / cuda_only /
                                                                                        cuda_named / not_installed

What counts as a ROCm identifier (the rules, so a reader can predict the result):
- a name qualified by a ROCm C++ namespace: `rocprim::block_scan<int, 256>::inclusive_scan` is looked up as
  `rocprim::block_scan::inclusive_scan` (template arguments dropped);
- a name with a ROCm C prefix: `hipMemcpyAsync`, `HIP_DYNAMIC_SHARED`, `rocsparse_scsrmv`,
  `ROCSPARSE_...`, `hipsparseScsrmv`, `rocrand_...`, `hiprand...`;
- HIP's device builtins: `__syncthreads`, `__shfl_*`, `__ballot`, `atomic*`, `warpSize`, ...;
- CUDA-only names (`cudaMemcpy`, `cublas...`, `__shfl_down_sync`): `cuda_only` unless the headers declare them,
  when the code uses them; `cuda_named` when only the prose names them (a porting answer compares with CUDA),
  which does not count against the answer.

Prose outside backticks is not scanned (it is prose: "HIP" and "hipcc" are words there), nor are header
names (`#include <rocrand/rocrand_kernel.h>`, or `rocrand/rocrand_kernel.h` in backticks). Names the answer
defines itself (`#define HIP_CHECK`, its own functions, structs and aliases) are not ROCm identifiers.
Calls through an object (`scan.inclusive_scan(...)`) are left to the compiler, which sees the types. A
ROCm name in backticks counts as named even in a sentence that says it does not exist: the check reads
names, not sentences.
Names of ROCm libraries that are not installed here (hipCUB, rocBLAS, rocThrust, MIOpen...) are
`not_installed`: not checked, and not counted as invented.

A member that the inventory has under another class of the same namespace (it may be inherited) is taken
as found: the check errs toward not calling a real name invented.
"""

from __future__ import annotations

import re

from kernelvault.contracts import IdentifierCheck
from kernelvault.toolchain.rocm_inventory import ApiInventory

FOUND, INTERNAL, INVENTED, CUDA_ONLY, CUDA_NAMED, NOT_INSTALLED = (
    "found",
    "internal",
    "invented",
    "cuda_only",
    "cuda_named",
    "not_installed",
)

_CHECKED_NAMESPACES = ("rocprim", "rocrand_cpp", "hiprand_cpp")
_UNINSTALLED_NAMESPACES = ("hipcub", "rocthrust", "thrust", "rocwmma", "ck", "miopen", "rccl")
_QUALIFIED_START = re.compile(r"\b(" + "|".join(_CHECKED_NAMESPACES + _UNINSTALLED_NAMESPACES) + r")\s*::")
_PREFIXED = re.compile(
    r"\b(?:hip[A-Z]\w*|HIP_[A-Z0-9_]+|hipsparse[A-Z]\w*|HIPSPARSE_\w+|rocsparse_\w+|ROCSPARSE_\w+|rocrand_\w+|"
    r"ROCRAND_\w+|hiprand[A-Z]\w*|HIPRAND_\w+|ROCPRIM_\w+|warpSize|atomic[A-Z]\w*|"
    r"__(?:syncthreads\w*|shfl\w*|ballot\w*|lane_id|popc\w*|ffs\w*|clz\w*|threadfence\w*|"
    r"any|all|reduce_\w+|match_\w+))\b"
)
_UNINSTALLED_PREFIXED = re.compile(r"\b(?:rocblas_\w+|hipblas[A-Z]\w*|rocfft_\w+|hipfft[A-Z]\w*|miopen[A-Z]\w*|"
                                   r"rocsolver_\w+|hipsolver[A-Z]\w*|rccl[A-Z]\w*)\b")  # fmt: skip
_CUDA_ONLY = re.compile(
    r"\b(?:cuda[A-Z]\w*|cu(?:blas|sparse|rand|fft|dnn|solver)\w*|CU(?:BLAS|SPARSE|RAND|DA)_\w+|"
    r"__\w+_sync|__syncwarp|__activemask|__nv_\w+|__ldg|__ldcg|__stcg|__cvta\w*|nvcuda::\w+)\b"
)
_TOOL_NAMES = {"hipcc", "hipify", "hipconfig", "hipify_perl"}  # tools, not API
_DEFINED = (
    re.compile(r"#\s*define\s+(\w+)"),
    re.compile(r"\b(?:struct|class|union|enum(?:\s+class)?|namespace)\s+(\w+)"),
    re.compile(r"\busing\s+(\w+)\s*="),
    re.compile(r"\btypedef\b[^;]*?\b(\w+)\s*;"),
    re.compile(
        r"\b(\w+)\s*\([^;{}()]*(?:\([^;{}()]*\)[^;{}()]*)*\)\s*(?:const\s*)?\{"
    ),  # a function definition
)
_KEYWORDS = {"if", "for", "while", "switch", "return", "sizeof", "catch"}
_FENCE = re.compile(r"^```[^\n]*\n.*?^```\s*$", re.DOTALL | re.MULTILINE)
_BACKTICKS = re.compile(r"`([^`\n]+)`")
_HEADER_PATH = re.compile(r"^<?[\w./-]+\.(?:h|hpp|inl|cuh)>?$")
_INCLUDE = re.compile(r"^\s*#\s*include\b.*$", re.MULTILINE)


def _skip_template_arguments(text: str, start: int) -> int:
    """Index after a balanced `<...>` starting at `start`; `start` when it is not one (a comparison)."""
    depth = 0
    for index in range(start, min(len(text), start + 400)):
        char = text[index]
        if char == "<":
            depth += 1
        elif char == ">":
            depth -= 1
            if depth == 0:
                return index + 1
        elif char in ";{}":
            return start
    return start


def _qualified_names(text: str) -> list[str]:
    names: list[str] = []
    for match in _QUALIFIED_START.finditer(text):
        parts, position = [match.group(1)], match.end()
        while True:
            ident = re.compile(r"\s*(~?\w+)").match(text, position)
            if ident is None:
                break
            parts.append(ident.group(1))
            position = ident.end()
            after = re.compile(r"\s*").match(text, position).end()
            if after < len(text) and text[after] == "<":
                position = _skip_template_arguments(text, after)
                if position == after:
                    break
            scope = re.compile(r"\s*::").match(text, position)
            if scope is None:
                break
            position = scope.end()
        if len(parts) > 1:
            names.append("::".join(parts))
    return names


def defined_names(code: str) -> set[str]:
    """Names the snippet defines itself: never ROCm identifiers, whatever their prefix."""
    names: set[str] = set()
    for pattern in _DEFINED:
        names.update(match.group(1) for match in pattern.finditer(code))
    return names - _KEYWORDS


def named_identifiers(prose: str, code: str) -> list[tuple[str, str]]:
    """(name, where) for every ROCm or CUDA identifier the answer names, first appearance first, no repeats."""
    code = _INCLUDE.sub("", code)  # `#include <rocrand/rocrand_kernel.h>` names a file, not `rocrand_kernel`
    spans = [
        ("code", code),
        *(
            ("text", span)
            for span in _BACKTICKS.findall(_FENCE.sub("", prose))
            if not _HEADER_PATH.match(span)
        ),
    ]  # `rocrand/rocrand_kernel.h` is a file
    own = defined_names(code)
    seen: dict[str, str] = {}
    for where, text in spans:
        qualified = _qualified_names(text)
        simple = [match.group(0) for pattern in (_PREFIXED, _UNINSTALLED_PREFIXED, _CUDA_ONLY)
                  for match in pattern.finditer(_QUALIFIED_START.sub(" ", text))]  # fmt: skip
        for name in (*qualified, *simple):
            if name not in own and name not in _TOOL_NAMES and name not in seen:
                seen[name] = where
    return list(seen.items())


def looks_like_rocm_name(name: str) -> bool:
    """A ROCm name by the rules above (an undeclared one is an API error, not a fragment's missing variable)."""
    return bool(_PREFIXED.fullmatch(name) or _QUALIFIED_START.match(name))


def check_identifier(name: str, where: str, inventory: ApiInventory) -> IdentifierCheck:
    topic = inventory.lookup(name)
    if topic is not None:
        return IdentifierCheck(
            name, where, INTERNAL if topic.internal else FOUND, topic.library, topic.header
        )
    root = name.split("::", 1)[0]
    if root in _UNINSTALLED_NAMESPACES or _UNINSTALLED_PREFIXED.fullmatch(name):
        return IdentifierCheck(name, where, NOT_INSTALLED, None, None)
    if _CUDA_ONLY.fullmatch(name):
        return IdentifierCheck(name, where, CUDA_ONLY if where == "code" else CUDA_NAMED, None, None)
    if "::" in name:
        owner, member = name.rsplit("::", 1)
        owner_topic = inventory.lookup(owner)
        if owner_topic is not None and owner_topic.kind in ("class", "template"):
            # an inherited member, or one declared in a base: any class of the namespace that has it
            relative = next((topic for topic in inventory.topics if topic.name.startswith(root + "::")
                             and topic.name.endswith("::" + member) and topic.kind in ("member", "field")), None)  # fmt: skip
            if relative is not None:
                return IdentifierCheck(name, where, FOUND, relative.library, relative.header)
    return IdentifierCheck(name, where, INVENTED, None, None)


def check_identifiers(prose: str, code: str, inventory: ApiInventory) -> list[IdentifierCheck]:
    return [check_identifier(name, where, inventory) for name, where in named_identifiers(prose, code)]

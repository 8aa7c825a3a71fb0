"""Imports flow one way: contracts at the bottom, the CLI at the top, and no module imports itself in a circle.

Read from the source with `ast` (nothing is imported), counting every import: at module level, inside a
function, and under `TYPE_CHECKING`, since an import moved into a function to dodge a circle is still one.
A new back-arrow or circle fails here; the few that remain are listed with what it takes to remove them.
"""

from __future__ import annotations

import ast
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
SUBPACKAGES = ("toolchain", "agents", "corpus", "pipelines", "sft", "rl")

# Floors, lowest first: a module may import its own floor and the floors below it, never one above.
FLOORS: tuple[tuple[str, ...], ...] = (
    ("kernelvault", "kernelvault.contracts", "kernelvault.http_json", "kernelvault.simulated_openai"),
    # `kernelvault.hip` is the toolchain's HIP loader (`toolchain.hip_runtime`) under the name candidates import:
    # the worker snapshots that module before a candidate runs, so it sits on the toolchain's floor.
    ("kernelvault.toolchain", "kernelvault.hip"),
    ("kernelvault.agents",),
    ("kernelvault.corpus",),
    ("kernelvault.pipelines",),
    ("kernelvault.sft",),
    ("kernelvault.rl",),
    # `python -m kernelvault` is the command line under the package's own name.
    ("kernelvault.cli", "kernelvault.__main__"),
)

# Back-arrows that remain, as (from module, to module): none, and a new one fails.
KNOWN_BACK_ARROWS: set[tuple[str, str]] = set()
# Circles that remain, each as the set of its modules (none: the list stays empty).
KNOWN_CIRCLES: set[frozenset[str]] = set()


def project_modules() -> dict[str, Path]:
    folders = {
        "kernelvault": ROOT / "kernelvault",
        **{f"kernelvault.{sub}": ROOT / sub for sub in SUBPACKAGES},
    }
    modules: dict[str, Path] = {}
    for package, folder in folders.items():
        for path in folder.rglob("*.py"):
            parts = list(path.relative_to(folder).with_suffix("").parts)
            if parts[-1] == "__init__":
                parts.pop()
            modules[".".join([package, *parts])] = path
    return modules


def imports_of(name: str, path: Path, modules: dict[str, Path]) -> set[str]:
    """The project modules `name` imports anywhere in its text (a `from package import module` names the module)."""
    package = name.split(".") if path.name == "__init__.py" else name.split(".")[:-1]
    found: set[str] = set()
    for node in ast.walk(ast.parse(path.read_text())):
        if isinstance(node, ast.Import):
            targets = [alias.name for alias in node.names]
        elif isinstance(node, ast.ImportFrom):
            base = node.module or ""
            if node.level:
                base = ".".join(package[: len(package) - node.level + 1] + ([base] if base else []))
            targets = [f"{base}.{alias.name}" for alias in node.names] + [base]
        else:
            continue
        for target in targets:
            while target and target not in modules:
                target = target.rpartition(".")[0]
            if target and target != name:
                found.add(target)
    return found


def import_graph() -> dict[str, set[str]]:
    modules = project_modules()
    return {name: imports_of(name, path, modules) for name, path in modules.items()}


def floor_of(module: str) -> int:
    best, floor = -1, -1
    for number, prefixes in enumerate(FLOORS):
        for prefix in prefixes:
            if (module == prefix or module.startswith(prefix + ".")) and len(prefix) > best:
                best, floor = len(prefix), number
    assert floor >= 0, f"{module} is on no floor: add it to FLOORS"
    return floor


def circles(graph: dict[str, set[str]]) -> list[frozenset[str]]:
    """Strongly connected components of more than one module (Tarjan's algorithm, iteratively)."""
    index: dict[str, int] = {}
    low: dict[str, int] = {}
    stack: list[str] = []
    on_stack: set[str] = set()
    found: list[frozenset[str]] = []
    for root in graph:
        if root in index:
            continue
        work = [(root, iter(sorted(graph[root])))]
        index[root] = low[root] = len(index)
        stack.append(root)
        on_stack.add(root)
        while work:
            node, edges = work[-1]
            step = next(edges, None)
            if step is not None:
                if step not in index:
                    index[step] = low[step] = len(index)
                    stack.append(step)
                    on_stack.add(step)
                    work.append((step, iter(sorted(graph.get(step, ())))))
                elif step in on_stack:
                    low[node] = min(low[node], index[step])
                continue
            work.pop()
            if work:
                low[work[-1][0]] = min(low[work[-1][0]], low[node])
            if low[node] == index[node]:
                component = set()
                while True:
                    member = stack.pop()
                    on_stack.discard(member)
                    component.add(member)
                    if member == node:
                        break
                if len(component) > 1:
                    found.append(frozenset(component))
    return found


def test_every_import_points_down_or_sideways() -> None:
    back = {
        (source, target)
        for source, targets in import_graph().items()
        for target in targets
        if floor_of(target) > floor_of(source)
    }
    new = sorted(back - KNOWN_BACK_ARROWS)
    assert not new, f"imports pointing up a floor (see FLOORS): {new}"
    gone = sorted(KNOWN_BACK_ARROWS - back)
    assert not gone, f"removed back-arrows still listed in KNOWN_BACK_ARROWS: {gone}"


def test_no_new_import_circle() -> None:
    found = set(circles(import_graph()))
    new = [sorted(circle) for circle in found - KNOWN_CIRCLES]
    assert not new, f"import circles: {new}"
    gone = [sorted(circle) for circle in KNOWN_CIRCLES - found]
    assert not gone, f"removed circles still listed in KNOWN_CIRCLES: {gone}"


def test_the_search_sees_a_circle_and_a_back_arrow() -> None:
    """The checks above can fail: a two-module circle is found, and the CLI is above the toolchain."""
    assert circles({"a": {"b"}, "b": {"a"}, "c": {"a"}}) == [frozenset({"a", "b"})]
    assert floor_of("kernelvault.cli.corpus") > floor_of("kernelvault.toolchain.verify")
    graph = import_graph()
    assert (
        "kernelvault.toolchain.judge" in graph["kernelvault.toolchain.worker_lane"]
    )  # found, at module level

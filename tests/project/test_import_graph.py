"""No import circle among attnwidgets' modules (docs/architecture.md: data flows one way).

Every import counts, those inside functions and under ``TYPE_CHECKING`` too: a lazy import that points back up is
still a circle a reader has to hold in their head, and the layer it hides is what makes a module hard to move.
An edge goes from a module to the module it names (``from .x import y`` names ``x``; ``from . import x`` names the
submodule ``x``, not the package); a package's ``__init__`` is a module like the others, so a submodule that
imports its own package (which imports it back) is a circle too.
"""

from __future__ import annotations

import ast
import sys
from pathlib import Path

from test_architecture import PACKAGE, dotted, imports, modules


def own_module(name: str, known: set[str]) -> str | None:
    """The module of ours an imported dotted name lands in (``attnwidgets.x.y`` where ``y`` is a function: ``x``)."""
    parts = name.split(".")
    while parts and parts[0] == "attnwidgets":
        if ".".join(parts) in known:
            return ".".join(parts)
        parts = parts[:-1]
    return None


def import_graph(paths: list[Path]) -> dict[str, set[str]]:
    known = {dotted(p) for p in paths}
    graph: dict[str, set[str]] = {m: set() for m in known}
    for path in paths:
        me = dotted(path)
        for _line, module, names in imports(path):
            if names and all(f"{module}.{name}" in known for name in names):
                continue  # ``from . import x``: the submodules are the edges (listed by imports()), not the package
            target = own_module(module, known)
            if target is not None and target != me:
                graph[me].add(target)
    return graph


def cycles(graph: dict[str, set[str]]) -> list[list[str]]:
    """Each strongly connected component of more than one module (Tarjan), with one circle through it spelled out."""
    sys.setrecursionlimit(max(sys.getrecursionlimit(), 10 * len(graph)))
    index: dict[str, int] = {}
    low: dict[str, int] = {}
    stack: list[str] = []
    on: set[str] = set()
    found: list[list[str]] = []

    def visit(v: str) -> None:
        index[v] = low[v] = len(index)
        stack.append(v)
        on.add(v)
        for w in sorted(graph[v]):
            if w not in index:
                visit(w)
                low[v] = min(low[v], low[w])
            elif w in on:
                low[v] = min(low[v], index[w])
        if low[v] == index[v]:
            component = []
            while True:
                w = stack.pop()
                on.discard(w)
                component.append(w)
                if w == v:
                    break
            if len(component) > 1:
                found.append(sorted(component))

    for v in sorted(graph):
        if v not in index:
            visit(v)
    return found


def circle_through(graph: dict[str, set[str]], component: list[str]) -> list[str]:
    """One circle inside a component: a shortest path from its first module back to itself."""
    members = set(component)
    start = component[0]
    paths = {w: [start, w] for w in graph[start] if w in members}
    frontier = list(paths)
    while start not in paths:
        nxt = []
        for v in frontier:
            for w in sorted(graph[v] & members):
                if w not in paths:
                    paths[w] = paths[v] + [w]
                    nxt.append(w)
        frontier = nxt
    return paths[start]


def test_the_graph_sees_lazy_and_relative_imports(tmp_path: Path) -> None:
    """The reader itself: a function-level relative import is an edge, and a two-module loop is found."""
    graph = {"attnwidgets.a": {"attnwidgets.b"}, "attnwidgets.b": {"attnwidgets.a"}, "attnwidgets.c": set()}
    assert cycles(graph) == [["attnwidgets.a", "attnwidgets.b"]]
    assert circle_through(graph, ["attnwidgets.a", "attnwidgets.b"]) == ["attnwidgets.a", "attnwidgets.b",
                                                                         "attnwidgets.a"]
    base = PACKAGE / "widgets" / "_base.py"
    found = import_graph(modules())
    assert "attnwidgets.viewdata.wire" in found[dotted(base)]  # a module-level relative import
    assert "attnwidgets.fallback" in found[dotted(base)]  # imported inside __repr__
    tree = ast.parse(base.read_text(encoding="utf-8"))
    assert any(isinstance(n, ast.ImportFrom) and n.module == "fallback" for n in ast.walk(tree))


def test_no_import_circle() -> None:
    graph = import_graph(modules())
    found = cycles(graph)
    message = "\n".join(f"{len(c)} modules: " + " -> ".join(circle_through(graph, c)) + f"\n  (all: {', '.join(c)})"
                        for c in found)
    assert not found, "import circles:\n" + message

"""The folder tree is the architecture: imports flow eval <- kb, lm <- bridge <- kbcompare, and no module imports
itself back through others (function-level imports count: a lazy import is still a dependency)."""

from __future__ import annotations

import ast
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
PACKAGES = ("eval", "kb", "lm", "bridge", "kbcompare")
ALLOWED = {"eval": {"eval"}, "kb": {"eval", "kb"}, "lm": {"eval", "lm"}, "bridge": set(PACKAGES) - {"kbcompare"},
           "kbcompare": set(PACKAGES)}


def _module(path: Path) -> str:
    parts = list(path.relative_to(ROOT).with_suffix("").parts)
    return ".".join(parts[:-1] if parts[-1] == "__init__" else parts)


def import_graph() -> dict[str, set[str]]:
    modules = {_module(p): p for pkg in PACKAGES for p in (ROOT / pkg).rglob("*.py")}

    def owner(name: str) -> str | None:
        while name and name not in modules:
            name = name.rpartition(".")[0]
        return name or None

    graph: dict[str, set[str]] = {}
    for name, path in modules.items():
        deps: set[str] = set()
        for node in ast.walk(ast.parse(path.read_text(encoding="utf-8"))):
            if isinstance(node, ast.Import):
                targets = [a.name for a in node.names]
            elif isinstance(node, ast.ImportFrom) and node.level == 0 and node.module:
                targets = [node.module, *(f"{node.module}.{a.name}" for a in node.names)]
            else:
                continue
            deps |= {m for t in targets if t.split(".")[0] in PACKAGES and (m := owner(t)) and m != name}
        graph[name] = deps
    return graph


def cycles(graph: dict[str, set[str]]) -> list[list[str]]:
    """Strongly connected components with more than one module (Tarjan)."""
    index: dict[str, int] = {}
    low: dict[str, int] = {}
    stack: list[str] = []
    found: list[list[str]] = []

    def visit(v: str) -> None:
        index[v] = low[v] = len(index)
        stack.append(v)
        for w in graph[v]:
            if w not in index:
                visit(w)
                low[v] = min(low[v], low[w])
            elif w in stack:
                low[v] = min(low[v], index[w])
        if low[v] == index[v]:
            component = []
            while True:
                w = stack.pop()
                component.append(w)
                if w == v:
                    break
            if len(component) > 1:
                found.append(sorted(component))

    for v in sorted(graph):
        if v not in index:
            visit(v)
    return found


def test_no_import_cycles():
    assert cycles(import_graph()) == []


def test_imports_flow_one_way():
    wrong = sorted((m, d) for m, deps in import_graph().items() for d in deps
                   if d.split(".")[0] not in ALLOWED[m.split(".")[0]])
    assert wrong == []


def test_the_cycle_finder_finds_a_cycle():
    assert cycles({"a": {"b"}, "b": {"c"}, "c": {"a"}, "d": {"a"}}) == [["a", "b", "c"]]


def test_bridge_is_grouped_by_role():
    flat = sorted(p.name for p in (ROOT / "bridge").glob("*.py") if p.name != "__init__.py")
    assert flat == []
    for package in ("cli", "predictors", "run", "experiments", "analysis", "report", "serve"):
        assert (ROOT / "bridge" / package / "__init__.py").exists(), package

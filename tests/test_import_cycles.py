"""No import cycle inside backend/: the import graph of its modules (module-level imports and
the imports inside functions alike, read with ast, nothing is executed) has no cycle.

A function-level import only hides a cycle from Python's loader; the two modules still depend
on each other, so they count here too. `if TYPE_CHECKING:` imports count as well: a type that
needs one is a sign the type lives in the wrong module.
"""

from __future__ import annotations

import ast
from pathlib import Path

import pytest

BACKEND = Path(__file__).resolve().parents[1] / "backend"
PACKAGE = "backend"


def module_name(path: Path, root: Path = BACKEND, package: str = PACKAGE) -> str:
    parts = [package, *path.relative_to(root).with_suffix("").parts]
    return ".".join(parts[:-1] if parts[-1] == "__init__" else parts)


def _resolve(importer: str, is_package: bool, node: ast.ImportFrom) -> str:
    if not node.level:
        return node.module or ""
    base = importer.split(".") if is_package else importer.split(".")[:-1]
    base = base[: len(base) - (node.level - 1)]
    return ".".join(base + ([node.module] if node.module else []))


def imports_of(path: Path, modules: set[str], root: Path = BACKEND, package: str = PACKAGE) -> set[str]:
    """The modules of `modules` that the file imports anywhere in its body. `from a import b`
    counts as an import of `a.b` when that is a module, else of `a`."""
    name = module_name(path, root, package)
    tree = ast.parse(path.read_text(encoding="utf-8"), filename=str(path))
    found: set[str] = set()
    for node in ast.walk(tree):
        if isinstance(node, ast.Import):
            targets = [alias.name for alias in node.names]
        elif isinstance(node, ast.ImportFrom):
            base = _resolve(name, path.name == "__init__.py", node)
            targets = [f"{base}.{alias.name}" if f"{base}.{alias.name}" in modules else base for alias in node.names]
        else:
            continue
        for target in targets:
            while target and target not in modules:  # `import backend.x.y` of a name inside a module
                target = target.rpartition(".")[0]
            if target and target != name:
                found.add(target)
    return found


def import_graph(root: Path = BACKEND, package: str = PACKAGE) -> dict[str, set[str]]:
    files = sorted(root.rglob("*.py"))
    modules = {module_name(f, root, package) for f in files}
    return {module_name(f, root, package): imports_of(f, modules, root, package) for f in files}


def find_cycles(graph: dict[str, set[str]]) -> list[list[str]]:
    """One cycle per strongly connected component with more than one module (Tarjan), each as
    the path a -> b -> ... -> a, so the message names the imports to cut."""
    index: dict[str, int] = {}
    low: dict[str, int] = {}
    stack: list[str] = []
    on_stack: set[str] = set()
    components: list[list[str]] = []

    def visit(v: str) -> None:
        index[v] = low[v] = len(index)
        stack.append(v)
        on_stack.add(v)
        for w in sorted(graph.get(v, ())):
            if w not in index:
                visit(w)
                low[v] = min(low[v], low[w])
            elif w in on_stack:
                low[v] = min(low[v], index[w])
        if low[v] == index[v]:
            comp = []
            while True:
                w = stack.pop()
                on_stack.discard(w)
                comp.append(w)
                if w == v:
                    break
            if len(comp) > 1:
                components.append(sorted(comp))

    for v in sorted(graph):
        if v not in index:
            visit(v)
    return [_cycle_in(graph, set(comp)) for comp in components]


def _cycle_in(graph: dict[str, set[str]], comp: set[str]) -> list[str]:
    start = min(comp)
    path, seen = [start], {start}
    while True:  # every module of a strongly connected component has a successor inside it
        nxt = sorted(w for w in graph[path[-1]] if w in comp)
        back = [w for w in nxt if w in seen]
        if back:
            return path[path.index(back[0]):] + [back[0]]
        path.append(nxt[0])
        seen.add(nxt[0])


def test_the_checker_finds_a_function_level_cycle(tmp_path):
    pkg = tmp_path / "pkg"
    (pkg / "sub").mkdir(parents=True)
    (pkg / "__init__.py").write_text("")
    (pkg / "sub" / "__init__.py").write_text("")
    (pkg / "a.py").write_text("from pkg.sub import b\n")
    (pkg / "sub" / "b.py").write_text("def f():\n    from ..c import thing\n    return thing\n")
    (pkg / "c.py").write_text("import pkg.a\nthing = 1\n")
    (pkg / "d.py").write_text("from . import a\n")
    graph = import_graph(pkg, "pkg")
    assert graph["pkg.sub.b"] == {"pkg.c"} and graph["pkg.d"] == {"pkg.a"}
    assert find_cycles(graph) == [["pkg.a", "pkg.sub.b", "pkg.c", "pkg.a"]]
    (pkg / "c.py").write_text("thing = 1\n")
    assert find_cycles(import_graph(pkg, "pkg")) == []


def test_backend_has_no_import_cycle():
    graph = import_graph()
    assert "backend.service" in graph and graph["backend.service"], "the import graph came out empty"
    cycles = find_cycles(graph)
    if cycles:
        pytest.fail(
            "backend/ has import cycles (function-level imports included); move the shared code into a module both "
            "can import:\n" + "\n".join("  " + " -> ".join(c) for c in cycles)
        )

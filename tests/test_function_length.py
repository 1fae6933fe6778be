"""The house keeps backend functions short enough to read in one screen: none over 80 lines.

UI layout code (ui/*.py `build` functions, which declare components) is exempt; the backend and
the UI's pure helpers are not. The check reads the source with ast, so it fails the moment a long
function lands, and names it."""

from __future__ import annotations

import ast
from pathlib import Path

import pytest

REPO = Path(__file__).resolve().parents[1]
MAX_LINES = 80


def long_functions(root: Path, limit: int = MAX_LINES, exempt: frozenset[str] = frozenset()) -> list[str]:
    """'path:line name (n lines)' for every function under root longer than limit lines."""
    found = []
    for path in sorted(root.rglob("*.py")):
        tree = ast.parse(path.read_text(encoding="utf-8"), filename=str(path))
        for node in ast.walk(tree):
            if isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef)) and node.name not in exempt:
                n = node.end_lineno - node.lineno + 1
                if n > limit:
                    found.append(f"{path.relative_to(REPO)}:{node.lineno} {node.name} ({n} lines)")
    return found


def test_no_backend_function_is_over_80_lines():
    assert long_functions(REPO / "backend") == []


def test_no_ui_function_but_layout_is_over_80_lines():
    assert long_functions(REPO / "ui", exempt=frozenset({"build"})) == []


def test_the_check_sees_a_long_function(tmp_path, monkeypatch):
    monkeypatch.setattr(f"{__name__}.REPO", tmp_path)
    body = "\n".join(f"    x{i} = {i}" for i in range(MAX_LINES))
    (tmp_path / "m.py").write_text(f"def long_one():\n{body}\n", encoding="utf-8")
    assert long_functions(tmp_path) == [f"m.py:1 long_one ({MAX_LINES + 1} lines)"]
    assert long_functions(tmp_path, exempt=frozenset({"long_one"})) == []


if __name__ == "__main__":  # pragma: no cover
    raise SystemExit(pytest.main([__file__, "-q"]))

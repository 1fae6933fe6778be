"""The house rules of DESIGN.md section 1, checked on the source: ui/ talks to the backend only
through service/types/config/errors and never touches the heavy libraries; backend/ never
imports UI libraries; the README's configuration table lists every setting."""

from __future__ import annotations

import ast
import re
from pathlib import Path

import pytest

from backend.config import iter_setting_names

REPO_ROOT = Path(__file__).resolve().parents[1]
UI_DIR = REPO_ROOT / "ui"
BACKEND_DIR = REPO_ROOT / "backend"
README = REPO_ROOT / "README.md"

UI_ALLOWED_BACKEND = {"backend.service", "backend.types", "backend.config", "backend.errors"}
UI_FORBIDDEN = {"fitz", "pymupdf", "faiss", "torch", "transformers", "sentence_transformers"}
BACKEND_FORBIDDEN = {"gradio", "plotly", "pyvis"}


def imported_modules(path: Path) -> list[tuple[int, str]]:
    """(line, dotted module) for every absolute import in a file, including `from a import b`
    as both 'a' and 'a.b' (b may be a module)."""
    tree = ast.parse(path.read_text(encoding="utf-8"), filename=str(path))
    out: list[tuple[int, str]] = []
    for node in ast.walk(tree):
        if isinstance(node, ast.Import):
            out.extend((node.lineno, alias.name) for alias in node.names)
        elif isinstance(node, ast.ImportFrom) and node.level == 0 and node.module:
            if node.module != "backend":  # `from backend import service` is backend.service, not the package
                out.append((node.lineno, node.module))
            out.extend((node.lineno, f"{node.module}.{alias.name}") for alias in node.names)
    return out


def _py_files(folder: Path) -> list[Path]:
    return sorted(p for p in folder.rglob("*.py") if "__pycache__" not in p.parts)


def test_the_import_checker_sees_imports(tmp_path):
    sample = tmp_path / "m.py"
    sample.write_text("import os\nfrom backend.graph import store\nfrom backend import service\n\ndef f():\n    import torch\n")
    mods = {m for _, m in imported_modules(sample)}
    assert {"os", "backend.graph", "backend.graph.store", "backend.service", "torch"} <= mods
    assert "backend" not in mods


def test_ui_imports_only_the_backend_facade():
    if not UI_DIR.is_dir():
        pytest.skip("ui/ does not exist yet")
    files = _py_files(UI_DIR)
    assert files
    problems = []
    for path in files:
        for line, mod in imported_modules(path):
            top = mod.split(".")[0]
            rel = path.relative_to(REPO_ROOT)
            if top in UI_FORBIDDEN:
                problems.append(f"{rel}:{line} imports {mod}")
            if top == "backend" and mod != "backend":
                allowed = any(mod == a or mod.startswith(a + ".") for a in UI_ALLOWED_BACKEND)
                # `from backend.types import Answer` also yields 'backend.types.Answer': fine.
                if not allowed:
                    problems.append(f"{rel}:{line} imports {mod}")
            if mod == "backend":
                problems.append(f"{rel}:{line} imports the backend package itself")
    assert problems == [], "ui/ must use backend.service/types/config/errors only:\n" + "\n".join(problems)


def test_backend_never_imports_ui_libraries():
    problems = []
    for path in _py_files(BACKEND_DIR):
        for line, mod in imported_modules(path):
            top = mod.split(".")[0]
            if top in BACKEND_FORBIDDEN or top == "ui":
                problems.append(f"{path.relative_to(REPO_ROOT)}:{line} imports {mod}")
    assert problems == [], "\n".join(problems)


def test_readme_lists_every_setting():
    if not README.is_file():
        pytest.skip("README.md is not written yet")
    text = README.read_text(encoding="utf-8")
    listed = set(re.findall(r"^\|\s*`(STRATA_[A-Z0-9_]+)`\s*\|", text, flags=re.MULTILINE))
    if not listed:
        pytest.skip("README.md has no configuration table yet")
    names = {name for name, _default, _desc in iter_setting_names()}
    assert names, "iter_setting_names() returned nothing"
    missing = sorted(names - listed)
    assert missing == [], f"settings missing from the README table: {missing}"
    unknown = sorted(listed - names)
    assert unknown == [], f"README lists settings that do not exist: {unknown}"

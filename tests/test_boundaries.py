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

# backend.logs: the start-up logging set-up (no heavy imports), which app.py reaches through ui.common.
UI_ALLOWED_BACKEND = {"backend.service", "backend.types", "backend.config", "backend.errors", "backend.logs"}
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


# ---------------------------------------------------------------- strategy packages

RETRIEVAL_DIR = BACKEND_DIR / "retrieval"
# What a strategy may import from the backend: the retrieval base, scoring and the shared modules
# (backend.retrieval.*; never another strategy: test_no_strategy_imports_another...), the data model, the LLM protocol and task modules, and the read APIs of
# the graph and the indexes, with index.texts (pure functions: the text a unit is indexed by, the
# ways a title is written). Never the service, ingest, evaluation, packing, reader, the store
# (a writer) or the settings (parameter defaults are resolved by the retrieval base).
STRATEGY_ALLOWED = (
    "backend.retrieval", "backend.types",
    "backend.llm.base", "backend.llm.task", "backend.llm.text",
    "backend.graph.corpus", "backend.graph.entities",
    "backend.index.encoders", "backend.index.image", "backend.index.lexical", "backend.index.texts", "backend.index.vector",
)
# The shared modules of backend/retrieval/ themselves (they build what strategies use).
RETRIEVAL_SHARED = {"base.py", "scoring.py", "__init__.py"}


def strategy_import_problems(path: Path) -> list[str]:
    """The backend imports of a strategy module outside STRATEGY_ALLOWED, as 'file:line imports x'."""
    problems = []
    for line, mod in imported_modules(path):
        if mod.split(".")[0] != "backend":
            continue
        if not any(mod == a or mod.startswith(a + ".") for a in STRATEGY_ALLOWED):
            problems.append(f"{path.name}:{line} imports {mod}")
    return problems


def _strategy_files() -> list[Path]:
    return [p for p in _py_files(RETRIEVAL_DIR) if not (p.parent == RETRIEVAL_DIR and p.name in RETRIEVAL_SHARED)]


def test_the_strategy_checker_flags_a_strategy_that_reaches_into_the_service(tmp_path):
    bad = tmp_path / "bad.py"
    bad.write_text(
        "from backend.retrieval.base import Retriever\nfrom backend.llm.task import LLMTask\n"
        "def f():\n    from backend.service import Service\n    import backend.ingest.pipeline\n"
        "from backend.config import Settings\nfrom backend.llm.openai_compat import OpenAIBackend\n"
    )
    assert sorted(strategy_import_problems(bad)) == [
        "bad.py:4 imports backend.service", "bad.py:4 imports backend.service.Service",
        "bad.py:5 imports backend.ingest.pipeline",
        "bad.py:6 imports backend.config", "bad.py:6 imports backend.config.Settings",
        "bad.py:7 imports backend.llm.openai_compat", "bad.py:7 imports backend.llm.openai_compat.OpenAIBackend",
    ]


def test_strategy_packages_import_only_base_scoring_types_llm_protocol_and_read_apis():
    files = _strategy_files()
    names = {p.relative_to(RETRIEVAL_DIR).as_posix() for p in files}
    assert {"fif/retriever.py", "lilac/retriever.py", "mirag/retriever.py", "hikey.py"} <= names, names
    problems = [f"{p.relative_to(REPO_ROOT)}: {x}" for p in files for x in strategy_import_problems(p)]
    assert problems == [], "a strategy imports beyond its boundary:\n" + "\n".join(problems)


def test_a_strategy_with_more_than_one_file_is_a_package():
    """Its retriever, tasks and rules live in one folder: no strategy rules left in backend/llm/. LILaC's
    decomposition, which strata and FiF's rules use too, is the shared backend/retrieval/decompose/."""
    assert not list((BACKEND_DIR / "llm").glob("rules_*.py"))
    for name in ("fif", "lilac", "mirag"):
        package = RETRIEVAL_DIR / name
        assert (package / "__init__.py").is_file() and (package / "retriever.py").is_file()
        assert name == "lilac" or (package / "tasks.py").is_file()
    shared = RETRIEVAL_DIR / "decompose"
    assert (shared / "__init__.py").is_file() and (shared / "task.py").is_file() and (shared / "rules.py").is_file()


# ---------------------------------------------------------------- tests

TESTS_DIR = REPO_ROOT / "tests"


def test_imports_between_test_modules_are_found(tmp_path):
    sample = tmp_path / "test_x.py"
    sample.write_text("from test_service_llm import openai_service\nfrom tests.retrieval.test_lilac import FILMS\n"
                      "from tests.fakes import build_corpus\n")
    assert _test_module_imports(sample) == ["test_x.py:1 imports test_service_llm", "test_x.py:2 imports tests.retrieval.test_lilac"]


def _test_module_imports(path: Path) -> list[str]:
    tree = ast.parse(path.read_text(encoding="utf-8"), filename=str(path))
    out = []
    for node in ast.walk(tree):
        names = [a.name for a in node.names] if isinstance(node, ast.Import) else [node.module or ""] if isinstance(node, ast.ImportFrom) else []
        out += [f"{path.name}:{node.lineno} imports {n}" for n in names if n.split(".")[-1].startswith("test_")]
    return sorted(out)


def test_no_test_module_imports_another():
    """Shared fakes live in tests/fakes.py (or a helper module), never in a test module."""
    problems = [p for path in _py_files(TESTS_DIR) for p in _test_module_imports(path)]
    assert problems == []


# ---------------------------------------------------------------- table rows are data

# A row node carries its cells (Node.row, a TableRow) from the parser on; its text is only what the
# indexes read. Splitting text on a row's separators ("; " between cells, ": " between a header and
# its value) would read them back out of that text, ambiguously (a value may hold either).
ROW_SEPARATORS = {"; ", ": "}
SPLITTERS = {"split", "rsplit", "partition", "rpartition"}
# Files that split other text on these separators, with what they split.
SEPARATOR_SPLITS_ALLOWED = {
    "backend/ingest/parser.py": "a document's '; '-joined warnings",
}


# A regular expression over a row's "Table N: header: value" text: "Table", a \d, then ": ".
ROW_PATTERN_RE = re.compile(r"Table(?:\\s[*+]?|\s)\\d[^\n]*?: ")


def row_text_parses(source: str) -> list[int]:
    """The lines of a module's source that split text on a row's separators (.split, .rsplit,
    .partition or .rpartition on "; " or ": ") or hold a pattern over "Table N: ..." row text."""
    found = []
    for node in ast.walk(ast.parse(source)):
        if isinstance(node, ast.Call) and isinstance(node.func, ast.Attribute) and node.func.attr in SPLITTERS \
                and node.args and isinstance(node.args[0], ast.Constant) and node.args[0].value in ROW_SEPARATORS:
            found.append(node.lineno)
    found += [source.count("\n", 0, m.start()) + 1 for m in ROW_PATTERN_RE.finditer(source)]
    return sorted(found)


def test_the_row_text_check_sees_a_split_and_a_pattern():
    split = 'def label(text):\n    first = text.split("; ", 1)[0]\n    return first.rsplit(": ", 1)[-1]\n'
    pattern = 'import re\nROW = re.compile(r"^Table\\s*\\d+: (.*?); ")\n'
    assert row_text_parses(split) == [2, 3] and row_text_parses(pattern) == [2]
    assert row_text_parses('x = "a, b".split(", ")\ny = "Table 2 shows it"\n') == []


def test_no_backend_module_parses_row_text():
    problems = []
    for path in _py_files(BACKEND_DIR):
        rel = path.relative_to(REPO_ROOT).as_posix()
        if rel not in SEPARATOR_SPLITS_ALLOWED:
            problems += [f"{rel}:{line}" for line in row_text_parses(path.read_text(encoding="utf-8"))]
    assert problems == [], "read a row's cells from Node.row / EvidenceUnit.row, not from its text:\n" + "\n".join(problems)


# ---------------------------------------------------------------- strategies stand alone

STRATEGIES = ("bm25", "dense", "hybrid", "hikey", "lilac", "fif", "mirag", "mmgraph", "strata")


def _strategy_of_module(mod: str) -> str | None:
    """The strategy a dotted module belongs to (backend.retrieval.fif.rules -> fif), else None."""
    parts = mod.split(".")
    if parts[:2] == ["backend", "retrieval"] and len(parts) > 2 and parts[2] in STRATEGIES:
        return parts[2]
    return None


def _strategy_of_file(path: Path) -> str | None:
    rel = path.relative_to(RETRIEVAL_DIR).parts
    name = rel[0].removesuffix(".py")
    return name if name in STRATEGIES else None


def test_the_strategy_checker_sees_strategies():
    assert _strategy_of_module("backend.retrieval.fif.rules") == "fif"
    assert _strategy_of_module("backend.retrieval.lilac") == "lilac"
    assert _strategy_of_module("backend.retrieval.graphwalk") is None
    assert _strategy_of_file(RETRIEVAL_DIR / "mirag" / "tasks.py") == "mirag"
    assert _strategy_of_file(RETRIEVAL_DIR / "titles.py") is None
    assert {p.name.removesuffix(".py") for p in RETRIEVAL_DIR.iterdir() if p.name.removesuffix(".py") in STRATEGIES} == set(STRATEGIES)


def test_no_strategy_imports_another_and_shared_code_imports_none():
    """A strategy imports the base and the shared modules, never another strategy (strata composes
    others through the registry); the shared modules of backend/retrieval/ and the stages of
    backend/stages/ import no strategy at all."""
    problems = []
    for path in _py_files(RETRIEVAL_DIR) + _py_files(BACKEND_DIR / "stages"):
        own = _strategy_of_file(path) if RETRIEVAL_DIR in path.parents else None
        for line, mod in imported_modules(path):
            other = _strategy_of_module(mod)
            if other is not None and other != own:
                problems.append(f"{path.relative_to(REPO_ROOT)}:{line} imports {mod}")
    assert problems == [], "strategies stand alone (STYLE.md habit 12):\n" + "\n".join(problems)

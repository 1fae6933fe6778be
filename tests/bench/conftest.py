"""bench/ is a folder of scripts, not a package: its tests run each documented tool as a user does,
`python bench/<tool>.py ...` in a subprocess, over small collections written here."""

from __future__ import annotations

import importlib.util
import json
import os
import subprocess
import sys
from collections.abc import Iterable
from pathlib import Path

import pytest

REPO = Path(__file__).resolve().parents[2]
SCORE_SCRIPT = REPO.parent / "shared" / "bench" / "score.py"


def load_tool(name: str):
    """bench/NAME.py imported as module NAME (registered first: its dataclasses look their module up)."""
    spec = importlib.util.spec_from_file_location(name, REPO / "bench" / f"{name}.py")
    module = importlib.util.module_from_spec(spec)
    sys.modules.setdefault(name, module)
    spec.loader.exec_module(module)
    return module


def run_tool(name: str, *args: object, timeout_s: float = 300, **env: str) -> subprocess.CompletedProcess:
    """`python bench/<name>.py args...` from the repository root; stdout and stderr as text."""
    full_env = {**os.environ, "HF_HUB_OFFLINE": "1", "TRANSFORMERS_OFFLINE": "1", "TOKENIZERS_PARALLELISM": "false", **env}
    return subprocess.run([sys.executable, str(REPO / "bench" / f"{name}.py"), *map(str, args)], cwd=REPO, env=full_env,
                          capture_output=True, text=True, timeout=timeout_s)


def write_collection(bench: Path, name: str, ids: Iterable[str], gold=lambda i: [(f"doc-{i}.pdf", 1)],
                     text=lambda i: f"question {i}?", **extra) -> Path:
    """A collection folder in score.py's format: one answerable question per id, its text from
    `text`, gold pages from `gold`."""
    folder = bench / name
    folder.mkdir(parents=True, exist_ok=True)
    rows = [{"id": i, "question": text(i), "answers": ["x"], "answer_format": "str", "unanswerable": False,
             "gold": [{"doc": d, "page": p, "bbox": None, "text": None} for d, p in gold(i)], "modality": "text",
             "hops": 1, "source": "t", "meta": {}, **extra} for i in ids]
    (folder / "questions.jsonl").write_text("".join(json.dumps(r) + "\n" for r in rows))
    return folder


def write_toy_bench(root: Path, pages: dict[str, list[str]], questions: list[tuple[str, str, str, int]],
                    edit=lambda name, doc: None) -> Path:
    """ROOT/bench with one collection, "toy": a PDF per name of `pages` (a page per text; `edit(name,
    doc)` before it is saved) and `questions` as (id, question, gold doc, gold page)."""
    import pymupdf

    corpus = root / "bench" / "toy" / "corpus"
    corpus.mkdir(parents=True)
    for name, texts in pages.items():
        doc = pymupdf.open()
        for body in texts:
            doc.new_page().insert_textbox(pymupdf.Rect(50, 50, 550, 400), body, fontsize=11)
        edit(name, doc)
        doc.save(corpus / name)
        doc.close()
    by_id = {i: (q, d, p) for i, q, d, p in questions}
    write_collection(root / "bench", "toy", list(by_id), gold=lambda i: [by_id[i][1:]], text=lambda i: by_id[i][0])
    return root / "bench"


def halves(bench: Path, name: str, out: Path) -> dict[str, list[str]]:
    """The tune and check ids of one collection, as `bench/split.py --out` writes them."""
    done = run_tool("split", "--bench", bench, "--collections", name, "--out", out)
    assert done.returncode == 0, done.stderr
    return {half: (out / f"{name}.{half}.ids").read_text().split() for half in ("tune", "check")}


@pytest.fixture(scope="session")
def score_script() -> Path:
    if not SCORE_SCRIPT.is_file():
        pytest.skip(f"no score.py at {SCORE_SCRIPT} (the shared bench folder is not here)")
    return SCORE_SCRIPT

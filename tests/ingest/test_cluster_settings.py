"""The cluster ingest's switch, without a cluster: the default path never imports ray, the setting
and the CLI flag choose the cluster, and a cluster asked for without ray installed is refused
with the fix. (The cluster itself: tests/ingest/test_cluster.py.)"""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

import pytest

from backend.__main__ import build_parser
from backend.config import Settings
from backend.errors import ConfigError
from backend.graph.store import WorkspaceStore
from backend.ingest.cluster import ClusterIngestor

REPO_ROOT = Path(__file__).resolve().parents[2]
SAMPLE_PDF = REPO_ROOT / "sample_corpus" / "data_annex.pdf"


def test_the_app_the_service_and_the_local_ingest_never_import_ray():
    code = (
        "import sys, app, backend.__main__, backend.service, backend.ingest.pipeline, ui.library\n"
        "from backend.service import Service\n"
        "assert 'ray' not in sys.modules, 'ray was imported'\n"
    )
    env = dict(os.environ, HF_HUB_OFFLINE="1", TRANSFORMERS_OFFLINE="1")
    proc = subprocess.run([sys.executable, "-c", code], cwd=REPO_ROOT, env=env, capture_output=True, text=True, timeout=300)
    assert proc.returncode == 0, proc.stderr[-2000:]


def test_the_setting_and_the_flag_name_the_cluster(monkeypatch):
    assert Settings().ingest.ray_address == ""  # the default: this process
    monkeypatch.setenv("STRATA_INGEST__RAY_ADDRESS", "auto")
    assert Settings().ingest.ray_address == "auto"
    args = build_parser().parse_args(["ingest", "--ray", "local", "--workspace", "w", "a.pdf"])
    assert args.ray == "local"
    assert build_parser().parse_args(["ingest", "a.pdf"]).ray is None


def test_a_cluster_without_ray_installed_is_refused_with_the_fix(monkeypatch, tmp_path):
    monkeypatch.setitem(sys.modules, "ray", None)  # import ray raises ImportError
    settings = Settings(workspace_root=tmp_path, load_sample=False)
    settings = settings.model_copy(update={"ingest": settings.ingest.model_copy(update={"ray_address": "local"})})
    store = WorkspaceStore(tmp_path / "ws")
    try:
        with pytest.raises(ConfigError, match="requirements-cluster.txt"):
            ClusterIngestor(settings).ingest(store, [SAMPLE_PDF])
        assert store.documents() == []
    finally:
        store.close()


def test_files_that_fail_the_checks_never_reach_a_cluster(monkeypatch, tmp_path):
    """Missing and non-PDF files fail before any task, with the local path's reasons; with nothing
    left to parse no cluster is reached (ray is not even imported)."""
    monkeypatch.setitem(sys.modules, "ray", None)
    settings = Settings(workspace_root=tmp_path, load_sample=False)
    settings = settings.model_copy(update={"ingest": settings.ingest.model_copy(update={"ray_address": "local"})})
    notes = tmp_path / "notes.pdf"
    notes.write_text("not a pdf")
    store = WorkspaceStore(tmp_path / "ws")
    try:
        report = ClusterIngestor(settings).ingest(store, [tmp_path / "missing.pdf", notes])
    finally:
        store.close()
    assert [(f.status, f.reason) for f in report.files] == [
        ("failed", "file not found"), ("failed", "not a PDF: the file does not start with a %PDF- header"),
    ]

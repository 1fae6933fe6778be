"""The workspace on disk: re-ingest is a no-op, a changed file replaces its nodes, documents can
be removed, opening a workspace never re-encodes, a killed ingest leaves a readable workspace,
and stale or missing FAISS files are rebuilt from the stored embeddings."""

from __future__ import annotations

import json
import os
import shutil
import signal
import sqlite3
import subprocess
import sys
import time
from pathlib import Path

import numpy as np
import pymupdf
import pytest

from backend.errors import WorkspaceError
from backend.graph.store import WorkspaceStore
from backend.service import Service
from backend.types import Layer

REPO_ROOT = Path(__file__).resolve().parents[2]
SAMPLE_DIR = REPO_ROOT / "sample_corpus"


def _rows(workspace: Path, sql: str, *args) -> list[tuple]:
    db = sqlite3.connect(workspace / "strata.sqlite")
    try:
        return db.execute(sql, args).fetchall()
    finally:
        db.close()


def _generation(workspace: Path) -> int:
    return int(_rows(workspace, "SELECT value FROM meta WHERE key='generation'")[0][0])


def _counting_service(service: Service, cls) -> tuple[Service, object, object]:
    text, sub = cls(service.encoders.text), cls(service.encoders.sub)
    return Service(service.settings, encoder=text, sub_encoder=sub), text, sub


def test_reingesting_the_same_file_is_a_no_op(service, workspace_copy):
    generation = _generation(workspace_copy)
    files = sorted(SAMPLE_DIR.glob("*.pdf"))
    report = service.ingest(workspace_copy, files)
    assert [f.status for f in report.files] == ["unchanged"] * len(files)
    assert all(f.doc_id for f in report.files)
    assert _generation(workspace_copy) == generation
    # The same bytes under another name are recognised too, and not stored twice.
    renamed = workspace_copy.parent / "copy_of_brief.pdf"
    shutil.copyfile(SAMPLE_DIR / "policy_brief.pdf", renamed)
    again = service.ingest(workspace_copy, [renamed])
    assert again.files[0].status == "unchanged" and "policy_brief.pdf" in (again.files[0].reason or "")
    assert len(_rows(workspace_copy, "SELECT id FROM documents")) == 4


def test_a_changed_file_replaces_its_old_nodes(service, workspace_copy, tmp_path, sample_docs):
    old = sample_docs["policy_brief.pdf"]
    old_crops = workspace_copy / "crops" / old.id
    assert old_crops.is_dir() and any(old_crops.iterdir()), "fixture check: the old document has crops"
    changed = tmp_path / "policy_brief.pdf"
    pdf = pymupdf.open(SAMPLE_DIR / "policy_brief.pdf")
    pdf[0].insert_text((72, 780), "Revised edition: the budget line was corrected.", fontsize=9)
    pdf.save(changed)
    generation = _generation(workspace_copy)

    report = service.ingest(workspace_copy, [changed])
    f = report.files[0]
    assert f.status == "replaced" and f.doc_id != old.id
    assert _generation(workspace_copy) == generation + 1
    for table in ("documents", "sections", "nodes", "blocks", "doc_links"):
        col = "id" if table == "documents" else "doc"
        assert _rows(workspace_copy, f"SELECT COUNT(*) FROM {table} WHERE {col}=?", old.id) == [(0,)], table
    assert _rows(workspace_copy, "SELECT COUNT(*) FROM edges WHERE doc=? OR src LIKE ?", old.id, old.id + "%") == [(0,)]
    assert not old_crops.exists()
    assert not (workspace_copy / "files" / f"{old.id}.pdf").exists()
    assert (workspace_copy / "crops" / f.doc_id).is_dir()
    names = sorted(r[0] for r in _rows(workspace_copy, "SELECT file_name FROM documents"))
    assert names == sorted(sample_docs)
    corpus = service.corpus(workspace_copy)
    assert old.id not in corpus.documents and not any(n.doc == old.id for n in corpus.nodes.values())
    assert any("Revised edition" in n.text for n in corpus.nodes.values() if n.doc == f.doc_id)


def test_remove_document(service, workspace_copy, sample_docs):
    doc = sample_docs["data_annex.pdf"]
    before = service.corpus(workspace_copy)
    assert doc.id in before.documents
    removed = service.remove_document(workspace_copy, doc.id)
    assert removed.id == doc.id
    assert [d.file_name for d in service.documents(workspace_copy)].count("data_annex.pdf") == 0
    assert _rows(workspace_copy, "SELECT COUNT(*) FROM nodes WHERE doc=?", doc.id) == [(0,)]
    assert _rows(workspace_copy, "SELECT COUNT(*) FROM edges WHERE doc=?", doc.id) == [(0,)]
    assert not (workspace_copy / "crops" / doc.id).exists()
    after = service.corpus(workspace_copy)
    assert doc.id not in after.documents and len(after.documents) == 3
    # Links from other documents to the removed one no longer resolve to an edge.
    assert not any(doc.id in (e.src, e.dst) for e in after.edges)
    with pytest.raises(WorkspaceError, match="No document with id"):
        service.remove_document(workspace_copy, doc.id)


def test_opening_a_workspace_does_not_encode(service, workspace_copy, counting_encoder_cls):
    svc, text, sub = _counting_service(service, counting_encoder_cls)
    corpus = svc.corpus(workspace_copy)
    assert len(corpus.nodes) > 300
    assert text.calls == [] and sub.calls == []
    result = svc.ask(workspace_copy, "How many trees were planted?", method="hikey", top_k=5)
    assert result.results
    # Only the question is encoded (once per encoder space), never the stored nodes.
    assert text.calls and all(n == 1 for n in text.calls + sub.calls)


def test_missing_stale_or_corrupt_faiss_files_are_rebuilt(service, sample_corpus, workspace_copy, counting_encoder_cls):
    index = workspace_copy / "index"
    assert (index / "components.faiss").is_file(), "fixture check: the sample workspace has FAISS files"
    (index / "components.faiss").unlink()
    (index / "subcomponents.faiss").write_bytes(b"not a faiss index")
    meta = json.loads((index / "meta.json").read_text())
    meta["layers"]["sections"]["rows"] += 7  # the sections file no longer matches what the database holds
    (index / "meta.json").write_text(json.dumps(meta))

    svc, text, sub = _counting_service(service, counting_encoder_cls)
    corpus = svc.corpus(workspace_copy)
    assert text.calls == [] and sub.calls == []
    assert (index / "components.faiss").is_file()
    query = service.encoders.text.encode(["canopy cover by district"])[0]
    for name in ("components", "sections"):
        assert corpus.layers[name].dense.search(query, 5) == sample_corpus.layers[name].dense.search(query, 5)
    sub_query = service.encoders.sub.encode(["canopy cover by district"])[0]
    assert corpus.layers["subcomponents"].dense.search(sub_query, 5) == sample_corpus.layers["subcomponents"].dense.search(sub_query, 5)
    # A stale generation stamp also forces a rebuild, and the stamp is brought up to date.
    meta = json.loads((index / "meta.json").read_text())
    assert meta["generation"] == _generation(workspace_copy)
    assert meta["layers"]["sections"]["rows"] == len(corpus.layers["sections"].ids)


@pytest.mark.slow
def test_killed_ingest_leaves_a_readable_workspace(service, tmp_path):
    workspace = tmp_path / "crash_ws"
    files = [SAMPLE_DIR / n for n in ("policy_brief.pdf", "data_annex.pdf", "methods_appendix.pdf", "cool_streets_report.pdf")]
    env = dict(os.environ, HF_HUB_OFFLINE="1", TOKENIZERS_PARALLELISM="false", PYTHONPATH=str(REPO_ROOT))
    proc = subprocess.Popen(
        [sys.executable, "-m", "backend", "ingest", "--workspace", str(workspace), *map(str, files)],
        cwd=REPO_ROOT, env=env, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL, start_new_session=True,
    )
    committed = 0
    try:
        deadline = time.monotonic() + 300
        while time.monotonic() < deadline and proc.poll() is None:
            if (workspace / "strata.sqlite").exists():
                try:
                    committed = _rows(workspace, "SELECT COUNT(*) FROM documents")[0][0]
                except sqlite3.OperationalError:  # locked while the child commits, or tables not made yet
                    committed = 0
                if committed >= 1:
                    break
            time.sleep(0.02)
    finally:
        if proc.poll() is None:
            os.killpg(proc.pid, signal.SIGKILL)  # the CLI and its parse worker, mid-way through the batch
        proc.wait(timeout=30)
    assert committed >= 1, "the child ingest committed no document before the deadline"
    assert proc.returncode == -signal.SIGKILL, "the child finished before it could be killed"

    assert _rows(workspace, "PRAGMA integrity_check") == [("ok",)]
    store = WorkspaceStore(workspace, create=False)
    try:
        docs = store.documents()
        assert 1 <= len(docs) < len(files)
        ids = {d.id for d in docs}
        for d in docs:
            assert _rows(workspace, "SELECT COUNT(*) FROM sections WHERE doc=?", d.id)[0][0] > 1
            assert _rows(workspace, "SELECT COUNT(*) FROM nodes WHERE doc=? AND emb IS NOT NULL", d.id)[0][0] > 50
            assert _rows(workspace, "SELECT COUNT(*) FROM edges WHERE doc=?", d.id)[0][0] > 50
            assert store.pdf_path(d.id).is_file()
        for table in ("sections", "nodes", "edges", "blocks", "doc_links"):
            orphans = {r[0] for r in _rows(workspace, f"SELECT DISTINCT doc FROM {table}")} - ids
            assert orphans == set(), f"half-written rows in {table}"
    finally:
        store.close()

    # A further ingest completes: the committed files are no-ops, the next one goes in.
    again = files[: len(docs) + 1]
    report = service.ingest(workspace, again)
    statuses = {f.file_name: f.status for f in report.files}
    assert all(statuses[d.file_name] == "unchanged" for d in docs)
    assert statuses[again[-1].name] == "ingested"
    corpus = service.corpus(workspace)
    assert len(corpus.documents) == len(docs) + 1
    node_counts = np.array([sum(1 for n in corpus.nodes.values() if n.doc == d) for d in corpus.documents])
    assert (node_counts > 50).all()


def test_a_document_from_an_older_parser_is_parsed_again(service, workspace_copy, monkeypatch):
    """Unchanged bytes are a no-op only when the stored nodes come from the current parser."""
    import backend.ingest.pipeline as pipeline

    path = SAMPLE_DIR / "data_annex.pdf"
    assert service.ingest(workspace_copy, [path]).files[0].status == "unchanged"
    monkeypatch.setattr(pipeline, "PARSER_VERSION", "test-next")
    report = service.ingest(workspace_copy, [path])
    assert report.files[0].status == "replaced"
    monkeypatch.undo()
    # The re-parsed document carries the version it was parsed with (the real one here).
    assert service.ingest(workspace_copy, [path]).files[0].status == "unchanged"


def test_a_fresh_faiss_file_is_the_layer_and_its_rows_are_not_read_from_the_store(service, sample_corpus, workspace_copy, monkeypatch):
    """A load reads a layer's vectors from its FAISS file when the file holds exactly that layer's
    rows (generation, row count and a digest of the ids in meta.json), and from the store when not."""
    service.corpus(workspace_copy)  # writes the files and meta.json of this copy
    read: list[int] = []
    original = WorkspaceStore.layer_vectors

    def counting(self, layer):
        read.append(int(layer))
        return original(self, layer)

    monkeypatch.setattr(WorkspaceStore, "layer_vectors", counting)
    fresh = Service(service.settings, encoder=service.encoders.text, sub_encoder=service.encoders.sub).corpus(workspace_copy)
    assert read == [], "every layer came from its FAISS file"
    for name in ("documents", "sections", "components", "subcomponents"):
        assert np.array_equal(fresh.layers[name].dense.matrix, sample_corpus.layers[name].dense.matrix), name
    # Another order of the same rows is not the file's: that layer is read from the store.
    index = workspace_copy / "index"
    meta = json.loads((index / "meta.json").read_text())
    meta["layers"]["components"]["ids"] = "0" * 32
    (index / "meta.json").write_text(json.dumps(meta))
    again = Service(service.settings, encoder=service.encoders.text, sub_encoder=service.encoders.sub).corpus(workspace_copy)
    assert read == [int(Layer.COMPONENT)]
    assert np.array_equal(again.layers["components"].dense.matrix, sample_corpus.layers["components"].dense.matrix)

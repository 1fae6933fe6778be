"""The faster ingest keeps its promises: section and document vectors are their components'
mean, the encode stage reports per chunk, the next file is parsed while this one is encoded,
and every ingested file adds to the server's measured speed."""

from __future__ import annotations

import threading
from pathlib import Path

import numpy as np
import pymupdf
import pytest

from backend.config import IngestSettings, Settings, cache_folder
from backend.graph.store import WorkspaceStore
from backend.index.encoders import EncoderSet, WordLlamaEncoder
from backend.ingest import pipeline
from backend.ingest.parser import parse_pdf
from backend.ingest.speed import SpeedModel
from backend.ingest.worker import ParseWorker
from backend.types import Layer, NodeKind

SAMPLE = Path(__file__).resolve().parents[2] / "sample_corpus"


@pytest.fixture(scope="module")
def parsed():
    return parse_pdf(SAMPLE / "cool_streets_report.pdf", IngestSettings(), None)


def _subtree_components(parsed, section_id: str) -> list[str]:
    parent = {s.id: s.parent for s in parsed.sections}
    out = []
    for n in parsed.nodes:
        if n.layer != Layer.COMPONENT:
            continue
        sec = n.section
        while sec is not None and sec != section_id:
            sec = parent.get(sec)
        if sec == section_id:
            out.append(n.id)
    return out


def test_parent_vectors_are_the_normalised_mean_of_their_subtree(parsed):
    rng = np.random.default_rng(0)
    comps = [n for n in parsed.nodes if n.layer == Layer.COMPONENT]
    emb = {n.id: v / np.linalg.norm(v) for n, v in zip(comps, rng.normal(size=(len(comps), 16)).astype(np.float32))}
    parents = pipeline.derivable_parents(parsed)
    sections = [n for n in parsed.nodes if n.kind == NodeKind.SECTION]
    assert parsed.document.id in parents and len(sections) > 2
    vecs = pipeline.parent_vectors(parsed, emb, parents)
    assert set(vecs) == parents
    for s in sections:
        under = _subtree_components(parsed, s.id)
        assert (s.id in parents) == bool(under), s.id
        if under:
            mean = np.sum([emb[c] for c in under], axis=0)
            assert np.allclose(vecs[s.id], mean / np.linalg.norm(mean), atol=1e-5)
    whole = np.sum(list(emb.values()), axis=0)
    assert np.allclose(vecs[parsed.document.id], whole / np.linalg.norm(whole), atol=1e-5)


@pytest.fixture()
def fast_encoders() -> EncoderSet:
    """The real static encoder in both roles: the pipeline logic, not MiniLM, is under test."""
    return EncoderSet(WordLlamaEncoder(), WordLlamaEncoder())


def _ingest(tmp_path, encoders, files, **kwargs):
    settings = Settings(workspace_root=tmp_path / "root", load_sample=False)
    events = []
    store = WorkspaceStore(tmp_path / "root" / "ws", create=True)
    try:
        ingestor = pipeline.Ingestor(settings, encoders, **kwargs)
        report = ingestor.ingest(store, files, progress=events.append)
    finally:
        store.close()
    return settings, ingestor, report, events


def test_encode_progress_moves_per_chunk_and_derived_parents_are_not_encoded(tmp_path, fast_encoders, monkeypatch):
    monkeypatch.setattr(pipeline, "ENCODE_CHUNK", 8)
    _, ingestor, report, events = _ingest(tmp_path, fast_encoders, [SAMPLE / "cool_streets_report.pdf"], derive_parents=True)
    assert report.files[0].status == "ingested"
    done = [e.done for e in events if e.stage == "encode"]
    total = {e.total for e in events if e.stage == "encode"}
    assert len(total) == 1 and done[0] == 0 and done[-1] == total.pop()
    assert len(done) > 3 and done == sorted(done)  # not just 0/N then N/N
    _, plain, _, _ = _ingest(tmp_path / "plain", fast_encoders, [SAMPLE / "cool_streets_report.pdf"], derive_parents=False)
    assert sum(ingestor.encoded.values()) < sum(plain.encoded.values())
    for stage in ("parse: extract", "encode: wordllama-256", "index write"):
        assert ingestor.timings[stage] > 0, stage


def test_the_next_file_is_parsed_while_this_one_is_encoded(tmp_path, fast_encoders, monkeypatch):
    threads: dict[str, str] = {}
    real_parse = ParseWorker.parse

    def spy(self, path, crops_root, display_name, progress=None):
        threads[display_name] = threading.current_thread().name
        return real_parse(self, path, crops_root, display_name, progress)

    monkeypatch.setattr(ParseWorker, "parse", spy)
    bad = tmp_path / "broken.pdf"
    bad.write_bytes(b"%PDF-1.7\n" + b"\x00garbage" * 50)
    files = [SAMPLE / "policy_brief.pdf", SAMPLE / "data_annex.pdf", bad, SAMPLE / "policy_brief.pdf", SAMPLE / "methods_appendix.pdf"]
    settings, _, report, _ = _ingest(tmp_path, fast_encoders, files)
    assert [f.status for f in report.files] == ["ingested", "ingested", "failed", "unchanged", "ingested"]
    assert threads["policy_brief.pdf"] == "MainThread"  # the first file has nothing to overlap with
    assert threads["data_annex.pdf"].startswith("strata-parse-ahead")  # parsed during policy_brief's encode
    assert threads["broken.pdf"].startswith("strata-parse-ahead")  # its failure still reaches its own report
    model = SpeedModel(cache_folder(settings))
    assert model.measured  # the Library's estimate now follows this server


def test_a_failed_prefetch_for_a_skipped_file_does_not_leak(tmp_path):
    worker = ParseWorker(IngestSettings())
    bad = tmp_path / "broken.pdf"
    bad.write_bytes(b"%PDF-1.7\n" + b"\x00garbage" * 50)
    with worker, pipeline.PrefetchingParser(worker) as ahead:
        ahead.start(bad, tmp_path / "crops", "broken.pdf", lambda *a: None)
        doc = ahead.parse(SAMPLE / "policy_brief.pdf", tmp_path / "crops", "policy_brief.pdf", lambda *a: None)
    assert doc.document.pages >= 1
    with pymupdf.open(SAMPLE / "policy_brief.pdf") as pdf:
        assert doc.document.pages == pdf.page_count


def test_models_load_after_the_first_file_parses_and_never_for_a_batch_that_all_fails(tmp_path, fast_encoders):
    """The parse worker's memory share is what the parent leaves: the encoders load once, after
    the first file has parsed (a file that failed before it does not load them)."""
    bad = tmp_path / "bad.pdf"
    bad.write_bytes(b"not a pdf at all")
    calls: list[int] = []
    events: list = []

    def load() -> EncoderSet:
        calls.append(len(events))
        return fast_encoders

    settings = Settings(workspace_root=tmp_path / "root", load_sample=False)
    store = WorkspaceStore(tmp_path / "root" / "ws", create=True)
    try:
        report = pipeline.Ingestor(settings, load).ingest(store, [bad, bad], progress=events.append)
        assert [f.status for f in report.files] == ["failed", "failed"] and calls == []
        report = pipeline.Ingestor(settings, load).ingest(store, [bad, SAMPLE / "cool_streets_report.pdf", SAMPLE / "data_annex.pdf"],
                                                       progress=events.append)
    finally:
        store.close()
    assert [f.status for f in report.files] == ["failed", "ingested", "ingested"]
    assert len(calls) == 1, "loaded once per ingest"
    before = events[: calls[0]]
    assert any(e.doc == "cool_streets_report.pdf" and e.stage not in ("open",) for e in before), "after the first parse"
    assert not any(e.stage == "encode" for e in before)


class _Recording:
    """A real encoder that records every text it is asked to encode."""

    def __init__(self, inner) -> None:
        self.inner, self.name, self.seen = inner, f"recorded-{inner.name}", []

    @property
    def dim(self) -> int:
        return self.inner.dim

    def encode(self, texts):
        self.seen += texts
        return self.inner.encode(texts)

    def count_tokens(self, text: str) -> int:
        return self.inner.count_tokens(text)


def _boilerplate_pdf(path: Path, own: str) -> Path:
    """A filing-like PDF: the same risk paragraph twice, a disclaimer every sibling shares, and a
    paragraph of its own. The siblings share one title: a unit right under its title is indexed
    with it (backend/index/texts.py), so filings titled apart would index their boilerplate apart."""
    shared = ("Risk factors. Our results could be affected by changes in foreign exchange rates, supply chain "
              "constraints and the competitive markets in which the Company operates, among other matters.")
    disclaimer = ("This report contains forward-looking statements that involve risks and uncertainties; actual "
                  "results may differ materially from those described here.")
    doc = pymupdf.open()
    doc.set_metadata({"title": "Quarterly report"})
    for text in (shared, own, shared, disclaimer):
        page = doc.new_page()
        page.insert_textbox(pymupdf.Rect(72, 72, 520, 400), text, fontsize=11)
    doc.save(path)
    doc.close()
    return path


def test_a_text_seen_before_in_the_batch_is_not_encoded_again_and_gets_its_own_vector(tmp_path):
    text = _Recording(WordLlamaEncoder())
    encoders = EncoderSet(text, WordLlamaEncoder())
    files = [_boilerplate_pdf(tmp_path / "q1.pdf", "In the first quarter net sales rose to 90 billion dollars."),
             _boilerplate_pdf(tmp_path / "q2.pdf", "In the second quarter net sales fell to 81 billion dollars.")]
    settings = Settings(workspace_root=tmp_path / "root", load_sample=False)
    store = WorkspaceStore(tmp_path / "root" / "ws", create=True)
    try:
        ingestor = pipeline.Ingestor(settings, encoders, derive_parents=True)
        report = ingestor.ingest(store, files)
        nodes, vectors = store.all_nodes()
    finally:
        store.close()
    assert [f.status for f in report.files] == ["ingested", "ingested"]
    assert len(text.seen) == len(set(text.seen)), "every distinct text encoded once"
    assert ingestor.encoded[text.name] == len(text.seen)
    comps = [n for n in nodes if n.layer == Layer.COMPONENT]
    by_text: dict[str, list] = {}
    for n in comps:
        by_text.setdefault(n.text, []).append(n)
    repeated = [group for group in by_text.values() if len(group) > 1]
    assert len(repeated) >= 2 and len(comps) == 8 and len(text.seen) == 4
    fresh = WordLlamaEncoder()
    for group in repeated:  # within a file and across the two files
        want = fresh.encode([group[0].text])[0]
        for n in group:
            assert np.allclose(vectors[n.id], vectors[group[0].id]) and vectors[n.id].shape == want.shape

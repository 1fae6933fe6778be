"""Approximate layers: above `index.approximate_rows` a layer is an IVF index over 8-bit codes
(a quarter of the memory), its every-row scores come from candidates (every other row the
lowest score), and a workspace's FAISS
files follow the setting both ways."""

from __future__ import annotations

import json

import numpy as np
import pytest

from backend.graph.store import WorkspaceStore
from backend.index.vector import Approximate, VectorIndex, lists_for
from backend.retrieval import scoring
from backend.retrieval.scoring import QueryScores, top_rows
from backend.service import Service
from backend.types import Trace
from tests.fixtures.sample_questions import SAMPLE_QUESTIONS

METHODS = ("bm25", "dense", "hybrid", "hikey", "lilac", "fif", "mirag", "mmgraph", "strata")


def _unit_rows(n: int, dim: int, seed: int = 0) -> np.ndarray:
    """n unit vectors around 40 centres (embeddings cluster by topic), deterministic."""
    rng = np.random.default_rng(seed)
    centres = rng.standard_normal((40, dim))
    x = centres[rng.integers(0, 40, n)] + 0.6 * rng.standard_normal((n, dim))
    return (x / np.linalg.norm(x, axis=1, keepdims=True)).astype(np.float32)


@pytest.fixture(scope="module")
def layer() -> tuple[np.ndarray, VectorIndex]:
    x = _unit_rows(6000, 32)
    # every list probed: what is left of "approximate" is the 8-bit codes and the candidates
    index = VectorIndex([f"n{i}" for i in range(len(x))], x, approximate=Approximate(rows=1000, share=1.0, candidates=50))
    return x, index


def test_a_layer_over_the_threshold_is_ivf_over_8_bit_codes_and_under_it_exact():
    x = _unit_rows(999, 16)
    ids = [f"n{i}" for i in range(len(x))]
    assert VectorIndex(ids, x, approximate=Approximate(rows=1000)).exact
    assert VectorIndex(ids, x).exact, "no setting: exact"
    approx = VectorIndex(ids, x, approximate=Approximate(rows=999))
    assert not approx.exact and approx.matrix is None
    assert approx.nbytes == x.size, "one byte a dimension, a quarter of float32"
    assert approx.vectors(np.array([0, 500, 998])) == pytest.approx(x[[0, 500, 998]], abs=0.01)
    assert approx.vector(7) == pytest.approx(x[7], abs=0.01)
    assert lists_for(999) == 15 and lists_for(10_000_000) == 2048 and lists_for(3) == 1
    assert [Approximate(share=0.1).probes(n) for n in (2048, 15, 1)] == [205, 2, 1]
    assert [Approximate(share=0.1).floor_probes(n) for n in (2048, 15, 1)] == [41, 1, 1], "a fifth of the probes for the lowest row"


def test_top_k_of_an_approximate_layer_searched_in_every_list_is_the_exact_top_k(layer):
    x, index = layer
    for q in _unit_rows(20, 32, seed=1):
        rows, cos = index.search_rows(q, 10)
        exact = np.argsort(-(x @ q), kind="stable")[:10]
        assert len(set(rows) & set(exact)) >= 9  # 8-bit codes may swap a near tie at the edge
        assert cos == pytest.approx(x[rows] @ q, abs=0.01)
        assert list(cos) == sorted(cos, reverse=True)
        assert np.array_equal(index.search_rows(q, 10, via_faiss=False)[0], rows), "no matrix to multiply: FAISS either way"


def test_every_row_scores_hold_the_candidates_and_give_every_other_row_the_lowest(layer):
    x, index = layer
    for q in _unit_rows(10, 32, seed=2):
        s, exact = index.scores(q), x @ q
        cand = index.search_rows(q, 50)[0]
        assert len(set(cand) & set(np.argsort(-exact, kind="stable")[:50])) >= 48  # 8-bit codes may swap a near tie
        assert s[cand] == pytest.approx(exact[cand], abs=0.01), "the candidates' own scores"
        lowest = int(index.search_rows(-q, 1)[0][0])  # the negated query's nearest (8-bit codes may pick a near tie)
        assert s[lowest] == pytest.approx(exact[lowest], abs=0.01) and s.min() == pytest.approx(exact.min(), abs=0.01), \
            "the layer's range reaches its lowest row"
        rest = np.setdiff1d(np.arange(len(x)), np.append(cand, lowest))
        assert np.all(s[rest] == s[lowest]) and np.all(s[rest] <= exact[rest] + 0.01), "every other row: the lowest score"
        assert s[rest].max() < s[cand].min(), "ranked below every candidate"
        both = index.scores_many(np.stack([q, -q]))
        assert np.array_equal(both[:, 0], s)


def test_the_lowest_row_is_sought_in_a_fifth_of_the_probed_lists(layer):
    """The candidates' search reads every probed list (here all 93); the lowest row's search a
    fifth of them (19), and finds the same lowest score as a search of every list."""
    import faiss

    x, index = layer
    lists = index._cpu.nlist
    for q in _unit_rows(5, 32, seed=4):
        faiss.cvar.indexIVF_stats.reset()
        s = index.scores(q)
        assert faiss.cvar.indexIVF_stats.nlist == lists + index.approximate.floor_probes(lists) == 93 + 19
        every_list = -index._cpu.search(-q[None, :].astype(np.float32), 1)[0][0, 0]
        assert s.min() == pytest.approx(every_list, abs=1e-6)


def test_a_hybrid_over_an_approximate_layer_fuses_the_bm25_candidates_from_their_own_cosine(sample_corpus, service):
    """A row BM25 ranks high is fused from its own cosine, not the lowest score the dense candidates left it."""
    comps = sample_corpus.layers["components"]
    approx = VectorIndex(comps.ids, comps.dense.matrix, approximate=Approximate(rows=1, share=1.0, candidates=3))
    layer = type(comps)(name=comps.name, ids=comps.ids, dense=approx, lexical=comps.lexical)
    query = SAMPLE_QUESTIONS[8]
    qvec = service.encoder.encode([query])[0]
    sc = QueryScores()
    fused = sc.hybrid(layer, query, qvec, 0.5)
    bm25, cos = sc.bm25(layer, query), sc.cosine(layer, qvec)
    rows = top_rows(bm25, 3)
    assert not set(rows) & set(approx.search_rows(qvec, 3)[0]), "BM25's top rows are no dense candidates here"
    assert len(set(cos[rows])) == 1, "so the dense scores left them the lowest score"
    lo, hi = float(cos.min()), float(cos.max())
    lex = (bm25 - bm25.min()) / (bm25.max() - bm25.min())
    own = comps.dense.matrix[rows] @ qvec
    assert fused[rows] == pytest.approx(0.5 * lex[rows] + 0.5 * (own - lo) / (hi - lo), abs=0.005)


def test_rows_a_strategy_ranks_closely_are_fused_from_their_own_cosine(sample_corpus, service, monkeypatch):
    """hybrid_with_own: HiKEY's units in its routed documents, outside the candidates, each get
    their own cosine; an exact layer's hybrid is returned as it is."""
    comps = sample_corpus.layers["components"]
    approx = VectorIndex(comps.ids, comps.dense.matrix, approximate=Approximate(rows=1, share=1.0, candidates=3))
    layer = type(comps)(name=comps.name, ids=comps.ids, dense=approx, lexical=comps.lexical)
    monkeypatch.setattr(scoring, "LEXICAL_CANDIDATES", 3)  # the sample has fewer rows than the 256 of a big layer
    query = SAMPLE_QUESTIONS[8]
    qvec = service.encoder.encode([query])[0]
    sc = QueryScores()
    plain = sc.hybrid(layer, query, qvec, 0.5)
    near = set(top_rows(sc.bm25(layer, query), 3)) | set(approx.search_rows(qvec, 3)[0])
    rows = np.array([r for r in range(len(comps.ids)) if r not in near and sc.bm25(layer, query)[r] == 0][:5])
    assert len(rows) == 5 and len(set(plain[rows])) == 1, "outside both candidate lists, no BM25: one fused score"
    own = sc.hybrid_with_own(layer, query, qvec, 0.5, rows)
    lexical, cos = sc.bm25(layer, query), comps.dense.matrix @ qvec
    assert len(set(np.round(own[rows], 5))) > 1
    lo, hi = float(sc.cosine(layer, qvec).min()), float(sc.cosine(layer, qvec).max())
    expected = 0.5 * (lexical[rows] - lexical.min()) / (lexical.max() - lexical.min()) + 0.5 * (cos[rows] - lo) / (hi - lo)
    assert own[rows] == pytest.approx(expected, abs=0.01)  # 8-bit codes
    exact = QueryScores()
    assert exact.hybrid_with_own(comps, query, qvec, 0.5, rows) is exact.hybrid(comps, query, qvec, 0.5)


@pytest.mark.parametrize("candidates,raised", [(0, False), (3, False), (30, False), (30, True)])
def test_a_sparse_hybrid_column_is_the_hybrid_row_for_row(sample_corpus, service, monkeypatch, candidates, raised):
    """sparse_hybrid_many: only the rows with a score of their own are fused, and every other row's
    shared score is the one hybrid() gives it: the same float32 numbers (0: the exact layer).
    raised: the shared cosine set to the candidates' median, so rows with their own cosine lie
    under it and the layer's lowest score is one of theirs."""
    if raised:
        from dataclasses import replace

        found = VectorIndex.candidates_many
        monkeypatch.setattr(VectorIndex, "candidates_many", lambda self, q: [
            replace(c, rest=np.float32(np.median(c.scores))) for c in found(self, q)])
    comps = sample_corpus.layers["components"]
    layer = comps
    if candidates:
        approx = VectorIndex(comps.ids, comps.dense.matrix, approximate=Approximate(rows=1, share=1.0, candidates=candidates))
        layer = type(comps)(name=comps.name, ids=comps.ids, dense=approx, lexical=comps.lexical)
    monkeypatch.setattr(scoring, "LEXICAL_CANDIDATES", 3)
    texts = [SAMPLE_QUESTIONS[8], SAMPLE_QUESTIONS[2], "no word of it is in the corpus: zzzq"]
    vecs = service.encoder.encode(texts)
    for alpha in (0.0, 0.5, 1.0):
        dense = QueryScores().hybrid_many(layer, texts, vecs, alpha)
        columns = QueryScores().sparse_hybrid_many(layer, texts, vecs, alpha)
        for j, col in enumerate(columns):
            assert np.array_equal(col.dense(), dense[:, j]), (alpha, j)
            rows = np.random.default_rng(j).integers(0, len(comps.ids), 50)
            assert np.array_equal(col.at(rows), dense[rows, j])
            if candidates == 3:
                assert col.rest is not None and len(col.rows) < len(comps.ids), "rows without a word or a candidate share one score"
            if not candidates:
                assert col.rest is None and len(col.rows) == len(comps.ids)


def _service(service, rows: int) -> Service:
    settings = service.settings.model_copy(deep=True)
    settings.index.approximate_rows = rows
    return Service(settings, encoder=service.encoders.text, sub_encoder=service.encoders.sub)


def test_every_method_answers_over_approximate_layers_and_the_files_follow_the_setting(service, sample_corpus, workspace_copy, monkeypatch):
    approx = _service(service, 1).corpus(workspace_copy)
    assert [name for name, layer in approx.layers.items() if layer.dense.exact] == ["entities"]  # small, in memory
    meta = json.loads((workspace_copy / "index" / "meta.json").read_text())
    assert {v["kind"] for v in meta["layers"].values()} == {"ivf1-sq8", "ivf4-sq8"}
    llm = service.llm("rules")
    exact_svc, approx_svc = _service(service, 0), _service(service, 1)
    for method in METHODS:
        for q in SAMPLE_QUESTIONS[:5]:
            a = exact_svc.retriever(method, sample_corpus, llm=llm).retrieve(q, 10, {}, Trace(method=method))
            b = approx_svc.retriever(method, approx, llm=llm).retrieve(q, 10, {}, Trace(method=method))
            # every list searched, every row a candidate at this size: only the 8-bit codes differ, so
            # the top-1 is the exact one, or one the exact ranking has within 0.005 of it (a near tie
            # the codes can flip: mmgraph's p14 0.8976 and p8 0.8967 on the canopy question)
            exact = {h.node_id: h.score for h in a}
            assert b and (a[0].node_id == b[0].node_id or exact.get(b[0].node_id, -1.0) >= a[0].score - 0.005), (method, q)

    read: list[int] = []
    original = WorkspaceStore.layer_vectors
    monkeypatch.setattr(WorkspaceStore, "layer_vectors", lambda self, layer: read.append(int(layer)) or original(self, layer))
    again = _service(service, 1).corpus(workspace_copy)
    assert read == [] and not again.layers["components"].dense.exact, "the IVF files were read, the store's rows were not"
    flat = _service(service, 0).corpus(workspace_copy)
    assert len(read) == 4, "a changed setting rebuilds every layer from the store"
    for name in ("documents", "sections", "components", "subcomponents"):
        assert np.array_equal(flat.layers[name].dense.matrix, sample_corpus.layers[name].dense.matrix), name


def test_a_meta_json_from_before_kinds_names_flat_files_and_they_are_read(service, workspace_copy, monkeypatch):
    """Workspaces saved before approximate layers existed keep their FAISS files (no rebuild)."""
    _service(service, 0).corpus(workspace_copy)
    meta_path = workspace_copy / "index" / "meta.json"
    meta = json.loads(meta_path.read_text())
    for layer in meta["layers"].values():
        assert layer.pop("kind") == "flat"
    meta_path.write_text(json.dumps(meta))
    read: list[int] = []
    original = WorkspaceStore.layer_vectors
    monkeypatch.setattr(WorkspaceStore, "layer_vectors", lambda self, layer: read.append(int(layer)) or original(self, layer))
    _service(service, 0).corpus(workspace_copy)
    assert read == []
    _service(service, 1).corpus(workspace_copy)
    assert len(read) == 4, "asked to be approximate, every layer is rebuilt"


def test_a_question_is_answered_and_cited_the_same_over_approximate_layers(service, sample_workspace, workspace_copy):
    """The whole pipeline (retrieve, pack, read) reads vectors back from 8-bit codes where a layer is
    approximate (the packer's associates, the reader's sentence scores); the answer cites the same units."""
    question = SAMPLE_QUESTIONS[0]
    exact = _service(service, 0).ask(sample_workspace, question, method="hybrid")
    approx = _service(service, 1).ask(workspace_copy, question, method="hybrid")
    assert not approx.answer.abstained and approx.answer.text == exact.answer.text
    assert [c.node_id for c in approx.answer.citations] == [c.node_id for c in exact.answer.citations]
    assert [u.node_id for u in approx.pack.units] == [u.node_id for u in exact.pack.units]

"""The index-backed vector paths against the brute-force reference on a small random corpus:
FAISS top-k (search_rows), one GEMM for several queries (scores_many) and the candidate-row
gather + dot (scores_of)."""

from __future__ import annotations

import numpy as np

from backend.index.vector import VectorIndex
from backend.retrieval.scoring import top_rows


def _corpus(n: int = 500, dim: int = 32, seed: int = 0) -> tuple[list[str], np.ndarray]:
    rng = np.random.default_rng(seed)
    m = rng.normal(size=(n, dim)).astype(np.float32)
    m /= np.linalg.norm(m, axis=1, keepdims=True)
    return [f"n{i}" for i in range(n)], m


def test_faiss_top_k_is_the_brute_force_top_k():
    ids, m = _corpus()
    index = VectorIndex(ids, m)
    rng = np.random.default_rng(1)
    for _ in range(20):
        q = rng.normal(size=m.shape[1]).astype(np.float32)
        q /= np.linalg.norm(q)
        brute = m @ q
        for via_faiss in (True, False):
            rows, cos = index.search_rows(q, 10, via_faiss=via_faiss)
            assert rows.tolist() == top_rows(brute, 10).tolist()
            assert np.allclose(cos, brute[rows], atol=1e-5)


def test_faiss_top_k_orders_exact_ties_by_row_and_clips_k():
    ids, m = _corpus(50)
    m[[7, 3, 30]] = m[12]  # four identical rows: equal scores for any query
    index = VectorIndex(ids, m)
    for via_faiss in (True, False):
        rows, _ = index.search_rows(m[12], 4, via_faiss=via_faiss)
        assert rows.tolist() == [3, 7, 12, 30]
        assert len(index.search_rows(m[0], 500, via_faiss=via_faiss)[0]) == 50
    assert len(VectorIndex([], np.zeros((0, 8), np.float32)).search_rows(np.ones(8), 3)[0]) == 0


def test_one_pass_for_several_queries_equals_one_pass_each():
    ids, m = _corpus()
    index = VectorIndex(ids, m)
    qs = np.random.default_rng(2).normal(size=(3, m.shape[1])).astype(np.float32)
    many = index.scores_many(qs)
    assert many.shape == (len(ids), 3)
    for j in range(3):
        assert np.allclose(many[:, j], index.scores(qs[j]), atol=1e-5)


def test_candidate_rows_are_scored_like_their_rows_of_the_whole_layer():
    ids, m = _corpus()
    index = VectorIndex(ids, m)
    rng = np.random.default_rng(3)
    rows = rng.choice(len(ids), size=40, replace=False)
    q = rng.normal(size=m.shape[1]).astype(np.float32)
    assert np.allclose(index.scores_of(rows, q), index.scores(q)[rows], atol=1e-5)
    qs = rng.normal(size=(2, m.shape[1])).astype(np.float32)
    assert np.allclose(index.scores_of(rows, qs), index.scores_many(qs)[rows], atol=1e-5)

"""The shared score arithmetic (backend/retrieval/scoring.py) and the corpus's memoised,
locked accessor for derived per-corpus values."""

from __future__ import annotations

import threading
import time

import numpy as np

from backend.retrieval.scoring import fuse_minmax, minmax, order_rows, reciprocal_rank_fusion, top_rows, top_scored
from tests.fakes import FILMS, build_corpus


def test_minmax_scales_and_handles_constant_vectors():
    assert np.allclose(minmax(np.array([2.0, 4.0, 3.0])), [0.0, 1.0, 0.5])
    assert np.array_equal(minmax(np.array([0.0, 0.0])), [0.0, 0.0])
    assert np.array_equal(minmax(np.array([3.0, 3.0])), [1.0, 1.0])
    assert minmax(np.zeros(0)).size == 0


def test_fuse_minmax_weights_the_two_normalised_scores():
    lexical, dense = np.array([0.0, 10.0]), np.array([1.0, 0.0])
    assert np.allclose(fuse_minmax(lexical, dense, 0.25), [0.75, 0.25])


def test_top_rows_breaks_ties_by_row_and_clips_k():
    scores = np.array([0.5, 0.9, 0.5, 0.1, 0.9])
    assert top_rows(scores, 2).tolist() == [1, 4]
    assert top_rows(scores, 4).tolist() == [1, 4, 0, 2]
    assert top_rows(scores, 10).tolist() == [1, 4, 0, 2, 3]
    assert top_rows(scores, 0).tolist() == []
    assert order_rows(scores, np.array([3, 2, 0])).tolist() == [0, 2, 3]
    hits = top_scored(["a", "b", "c", "d", "e"], scores, 2, "why")
    assert [(h.node_id, h.score) for h in hits] == [("b", 0.9), ("e", 0.9)]


def test_reciprocal_rank_fusion_takes_its_constant_from_the_caller():
    rankings = [(["a", "b"], 1.0), (["b", "c"], 2.0)]
    k5 = reciprocal_rank_fusion(rankings, 5)
    assert k5 == {"a": 1 / 6, "b": 1 / 7 + 2 / 6, "c": 2 / 7}
    k10 = reciprocal_rank_fusion(rankings, 10)
    assert k10["a"] == 1 / 11 and k10 != k5


def test_a_derived_value_is_built_once_however_many_sessions_ask(service):
    corpus = build_corpus(service, FILMS)
    calls = []

    def slow_count(c):
        calls.append(1)
        time.sleep(0.05)  # wide enough for the other threads to arrive while it builds
        return len(c.documents)

    results = []
    threads = [threading.Thread(target=lambda: results.append(corpus.derived(slow_count))) for _ in range(8)]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    assert results == [len(FILMS)] * 8
    assert len(calls) == 1
    assert not any(name.startswith("_graph_arrays") or name.startswith("_template") for name in vars(corpus))

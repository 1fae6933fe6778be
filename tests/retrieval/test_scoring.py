"""The shared score arithmetic (backend/retrieval/scoring.py) and the corpus's memoised,
locked accessor for derived per-corpus values."""

from __future__ import annotations

import threading
import time

import numpy as np

from backend.retrieval.scoring import fuse_minmax, minmax, order_rows, reciprocal_rank_fusion, top_ordered, top_rows, top_scored
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


def test_top_ordered_is_the_head_of_the_full_order_ties_at_the_cut_included():
    rng = np.random.default_rng(7)
    for _ in range(200):
        n = int(rng.integers(1, 60))
        scores = rng.integers(0, 5, size=n).astype(np.float32)  # many exact ties, at the cut too
        rows = rng.permutation(n)[: int(rng.integers(1, n + 1))]
        for k in (0, 1, 3, len(rows), len(rows) + 2):
            assert np.array_equal(top_ordered(scores, rows, k), order_rows(scores, rows)[:k]), (scores, rows, k)


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


# ---------------------------------------------------------------- the per-question score cache


def _strata(service, corpus, brute_force: bool = False):
    from backend.retrieval.strata import StrataRetriever

    return StrataRetriever(corpus, service.encoder, service.settings, sub_encoder=service.encoders.sub, brute_force=brute_force)


def test_question_scores_give_the_brute_force_numbers(service):
    from backend.retrieval.scoring import QueryScores, hybrid_scores

    corpus = build_corpus(service, FILMS)
    comps = corpus.layers["components"]
    q = "Where was the director of Night Train born?"
    qvec = service.encoder.encode([q])[0]
    sc = QueryScores()
    assert np.allclose(sc.hybrid(comps, q, qvec, 0.5), hybrid_scores(comps, q, qvec, 0.5), atol=1e-6)
    rows, cos = sc.top_dense(comps, qvec, 5)
    brute = comps.dense.matrix @ qvec
    assert rows.tolist() == top_rows(brute, 5).tolist() and np.allclose(cos, brute[rows], atol=1e-6)
    other = service.encoder.encode(["Lisbon"])[0]
    both = sc.cosines(comps, np.stack([qvec, other]))
    assert np.allclose(both[:, 1], comps.dense.matrix @ other, atol=1e-6)


def test_strata_scores_the_components_once_per_vector_and_matches_the_brute_force_path(service, monkeypatch):
    """HiKEY and the flat ranking inside strata share one pass over the components layer."""
    from backend.index.vector import VectorIndex
    from backend.types import Trace

    from backend.retrieval.strata import template_share

    corpus = build_corpus(service, FILMS)
    template_share(corpus)  # measured once per corpus, not per question
    comps_index = corpus.layers["components"].dense
    passes = []
    for name in ("scores", "scores_many"):
        original = getattr(VectorIndex, name)

        def counted(self, *a, _original=original, **kw):
            if self is comps_index:
                passes.append(1)
            return _original(self, *a, **kw)

        monkeypatch.setattr(VectorIndex, name, counted)
    q = "Where was the director of Night Train born?"
    trace = Trace(method="strata")
    shared = _strata(service, corpus).retrieve(q, 10, {}, trace)
    shared_passes, passes[:] = len(passes), []
    brute = _strata(service, corpus, brute_force=True).retrieve(q, 10, {}, Trace(method="strata"))
    assert [(h.node_id, h.score) for h in shared] == [(h.node_id, h.score) for h in brute]
    composed = sum(len(s.inputs) for s in trace.steps if getattr(s, "label", "").startswith("composed hops"))
    assert composed == 1, "the director of Night Train, filled into the asking subquery"
    # the query's pass, the subqueries' one and one per composed hop, against one per use
    assert shared_passes <= 2 + composed < len(passes)


def test_many_sessions_asking_at_once_get_what_one_session_gets(service):
    from backend.types import Trace

    corpus = build_corpus(service, FILMS)
    questions = ["Where was the director of Night Train born?", "Which film is a war drama?", "Who directed Moonlit Harbor?"]
    serial = {q: [h.node_id for h in _strata(service, corpus).retrieve(q, 5, {}, Trace(method="strata"))] for q in questions}
    got: list[tuple[str, list[str]]] = []

    def ask(q: str) -> None:
        got.append((q, [h.node_id for h in _strata(service, corpus).retrieve(q, 5, {}, Trace(method="strata"))]))

    threads = [threading.Thread(target=ask, args=(q,)) for q in questions * 3]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    assert len(got) == 9 and all(ids == serial[q] for q, ids in got)


def test_fused_with_seeds_adds_missing_seeds_on_their_rank_and_leaves_weight_zero_alone():
    """A graph strategy's order fused with its seeds: the best seed the traversal never kept joins
    near the top (seed_why given), a seed missing without seed_why is left out, and weight 0 is the
    strategy's own order, unchanged."""
    from backend.retrieval.scoring import fused_with_seeds
    from backend.types import ScoredNode

    ranked = [ScoredNode(node_id=n, score=s, why="hop") for n, s in (("a", 0.9), ("b", 0.8), ("c", 0.7), ("d", 0.6))]
    seeds = ["s", "c", "a"]
    assert fused_with_seeds(ranked, seeds, 0.0, seed_why="seed") == ranked
    with_seed = fused_with_seeds(ranked, seeds, 1.0, seed_why="seed")
    ids = [h.node_id for h in with_seed]
    assert ids[:2] == ["a", "c"], ids  # in both lists
    assert ids.index("s") < ids.index("b") and with_seed[ids.index("s")].why == "seed"
    assert [h.score for h in with_seed] == sorted((h.score for h in with_seed), reverse=True)
    assert "s" not in [h.node_id for h in fused_with_seeds(ranked, seeds, 1.0)]


def test_a_pair_moved_together_takes_the_better_seed_rank_of_the_two():
    """LILaC's best edge can join a page no seed holds to a seed (a school's page, the question's
    third page, linked from the school): the pair moves together, so it is placed by the seed
    credit of either end, not only the first's. Before, a seed reached as a partner lost its seed
    credit and the best edge fell below the plain seed matches."""
    from backend.retrieval.scoring import fused_with_seeds
    from backend.types import ScoredNode

    follows = lambda h: h.why == "partner"  # noqa: E731
    ranked = [ScoredNode(node_id="community", score=1.4, why="edge"), ScoredNode(node_id="school", score=1.4, why="partner"),
              ScoredNode(node_id="athlete", score=1.2, why="edge"), ScoredNode(node_id="other", score=1.1, why="edge")]
    seeds = ["school", "athlete", "other"]
    ids = [h.node_id for h in fused_with_seeds(ranked, seeds, 1.0, follows)]
    assert ids == ["community", "school", "athlete", "other"], ids
    # Without partners every hit is ranked on its own: the page no seed holds falls below every seed.
    alone = [h.model_copy(update={"why": "edge"}) for h in ranked]
    assert [h.node_id for h in fused_with_seeds(alone, seeds, 1.0, follows)][-1] == "community"


def test_a_short_list_is_filled_with_the_seeds_it_lacks_after_its_own():
    from backend.retrieval.scoring import SEED_WHY, filled_with_seeds
    from backend.types import ScoredNode

    ranked = [ScoredNode(node_id="a", score=0.9, why="hop"), ScoredNode(node_id="b", score=0.4, why="hop")]
    out = filled_with_seeds(ranked, ["b", "s", "t", "u"], 4)
    assert [h.node_id for h in out] == ["a", "b", "s", "t"]  # its own first, then the seeds it lacks, in order
    assert out[:2] == ranked and all(h.why.startswith(SEED_WHY) and h.score == 0.4 for h in out[2:])
    assert filled_with_seeds(ranked, ["s"], 2) == ranked  # already long enough

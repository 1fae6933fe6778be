"""The score arithmetic every strategy shares: per-query min-max normalisation, min-max hybrid
fusion of BM25 and cosine scores, top-k with deterministic ties, and weighted reciprocal-rank
fusion.

Ties are broken by row (or id) order, so that a ranking is the same run to run.
What it does not do: read a corpus or an encoder beyond the layer handed in (strategies do).
"""

from __future__ import annotations

from collections.abc import Callable, Iterable, Sequence
from dataclasses import dataclass

import numpy as np

from backend.index.vector import Candidates
from backend.types import ScoredNode


def minmax(x: np.ndarray) -> np.ndarray:
    """x scaled to [0, 1]; a constant vector becomes all 0 (when <= 0) or all 1."""
    if x.size == 0:
        return x
    return minmax_within(x, float(x.min()), float(x.max()))


def minmax_within(x: np.ndarray, lo: float, hi: float) -> np.ndarray:
    """Part of a vector scaled as minmax scales the whole, given the whole's lowest and highest
    values: the same numbers, element for element."""
    if hi - lo < 1e-12:
        return np.zeros_like(x) if hi <= 0 else np.ones_like(x)
    return (x - lo) / (hi - lo)


def fuse_minmax(lexical: np.ndarray, dense: np.ndarray, alpha: float) -> np.ndarray:
    """alpha * min-max(lexical) + (1 - alpha) * min-max(dense), element-wise: (n,)."""
    return alpha * minmax(lexical) + (1 - alpha) * minmax(dense)


def hybrid_scores(layer, query: str, qvec: np.ndarray, alpha: float) -> np.ndarray:
    """alpha * min-max(BM25) + (1 - alpha) * min-max(cosine) over every row of a layer: (n,)."""
    return fuse_minmax(layer.lexical.scores(query), layer.dense.scores(qvec), alpha)


def top_rows(scores: np.ndarray, k: int) -> np.ndarray:
    """Rows of the k best scores, best first, ties by row: (min(k, n),). Which of several rows
    tied exactly at the k-th score get in is np.argpartition's choice (kept: rankings measured
    so far depend on it)."""
    k = min(k, len(scores))
    if k <= 0:
        return np.zeros(0, dtype=np.int64)
    top = np.argpartition(-scores, k - 1)[:k]
    return top[np.lexsort((top, -scores[top]))]


def order_rows(scores: np.ndarray, rows: np.ndarray) -> np.ndarray:
    """`rows` sorted by scores[rows] descending, ties by row: a full ranking of a subset."""
    return rows[np.lexsort((rows, -scores[rows]))]


def top_ordered(scores: np.ndarray, rows: np.ndarray, k: int) -> np.ndarray:
    """order_rows(scores, rows)[:k], without sorting every row: the rows scoring at least the k-th
    best score (ties included) are the only ones that can be in it. A layer of 27k documents
    (100k pages) was sorted whole for HiKEY's 10 routed documents and each FiF hop's shortlist."""
    rows = np.asarray(rows)
    if k <= 0:
        return rows[:0]
    if k >= len(rows):
        return order_rows(scores, rows)
    s = scores[rows]
    kth = np.partition(s, len(s) - k)[len(s) - k]  # the k-th best score
    return order_rows(scores, rows[s >= kth])[:k]


def top_scored(ids: list[str], scores: np.ndarray, k: int, why: str) -> list[ScoredNode]:
    """The k best ids as ScoredNodes (scores rounded to 6 places), best first."""
    if k <= 0 or not len(ids):
        return []
    return [ScoredNode(node_id=ids[i], score=round(float(scores[i]), 6), why=why) for i in top_rows(scores, k)]


def reciprocal_rank_fusion(rankings: Iterable[tuple[Sequence[str], float]], k: int) -> dict[str, float]:
    """Weighted reciprocal-rank fusion: id -> sum over rankings of weight / (k + rank), rank from 1.

    k is explicit because the strategies differ (MI-RAG fuses short lists with k=5, Strata its
    routed and flat rankings with k=10) and each keeps its measured behaviour. The sums are
    accumulated ranking by ranking, in order, so the floating-point result is reproducible.
    """
    total: dict[str, float] = {}
    for ids, weight in rankings:
        for rank, node_id in enumerate(ids, start=1):
            total[node_id] = total.get(node_id, 0.0) + weight / (k + rank)
    return total


SEED_RRF_K = 10
SEED_WHY = "seed: the whole question's direct match"


def fused_with_seeds(
    ranked: list[ScoredNode], seeds: Sequence[str], weight: float, follows: Callable[[ScoredNode], bool] | None = None,
    seed_why: str | None = None,
) -> list[ScoredNode]:
    """A graph strategy's ranking fused by reciprocal rank (k=10) with the seed ranking it started
    from (the whole question's component hybrid), weighted `weight` against 1 for `ranked`: a
    traversal may add what the seeds miss, but cannot push the question's best direct matches far
    down. follows(hit): the hit belongs right after the one before it (a partner reached over a
    link between documents keeps its place after its anchor and is not ranked on its own; the pair
    takes the better seed rank of the two, so a seed reached as a partner keeps its seed credit).
    seed_why: seeds missing from `ranked` join it with this reason (None: they are left out).
    Scores are the fused sums; weight <= 0 returns `ranked` unchanged."""
    if weight <= 0:
        return list(ranked)
    main: list[ScoredNode] = []
    partners: dict[str, list[ScoredNode]] = {}
    for hit in ranked:
        if follows is not None and main and follows(hit):
            partners.setdefault(main[-1].node_id, []).append(hit)
        else:
            main.append(hit)
    own = reciprocal_rank_fusion((([h.node_id for h in main], 1.0),), SEED_RRF_K)
    seeded = reciprocal_rank_fusion(((seeds, weight),), SEED_RRF_K)
    fused = {h.node_id: own[h.node_id] + max(seeded.get(m.node_id, 0.0) for m in [h, *partners.get(h.node_id, [])])
             for h in main}
    if seed_why is not None:
        present = {h.node_id for h in ranked}
        main += [ScoredNode(node_id=s, score=0.0, why=seed_why) for s in dict.fromkeys(seeds) if s not in present]
        fused.update({s: seeded[s] for s in seeds if s not in present})
    out: list[ScoredNode] = []
    for hit in sorted(main, key=lambda h: (-fused[h.node_id], h.node_id)):
        score = round(fused[hit.node_id], 6)
        out += [h.model_copy(update={"score": score}) for h in [hit, *partners.get(hit.node_id, [])]]
    return out


def filled_with_seeds(ranked: list[ScoredNode], seeds: Sequence[str], top_k: int) -> list[ScoredNode]:
    """`ranked` and, when it holds fewer than top_k units, the seeds it lacks after it (the
    question's direct matches, in their order), scores clipped to stay non-increasing: a
    traversal that kept only a few units does not answer with a short list."""
    if len(ranked) >= top_k:
        return list(ranked)
    present = {h.node_id for h in ranked}
    floor = ranked[-1].score if ranked else 0.0
    extra = [ScoredNode(node_id=s, score=floor, why=f"{SEED_WHY}, after the strategy's own")
             for s in dict.fromkeys(seeds) if s not in present]
    return list(ranked) + extra[: top_k - len(ranked)]


# BM25's top rows whose own cosine an approximate layer's hybrid reads (8-bit codes decoded,
# ~1.4 us a row): a row outside the dense candidates must rank this high on BM25 to reach the
# top tens that any strategy keeps.
LEXICAL_CANDIDATES = 256


@dataclass(frozen=True)
class SparseColumn:
    """A layer's every-row scores for one query held as the rows that have their own score
    (`rows`, sorted) and `rest`, the score of every other row (None when no row is left)."""

    n: int
    rows: np.ndarray
    values: np.ndarray
    rest: np.float32 | None

    def at(self, rows: np.ndarray) -> np.ndarray:
        """The scores of the given rows."""
        rows = np.asarray(rows, dtype=np.int64)
        if len(self.rows) == self.n:  # every row has its own: rows is 0..n-1
            return self.values[rows]
        if not len(self.rows):
            return np.full(len(rows), self.rest, dtype=np.float32)
        idx = np.minimum(np.searchsorted(self.rows, rows), len(self.rows) - 1)
        return np.where(self.rows[idx] == rows, self.values[idx], self.rest).astype(np.float32)

    def dense(self) -> np.ndarray:
        out = np.full(self.n, self.rest if self.rest is not None else 0.0, dtype=np.float32)
        out[self.rows] = self.values
        return out


def _span(x: np.ndarray, shared: np.ndarray | None) -> tuple[float, float]:
    """(lowest, highest) of x, and of the shared score too when one is given, as minmax reads
    them from a whole column."""
    if shared is not None:
        x = np.concatenate([x, shared])
    return float(x.min()), float(x.max())


def _vec_key(vec: np.ndarray) -> bytes:
    return np.ascontiguousarray(vec, dtype=np.float32).tobytes()


class QueryScores:
    """One question's scores against the corpus layers, each computed once and shared by every
    strategy answering that question (strata hands its own to HiKEY and the flat ranking).

    Per question, never per corpus: create one per retrieve call (Retriever.question_scores) and
    pass it down. It holds no lock because one question runs on one thread; the corpus it reads
    is read-only, so any number of sessions may each hold their own at once.

    - cosine: every row's cosine (the min-max normaliser needs every row's min and max), for
      several query vectors in ONE pass over the layer's matrix (a GEMM reads it once; n GEMVs
      read it n times, and at 100k rows the read is the cost), cached per vector;
    - bm25: bm25s's sparse scores of every row, cached per text;
    - hybrid: alpha * min-max(BM25) + (1 - alpha) * min-max(cosine), cached;
    - top_dense: the k nearest rows through the layer's FAISS index (GPU when present), for
      rankings that need only the top of the cosine order.

    brute_force=True is the code path before this cache (bench/scale.py's baseline): every call
    recomputes `matrix @ q` and BM25 over every row, nothing cached.
    """

    __slots__ = ("brute_force", "_cos", "_bm25", "_hybrid", "_vecs", "_held", "_found", "_sparse")

    def __init__(self, brute_force: bool = False) -> None:
        self.brute_force = brute_force
        self._vecs: dict[tuple[int, str], np.ndarray] = {}
        # Caches are keyed by id(layer) / id(encoder); holding the objects keeps an id from being
        # reused by another object while this question lives.
        self._held: dict[int, object] = {}
        self._cos: dict[tuple[int, bytes], np.ndarray] = {}
        self._bm25: dict[tuple[int, str], np.ndarray] = {}
        self._hybrid: dict[tuple[int, str, bytes, float], np.ndarray] = {}
        self._found: dict[tuple[int, bytes], Candidates] = {}
        self._sparse: dict[tuple[int, str, bytes, float], SparseColumn] = {}

    def _key(self, obj: object) -> int:
        self._held[id(obj)] = obj
        return id(obj)

    def encode(self, encoder, texts: list[str]) -> np.ndarray:
        """(m, dim) the texts' vectors from `encoder`, each text encoded once per question (the
        query's vector is what HiKEY, the flat ranking and the partners all start from)."""
        if self.brute_force:
            return encoder.encode(texts)
        e = self._key(encoder)
        missing = list(dict.fromkeys(t for t in texts if (e, t) not in self._vecs))
        if missing:
            for t, v in zip(missing, encoder.encode(missing)):
                self._vecs[(e, t)] = v
        return np.stack([self._vecs[(e, t)] for t in texts]) if texts else encoder.encode(texts)

    def cosines(self, layer, vecs: np.ndarray) -> np.ndarray:
        """(n_rows, m) cosine of every row with each of m query vectors (m, dim); one pass for
        all the vectors not cached yet."""
        vecs = np.atleast_2d(np.asarray(vecs, dtype=np.float32))
        if self.brute_force:
            return np.stack([layer.dense.scores(v) for v in vecs], axis=1) if len(vecs) else np.zeros((len(layer.ids), 0), np.float32)
        keys = [(self._key(layer), _vec_key(v)) for v in vecs]
        missing = [j for j, k in enumerate(keys) if k not in self._cos]
        if missing:
            block = layer.dense.scores_many(vecs[missing])  # (n_rows, len(missing))
            for col, j in enumerate(missing):
                self._cos[keys[j]] = np.ascontiguousarray(block[:, col])  # a column of the block is strided
        if not keys:
            return np.zeros((len(layer.ids), 0), np.float32)
        return np.stack([self._cos[k] for k in keys], axis=1)

    def cosine(self, layer, vec: np.ndarray) -> np.ndarray:
        """(n_rows,) cosine of every row with one query vector."""
        if self.brute_force:
            return layer.dense.scores(vec)
        key = (self._key(layer), _vec_key(vec))
        if key not in self._cos:
            self.cosines(layer, vec)
        return self._cos[key]

    def bm25(self, layer, text: str) -> np.ndarray:
        """(n_rows,) BM25 of every row for a text."""
        if self.brute_force:
            return layer.lexical.scores(text)
        key = (self._key(layer), text)
        if key not in self._bm25:
            self._bm25[key] = layer.lexical.scores(text)
        return self._bm25[key]

    def hybrid(self, layer, text: str, vec: np.ndarray, alpha: float) -> np.ndarray:
        """(n_rows,) alpha * min-max(BM25) + (1 - alpha) * min-max(cosine); same maths as hybrid_scores."""
        if self.brute_force:
            return hybrid_scores(layer, text, vec, alpha)
        key = (self._key(layer), text, _vec_key(vec), float(alpha))
        if key not in self._hybrid:
            self._hybrid[key] = fuse_minmax(self.bm25(layer, text), self._hybrid_cosine(layer, text, vec), alpha)
        return self._hybrid[key]

    def _hybrid_cosine(self, layer, text: str, vec: np.ndarray) -> np.ndarray:
        """The cosines a hybrid fuses. An approximate layer's hold the dense candidates' own
        scores; BM25's top rows get theirs too (a copy), so a row either list ranks high is fused
        from its own two scores."""
        cosine = self.cosine(layer, vec)
        if layer.dense.exact:
            return cosine
        rows = top_rows(self.bm25(layer, text), LEXICAL_CANDIDATES)
        cosine = cosine.copy()
        cosine[rows] = layer.dense.scores_of(rows, vec)
        return cosine

    def hybrid_with_own(self, layer, text: str, vec: np.ndarray, alpha: float, rows: np.ndarray) -> np.ndarray:
        """hybrid(), with `rows` too fused from their own cosine: for the rows a strategy ranks
        closely (HiKEY's units in its routed documents), which in an approximate layer may lie
        outside the candidates. The same array as hybrid() for an exact layer. Not cached."""
        if layer.dense.exact or self.brute_force or not len(rows):
            return self.hybrid(layer, text, vec, alpha)
        cosine = self._hybrid_cosine(layer, text, vec)  # a copy
        cosine[rows] = layer.dense.scores_of(rows, vec)
        return fuse_minmax(self.bm25(layer, text), cosine, alpha)

    def hybrid_many(self, layer, texts: list[str], vecs: np.ndarray, alpha: float) -> np.ndarray:
        """(n_rows, m) hybrid scores of m texts with their vectors, the cosines in one pass."""
        if not self.brute_force:
            self.cosines(layer, vecs)  # one pass for every vector; hybrid() then reads the cache
        cols = [self.hybrid(layer, t, v, alpha) for t, v in zip(texts, np.atleast_2d(vecs))]
        return np.stack(cols, axis=1) if cols else np.zeros((len(layer.ids), 0), np.float32)

    def sparse_hybrid_many(self, layer, texts: list[str], vecs: np.ndarray, alpha: float) -> list[SparseColumn]:
        """hybrid_many()'s columns, each as a SparseColumn: the same score for every row, but an
        approximate layer fuses only the rows with a score of their own (BM25's non-zero rows,
        the dense candidates, BM25's top rows with their own cosine); every other row has no
        query word and the layer's lowest cosine, so one fused score stands for all of them. At
        100k pages the golden questions' columns hold 2-26% of the subcomponent layer's 1.77M
        rows. An exact layer's column holds every row."""
        vecs = np.atleast_2d(np.asarray(vecs, dtype=np.float32))
        if layer.dense.exact or self.brute_force:
            n = len(layer.ids)
            return [SparseColumn(n, np.arange(n, dtype=np.int64), col, None)
                    for col in np.atleast_2d(self.hybrid_many(layer, texts, vecs, alpha).T)] if texts else []
        keys = [(self._key(layer), _vec_key(v)) for v in vecs]
        missing = [j for j, k in enumerate(keys) if k not in self._found]
        if missing:  # one FAISS call for every vector
            for j, found in zip(missing, layer.dense.candidates_many(vecs[missing])):
                self._found[keys[j]] = found
        out = []
        for t, v, key in zip(texts, vecs, keys):
            skey = (key[0], t, key[1], float(alpha))
            if skey not in self._sparse:
                self._sparse[skey] = self._sparse_column(layer, t, v, self._found[key], alpha)
            out.append(self._sparse[skey])
        return out

    def _sparse_column(self, layer, text: str, vec: np.ndarray, found: Candidates, alpha: float) -> SparseColumn:
        """fuse_minmax(bm25, _hybrid_cosine) at the rows with a score of their own, the
        normalisers' bounds taken over every row as minmax takes them."""
        n = len(layer.ids)
        bm25 = self.bm25(layer, text)
        top = top_rows(bm25, LEXICAL_CANDIDATES)
        own = bm25 != 0
        own[found.rows] = True
        own[top] = True
        rows = np.flatnonzero(own)
        cos = np.full(len(rows), found.rest, dtype=np.float32)
        cos[np.searchsorted(rows, found.rows)] = found.scores
        cos[np.searchsorted(rows, top)] = layer.dense.scores_of(top, vec)  # as _hybrid_cosine: BM25's top rows own theirs
        others = len(rows) < n  # rows with BM25 0 and the lowest cosine: one shared score
        lex, zero, low = bm25[rows], np.zeros(1, dtype=np.float32), np.full(1, found.rest, dtype=np.float32)
        (lo_b, hi_b), (lo_c, hi_c) = _span(lex, zero if others else None), _span(cos, low if others else None)
        values = alpha * minmax_within(lex, lo_b, hi_b) + (1 - alpha) * minmax_within(cos, lo_c, hi_c)
        rest = (alpha * minmax_within(zero, lo_b, hi_b) + (1 - alpha) * minmax_within(low, lo_c, hi_c))[0] if others else None
        return SparseColumn(n, rows, values.astype(np.float32), rest)

    def top_dense(self, layer, vec: np.ndarray, k: int) -> tuple[np.ndarray, np.ndarray]:
        """(rows, cosines) of the k nearest rows, best first, ties by row."""
        if self.brute_force:
            s = layer.dense.scores(vec)
            rows = top_rows(s, k)
            return rows, s[rows]
        return layer.dense.search_rows(vec, k)

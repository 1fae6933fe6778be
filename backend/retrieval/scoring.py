"""The score arithmetic every strategy shares: per-query min-max normalisation, min-max hybrid
fusion of BM25 and cosine scores, top-k with deterministic ties, and weighted reciprocal-rank
fusion.

Ties are broken by row (or id) order, so that a ranking is the same run to run.
What it does not do: read a corpus or an encoder beyond the layer handed in (strategies do).
"""

from __future__ import annotations

from collections.abc import Iterable, Sequence

import numpy as np

from backend.types import ScoredNode


def minmax(x: np.ndarray) -> np.ndarray:
    """x scaled to [0, 1]; a constant vector becomes all 0 (when <= 0) or all 1."""
    if x.size == 0:
        return x
    lo, hi = float(x.min()), float(x.max())
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

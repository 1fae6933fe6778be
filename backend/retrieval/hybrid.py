"""Flat hybrid: per-query min-max normalised BM25 and dense scores, mixed by alpha."""

from __future__ import annotations

from typing import Any

from backend.retrieval.base import Retriever, StrategyParams, param, register
from backend.retrieval.scoring import top_scored
from backend.types import RankStep, ScoredNode, Trace


class HybridParams(StrategyParams):
    alpha: float = param(0.5, 0.0, 1.0, "Weight of BM25 against dense.", setting="retrieval.hybrid_alpha")


@register
class HybridRetriever(Retriever):
    name = "hybrid"
    description = "Min-max fused BM25 + dense over paragraphs, tables and figures."
    Params = HybridParams

    def retrieve(self, query: str, top_k: int, params: dict[str, Any], trace: Trace) -> list[ScoredNode]:
        alpha = self.resolve_params(params).alpha
        layer = self.corpus.layers["components"]
        sc = self.question_scores()
        scores = sc.hybrid(layer, query, sc.encode(self.encoder, [query])[0], alpha)
        results = top_scored(layer.ids, scores, top_k, f"hybrid alpha={alpha:g}")
        trace.params["alpha"] = alpha
        trace.add(RankStep(label="Hybrid (min-max BM25 + dense) over components", index="hybrid", candidates=results))
        return results

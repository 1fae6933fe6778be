"""Flat BM25 over components (LILaC's "w/o LCG & QD" lexical baseline)."""

from __future__ import annotations

from typing import Any

from backend.retrieval.base import Retriever, register
from backend.retrieval.scoring import top_scored
from backend.types import RankStep, ScoredNode, Trace


@register
class BM25Retriever(Retriever):
    name = "bm25"
    description = "Flat BM25 over paragraphs, tables and figures."

    def retrieve(self, query: str, top_k: int, params: dict[str, Any], trace: Trace) -> list[ScoredNode]:
        layer = self.corpus.layers["components"]
        scores = self.question_scores().bm25(layer, query)
        results = [r for r in top_scored(layer.ids, scores, top_k, "bm25") if r.score > 0]
        trace.add(RankStep(label="BM25 over components", index="bm25", candidates=results))
        return results

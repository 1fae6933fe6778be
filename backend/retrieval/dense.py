"""Flat dense retrieval over components (cosine of sentence embeddings, FAISS)."""

from __future__ import annotations

from typing import Any

from backend.retrieval.base import Retriever, register
from backend.types import RankStep, ScoredNode, Trace


@register
class DenseRetriever(Retriever):
    name = "dense"
    description = "Flat dense (embedding) search over paragraphs, tables and figures."

    def retrieve(self, query: str, top_k: int, params: dict[str, Any], trace: Trace) -> list[ScoredNode]:
        layer = self.corpus.layers["components"]
        sc = self.question_scores()
        rows, cos = sc.top_dense(layer, sc.encode(self.encoder, [query])[0], top_k)
        results = [ScoredNode(node_id=layer.ids[r], score=round(float(s), 6), why="dense") for r, s in zip(rows, cos)]
        trace.add(RankStep(label="Dense search over components", index="dense", candidates=results))
        return results

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
        hits = layer.dense.search(self.embed(query), top_k)
        results = [ScoredNode(node_id=i, score=round(s, 6), why="dense") for i, s in hits]
        trace.add(RankStep(label="Dense search over components", index="dense", candidates=results))
        return results

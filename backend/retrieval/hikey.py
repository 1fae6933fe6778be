"""HiKEY coarse-to-fine retrieval.

Stage 1 routes documents by their Doc_card (title + section paths): per-query min-max
normalised BM25 and dense scores mixed by alpha. Stage 2 ranks the sections of the routed
documents by MaxSim over their units, each unit scored with the type-specific unit score (text:
hybrid of its text; table/figure: gamma * visual + (1 - gamma) * hybrid of caption/upper
context + content; gamma is 0 without an image encoder). Final section score:
lambda * S_doc + (1 - lambda) * S_sec. Results are the anchors (MaxSim units) of the ranked
sections, then the remaining units of those sections by their own final score.
"""

from __future__ import annotations

from collections import defaultdict
from typing import Any

import numpy as np

from backend.retrieval.base import ParamSpec, Retriever, minmax, register
from backend.types import DocScore, RankSectionsStep, RouteDocsStep, ScoredNode, SectionScore, Trace

TRACE_SECTIONS = 30


@register
class HiKEYRetriever(Retriever):
    name = "hikey"
    description = "HiKEY: route documents by Doc_card, then rank sections by MaxSim over their units."
    params = (
        ParamSpec("docs", 8, 1, 100, "Stage 1: documents routed to Stage 2."),
        ParamSpec("alpha", 0.5, 0.0, 1.0, "BM25 weight in the hybrid scores."),
        ParamSpec("lam", 0.3, 0.0, 1.0, "Weight of the document score in the final section score."),
    )

    def retrieve(self, query: str, top_k: int, params: dict[str, Any], trace: Trace) -> list[ScoredNode]:
        rs = self.settings.retrieval
        n_docs = int(params.get("docs", rs.hikey_docs))
        alpha = float(params.get("alpha", rs.hybrid_alpha))
        lam = float(params.get("lam", rs.hikey_lambda))
        trace.params.update({"docs": n_docs, "alpha": alpha, "lam": lam, "gamma": rs.hikey_gamma})
        qvec = self.embed(query)
        corpus = self.corpus

        # Stage 1: document routing on Doc_cards.
        docs = corpus.layers["documents"]
        if not docs.ids:
            return []
        bm = docs.lexical.scores(query)
        de = docs.dense.scores(qvec)
        s_doc = alpha * minmax(bm) + (1 - alpha) * minmax(de)
        order = np.lexsort((np.arange(len(s_doc)), -s_doc))
        kept = [docs.ids[i] for i in order[:n_docs]]
        doc_score = {docs.ids[i]: float(s_doc[i]) for i in order}
        trace.add(
            RouteDocsStep(
                alpha=alpha,
                kept=len(kept),
                docs=[
                    DocScore(
                        doc_id=docs.ids[i], file_name=corpus.documents[docs.ids[i]].file_name,
                        bm25=round(float(bm[i]), 4), dense=round(float(de[i]), 4), score=round(float(s_doc[i]), 4),
                    )
                    for i in order[: max(n_docs, 10)]
                ],
            )
        )

        # Stage 2: type-specific unit scores inside the routed documents, MaxSim per section.
        comps = corpus.layers["components"]
        cand_rows = np.array(
            [comps.dense.row[c] for d in kept for c in corpus.components_by_doc.get(d, []) if c in comps.dense.row], dtype=np.int64
        )
        if not len(cand_rows):
            return []
        lex_all = comps.lexical.scores(query)
        unit_bm = lex_all[cand_rows]
        unit_de = comps.dense.matrix[cand_rows] @ qvec
        unit_score = alpha * minmax(unit_bm) + (1 - alpha) * minmax(unit_de)
        # (gamma * visual score would be added here for tables/figures with an image encoder)
        units_by_section: dict[str, list[tuple[str, float]]] = defaultdict(list)
        for row, s in zip(cand_rows, unit_score):
            node = corpus.nodes[comps.ids[row]]
            units_by_section[node.section or node.doc].append((node.id, float(s)))
        ranked_sections = []
        for sec_id, units in units_by_section.items():
            units.sort(key=lambda u: (-u[1], u[0]))
            s_sec = units[0][1]
            doc_id = corpus.nodes[units[0][0]].doc
            final = lam * doc_score[doc_id] + (1 - lam) * s_sec
            ranked_sections.append((final, sec_id, doc_id, s_sec, units))
        ranked_sections.sort(key=lambda r: (-r[0], r[1]))
        trace.add(
            RankSectionsStep(
                lam=lam,
                sections=[
                    SectionScore(
                        section_id=sec_id, path=corpus.sections[sec_id].path if sec_id in corpus.sections else [],
                        doc_score=round(doc_score[doc_id], 4), section_score=round(s_sec, 4), final=round(final, 4),
                        anchor=units[0][0],
                    )
                    for final, sec_id, doc_id, s_sec, units in ranked_sections[:TRACE_SECTIONS]
                ],
            )
        )
        results: list[ScoredNode] = []
        for final, _sec, _doc, _s, units in ranked_sections:
            if len(results) >= top_k:
                break
            results.append(ScoredNode(node_id=units[0][0], score=round(final, 6), why="anchor"))
        if len(results) < top_k:
            rest = []
            for _final, _sec, doc_id, _s, units in ranked_sections:
                for node_id, s in units[1:]:
                    rest.append((lam * doc_score[doc_id] + (1 - lam) * s, node_id))
            rest.sort(key=lambda r: (-r[0], r[1]))
            floor = results[-1].score if results else float("inf")
            for s, node_id in rest[: top_k - len(results)]:
                # Keep scores non-increasing: members rank below every anchor.
                results.append(ScoredNode(node_id=node_id, score=round(min(s, floor), 6), why="section member"))
        return results

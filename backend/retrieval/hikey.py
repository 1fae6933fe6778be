"""HiKEY coarse-to-fine retrieval.

Stage 1 routes documents by their Doc_card (title + section paths): per-query min-max
normalised BM25 and dense scores mixed by alpha, backed (weight 1 - card_weight) by the best
unit score inside the document, because many corpora share one report template and their cards
alone cannot tell documents apart. Stage 2 ranks the sections of the routed
documents by MaxSim over their units, each unit scored with the type-specific unit score (text:
hybrid of its text; table/figure: gamma * visual + (1 - gamma) * hybrid of caption/upper
context + content; gamma is 0 without an image index, and without one the trace notes that
figures were matched by their text). Final section score:
lambda * S_doc + (1 - lambda) * S_sec. Results are the anchors (MaxSim units) of the ranked
sections, then the remaining units of those sections by their own final score (unit_order=0); by default (unit_order=1) the units of the
routed documents are ranked by lambda * S_doc + (1 - lambda) * s(c): anchors-first's
one-unit-per-section order skips the second relevant unit of a strong section
(bench/RESULTS.md#stages).
"""

from __future__ import annotations

from collections import defaultdict
from typing import Any, NamedTuple

import numpy as np

from backend.index.image import blend_visual, note_figures_as_text, visual_component_scores
from backend.retrieval.base import Retriever, StrategyParams, param, register
from backend.retrieval.scoring import QueryScores, fuse_minmax, minmax, top_ordered
from backend.types import DocScore, RankSectionsStep, RouteDocsStep, ScoredNode, SectionScore, Trace

TRACE_SECTIONS = 30


class HiKEYParams(StrategyParams):
    docs: int = param(8, 1, 100, "Stage 1: documents routed to Stage 2.", setting="retrieval.hikey_docs")
    alpha: float = param(0.5, 0.0, 1.0, "BM25 weight in the hybrid scores.", setting="retrieval.hybrid_alpha")
    lam: float = param(0.3, 0.0, 1.0, "Weight of the document score in the final section score.", setting="retrieval.hikey_lambda")
    card_weight: float = param(
        0.5, 0.0, 1.0, "Stage 1: weight of the Doc_card against the best unit inside the document.",
        setting="retrieval.hikey_card_weight",
    )
    unit_order: int = param(
        1, 0, 1,
        "1: rank the units of the routed documents by lambda*S_doc + (1-lambda)*s(c); "
        "0: the anchors of the ranked sections first, then their other units.",
    )
    gamma: float = param(
        0.3, 0.0, 1.0, "Weight of the visual score of figures (used only with an image index).",
        setting="retrieval.hikey_gamma", ui=False,
    )


class RankedSection(NamedTuple):
    final: float  # lambda * S_doc + (1 - lambda) * S_sec
    section_id: str
    doc_id: str
    section_score: float  # MaxSim: the best unit score
    units: list[tuple[str, float]]  # (component, unit score), best first


@register
class HiKEYRetriever(Retriever):
    name = "hikey"
    description = "HiKEY: route documents by Doc_card, then rank sections by MaxSim over their units."
    Params = HiKEYParams
    follows_references = True

    def retrieve(self, query: str, top_k: int, params: dict[str, Any], trace: Trace) -> list[ScoredNode]:
        p = self.resolve_params(params, trace)
        sc = self.question_scores()
        qvec = sc.encode(self.encoder, [query])[0]
        corpus = self.corpus
        visual = visual_component_scores(corpus, self.image_encoder, query)  # {} without an image index
        gamma = p.gamma if visual else 0.0
        trace.params.update({"docs": p.docs, "alpha": p.alpha, "lam": p.lam, "card_weight": p.card_weight, "gamma": gamma})
        docs = corpus.layers["documents"]
        comps = corpus.layers["components"]
        if not docs.ids or not comps.ids:
            return []

        # Type-specific unit scores (text: hybrid of the text; table/figure: hybrid of caption/upper
        # context + content, whose visual term gamma * s_vis needs an image encoder).  (n_components,)
        unit_score = sc.hybrid(comps, query, qvec, p.alpha)
        if visual:
            unit_score = blend_visual(unit_score, comps, visual, gamma)
        kept, doc_score = self._route_docs(sc, query, qvec, unit_score, p, trace)
        if not comps.dense.exact:
            # The routed documents' units are ranked against each other: each from its own cosine.
            rows = np.array([comps.dense.row[c] for d in kept for c in corpus.components_by_doc.get(d, []) if c in comps.dense.row],
                            dtype=np.int64)
            unit_score = sc.hybrid_with_own(comps, query, qvec, p.alpha, rows)
            if visual:
                unit_score = blend_visual(unit_score, comps, visual, gamma)
        ranked_sections = self._rank_sections(kept, doc_score, unit_score, p.lam, trace)
        trace.params["unit_order"] = p.unit_order
        if trace.params["unit_order"]:
            results = self._units_in_routed_documents(ranked_sections, doc_score, p.lam, top_k)
        else:
            results = self._anchors_first(ranked_sections, doc_score, p.lam, top_k)
        note_figures_as_text(trace, corpus, [h.node_id for h in results], self.image_encoder)
        return results

    def _route_docs(
        self, sc: QueryScores, query: str, qvec: np.ndarray, unit_score: np.ndarray, p: HiKEYParams, trace: Trace
    ) -> tuple[list[str], dict[str, float]]:
        """Stage 1: document routing. Doc_card hybrid score, backed by the best unit inside the
        document so that documents with near-identical cards (report templates) still separate.
        Returns the routed documents and their scores."""
        corpus = self.corpus
        docs = corpus.layers["documents"]
        bm = sc.bm25(docs, query)
        de = sc.cosine(docs, qvec)
        card = fuse_minmax(bm, de, p.alpha)
        best_unit = np.zeros(len(docs.ids), dtype=np.float32)
        valid = corpus.component_doc_rows >= 0
        np.maximum.at(best_unit, corpus.component_doc_rows[valid], unit_score[valid])
        evidence = minmax(best_unit)
        s_doc = p.card_weight * card + (1 - p.card_weight) * evidence
        order = top_ordered(s_doc, np.arange(len(s_doc)), max(p.docs, 10))
        kept = [docs.ids[i] for i in order[: p.docs]]
        doc_score = {docs.ids[i]: float(s_doc[i]) for i in order[: p.docs]}  # stages 2 and 3 read the routed ones
        trace.add(
            RouteDocsStep(
                alpha=p.alpha,
                kept=len(kept),
                docs=[
                    DocScore(
                        doc_id=docs.ids[i], file_name=corpus.documents[docs.ids[i]].file_name,
                        bm25=round(float(bm[i]), 4), dense=round(float(de[i]), 4), evidence=round(float(evidence[i]), 4),
                        score=round(float(s_doc[i]), 4),
                    )
                    for i in order[: max(p.docs, 10)]
                ],
            )
        )
        return kept, doc_score

    def _rank_sections(
        self, kept: list[str], doc_score: dict[str, float], unit_score: np.ndarray, lam: float, trace: Trace
    ) -> list[RankedSection]:
        """Stage 2: MaxSim per section inside the routed documents, best final score first."""
        corpus = self.corpus
        comps = corpus.layers["components"]
        units_by_section: dict[str, list[tuple[str, float]]] = defaultdict(list)
        for d in set(kept):
            for c in corpus.components_by_doc.get(d, []):
                row = comps.dense.row.get(c)
                if row is not None:
                    units_by_section[corpus.nodes.section_of(c) or d].append((c, float(unit_score[row])))
        ranked_sections = []
        for sec_id, units in units_by_section.items():
            units.sort(key=lambda u: (-u[1], u[0]))
            s_sec = units[0][1]
            doc_id = corpus.nodes.doc_of(units[0][0])
            final = lam * doc_score[doc_id] + (1 - lam) * s_sec
            ranked_sections.append(RankedSection(final, sec_id, doc_id, s_sec, units))
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
        return ranked_sections

    @staticmethod
    def _units_in_routed_documents(
        ranked_sections: list[RankedSection], doc_score: dict[str, float], lam: float, top_k: int
    ) -> list[ScoredNode]:
        """unit_order=1: every unit of the routed documents by lambda * S_doc + (1 - lambda) * s(c)."""
        units_ranked = sorted(
            ((lam * doc_score[doc_id] + (1 - lam) * s, node_id) for _f, _sec, doc_id, _s, units in ranked_sections for node_id, s in units),
            key=lambda r: (-r[0], r[1]),
        )
        return [ScoredNode(node_id=n, score=round(sc, 6), why="unit in routed document") for sc, n in units_ranked[:top_k]]

    @staticmethod
    def _anchors_first(
        ranked_sections: list[RankedSection], doc_score: dict[str, float], lam: float, top_k: int
    ) -> list[ScoredNode]:
        """unit_order=0: the anchor (MaxSim unit) of each ranked section, then the other units."""
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

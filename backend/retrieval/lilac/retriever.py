"""LILaC: late-interaction beam search over the layered component graph (EMNLP 2025, section 4.2).

1. Decompose the question into modality-labelled subqueries (the LLM's QUERY DECOMPOSITION and
   MODALITY SELECTION prompts of appendix F; rules offline).
2. Seed: the top-b components by the whole query (hybrid BM25 + dense over the components layer).
3. Beam: for n_i iterations, expand every frontier component along its edges (next, xref,
   caption, in-document links, links between documents in both directions: a link to a
   document reaches that document's best components), score every new edge by late interaction
   s(e) = sum over subqueries q of max over the subcomponents c on either end of sim(q, c),
   keep the top-b edges; their endpoints are the next frontier. A component with no edge gets
   a dummy edge (C, eps) so it still competes.
4. Return the endpoints of the kept edges in edge order; a one-sided edge (its score is the best
   single-endpoint score: the other end adds nothing) returns only the matching node.

sim(q, c) is alpha * min-max BM25 + (1 - alpha) * cosine in the subcomponent space; a subquery's
modality adds `modality_bonus` to subcomponents of its kind (row for table, object for figure),
our stand-in for the paper's modality-specific embedding f(q; m). Components without
subcomponents are matched with their own text. Scoring is vectorised: one matrix product per
query for all subcomponents, a segment max (np.maximum.reduceat) per component, then edges are
scored as rows of two gathered matrices.

What it does not do: rerank with an LLM, or follow edges into the entity layer (mmgraph does).
"""

from __future__ import annotations

from typing import Any

import numpy as np

from backend.retrieval.base import Retriever, StrategyParams, param, register
from backend.retrieval.decompose import decompose
from backend.retrieval.graphwalk import LateInteraction, component_neighbours, edge_scores
from backend.retrieval.scoring import QueryScores, fused_with_seeds, top_rows
from backend.types import BeamStep, DecomposeStep, RankStep, ScoredEdge, ScoredNode, SubqueryMatch, Trace

TRACE_EDGES = 400
PARTNER_WHY = "doc_link partner"


class LILaCParams(StrategyParams):
    beam: int = param(30, 1, 200, "b: seed components and edges kept per iteration.")
    iterations: int = param(1, 1, 5, "n_i: beam-search iterations.")
    alpha: float = param(0.5, 0.0, 1.0, "BM25 weight in the seed and subcomponent similarities.")
    per_doc: int = param(3, 1, 50, "Components reached through a link to a document: its best ones for the query.")
    modality_bonus: float = param(0.05, 0.0, 0.5, "Bonus for subcomponents of the subquery's modality (row: table, object: figure).")
    granularity: float = param(0.5, 0.0, 1.0, "Weight of the best subcomponent against the component's own match in sim(q, C).")
    partners: int = param(1, 0, 10, "Linked documents' components returned right after their anchor even when one-sided (0: paper's rule).")
    seed_weight: float = param(1.0, 0.0, 5.0, "Weight of the seed (hybrid) order fused with the edge order by reciprocal rank (0: the paper's edge order alone).")
    margin: float = param(0.0, 0.0, 1.0, "One-sided match: an endpoint whose gain to the edge score is at most this is left out (0: exact).")


EdgeKey = tuple[int, int]  # (a, b) component rows, a < b; b = -1 for a dummy edge


@register
class LILaCRetriever(Retriever):
    name = "lilac"
    description = "LILaC: decompose into subqueries, seed top-b components, beam search over edges scored by late interaction."
    Params = LILaCParams
    follows_references = True

    def retrieve(self, query: str, top_k: int, params: dict[str, Any], trace: Trace) -> list[ScoredNode]:
        p = self.resolve_params(params, trace)
        trace.params.update({"beam": p.beam, "iterations": p.iterations, "alpha": p.alpha, "per_doc": p.per_doc,
                             "modality_bonus": p.modality_bonus, "margin": p.margin, "partners": p.partners})
        corpus = self.corpus
        comps = corpus.layers["components"]
        if not comps.ids or top_k <= 0:
            return []
        subqueries, reason = decompose(self.llm, query)
        trace.add(DecomposeStep(subqueries=subqueries, backend=self.llm.name, reason=reason))
        sc = self.question_scores()
        li = LateInteraction(self, subqueries, p.alpha, p.modality_bonus, p.granularity, scores=sc)
        return self.beam_search(sc, query, li, top_k, p, trace)

    def seeds(self, sc: QueryScores, query: str, b: int, alpha: float) -> tuple[np.ndarray, np.ndarray]:
        comps = self.corpus.layers["components"]
        whole = sc.hybrid(comps, query, sc.encode(self.encoder, [query])[0], alpha)
        return top_rows(whole, b), whole

    def beam_search(
        self, sc: QueryScores, query: str, li: LateInteraction, top_k: int, p: LILaCParams, trace: Trace
    ) -> list[ScoredNode]:
        ga = li.arrays
        seeds, whole = self.seeds(sc, query, p.beam, p.alpha)
        trace.add(RankStep(label="seeds: top-b components by the whole query", index="hybrid",
                           candidates=[ScoredNode(node_id=ga.comp_ids[i], score=round(float(whole[i]), 4), why="seed") for i in seeds]))
        scored: dict[EdgeKey, float] = {}
        kinds: dict[EdgeKey, str] = {}
        expanded: set[int] = set()
        frontier = [int(i) for i in seeds]
        for it in range(1, p.iterations + 1):
            new_pairs = self._expand(li, frontier, expanded, scored, kinds, p.per_doc)
            self._score_edges(li.best, new_pairs, scored)
            ranked = sorted(scored.items(), key=lambda kv: (-kv[1], kv[0]))
            kept = [k for k, _ in ranked[: p.beam]]
            kept_nodes = {n for k in kept for n in k if n >= 0}
            trace.add(BeamStep(
                iteration=it,
                frontier=[ga.comp_ids[v] for v in frontier],
                edges=[self._scored_edge(li, key, scored[key], kinds[key], with_matches=key in set(kept), margin=p.margin)
                       for key in sorted(new_pairs, key=lambda k: (-scored[k], k))[:TRACE_EDGES]],
                kept=[ga.comp_ids[n] for n in sorted(kept_nodes)],
                pruned=[ga.comp_ids[v] for v in frontier if v not in kept_nodes],
            ))
            frontier = sorted(n for n in kept_nodes if n not in expanded)
            if not frontier:
                break
        if p.seed_weight <= 0:
            return self._results(li, seeds, scored, kinds, top_k, p)
        # The whole edge order, fused, then cut: a larger k extends the same ranking.
        whole = self._results(li, seeds, scored, kinds, 2 * len(scored) + len(seeds), p)
        return fused_with_seeds(whole, [ga.comp_ids[i] for i in seeds], p.seed_weight, lambda h: h.why == PARTNER_WHY)[:top_k]

    def _expand(
        self, li: LateInteraction, frontier: list[int], expanded: set[int], scored: dict[EdgeKey, float],
        kinds: dict[EdgeKey, str], per_doc: int,
    ) -> list[EdgeKey]:
        """The edges of the frontier not seen yet (a dummy edge for a component without any)."""
        ga = li.arrays
        new_pairs: list[EdgeKey] = []
        for v in frontier:
            if v in expanded:
                continue
            expanded.add(v)
            nbrs = component_neighbours(self.corpus, ga.comp_ids[v], li, per_doc)
            if not nbrs:
                key = (v, -1)
                if key not in scored:
                    new_pairs.append(key)
                    kinds[key] = "dummy"
            for u, kind in nbrs:
                key = (min(v, u), max(v, u))
                if key not in scored and key not in kinds:
                    new_pairs.append(key)
                    kinds[key] = kind
        return new_pairs

    @staticmethod
    def _score_edges(best: np.ndarray, new_pairs: list[EdgeKey], scored: dict[EdgeKey, float]) -> None:
        """s(e) = sum over subqueries of the better endpoint's match, for every new edge at once."""
        if not new_pairs:
            return
        src = np.array([k[0] for k in new_pairs], dtype=np.int64)
        dst = np.array([k[1] for k in new_pairs], dtype=np.int64)
        a = best[src]
        bb = np.where((dst >= 0)[:, None], best[np.maximum(dst, 0)], 0.0)
        for key, s in zip(new_pairs, edge_scores(a, bb).tolist()):
            scored[key] = s

    def _results(
        self, li: LateInteraction, seeds: np.ndarray, scored: dict[EdgeKey, float], kinds: dict[EdgeKey, str],
        top_k: int, p: LILaCParams,
    ) -> list[ScoredNode]:
        """Edge order -> node order; one-sided edges give one node; then the seeds no kept edge reached."""
        ga, best = li.arrays, li.best
        out: list[ScoredNode] = []
        seen: set[int] = set()
        ranked = sorted(scored.items(), key=lambda kv: (-kv[1], kv[0]))
        partners: dict[int, int] = {}
        for key, s in ranked:
            if len(out) >= top_k:
                break
            ends = self._endpoints(best, key, p.margin)
            why = "one-sided edge" if len(ends) == 1 else f"{kinds[key]} edge"
            if kinds[key] == "doc_link" and len(ends) == 1 and p.partners:
                # A link between documents is the hop a multi-hop question needs: the linked
                # document's component comes right after its anchor even when it wins no subquery
                # on its own, at most `partners` per anchor.
                anchor = ends[0]
                other = key[1] if key[0] == anchor else key[0]
                if partners.get(anchor, 0) < p.partners and other not in seen:
                    partners[anchor] = partners.get(anchor, 0) + 1
                    ends = [anchor, other]
            placed_first = False
            for n in ends:
                if n not in seen and len(out) < top_k:
                    seen.add(n)
                    # The second end of a hop between documents stays attached to the first when
                    # the first is placed right before it (fused_with_seeds moves the pair together);
                    # after a first end placed earlier, it is ranked on its own.
                    partner = kinds[key] == "doc_link" and len(ends) == 2 and n == ends[1] and placed_first
                    out.append(ScoredNode(node_id=ga.comp_ids[n], score=round(s, 6), why=PARTNER_WHY if partner else why))
                    placed_first = n == ends[0]
        floor = out[-1].score if out else 0.0
        for i in seeds:  # seeds never reached by a kept edge, below every edge
            if len(out) >= top_k:
                break
            if int(i) not in seen:
                seen.add(int(i))
                out.append(ScoredNode(node_id=ga.comp_ids[i], score=round(min(floor, float(best[i].sum())), 6), why="seed"))
                floor = out[-1].score
        return out

    @staticmethod
    def _endpoints(best: np.ndarray, key: EdgeKey, margin: float) -> list[int]:
        """The nodes an edge returns. One-sided match: when the edge score is (within `margin`)
        the best single-endpoint score, the other end adds nothing and is left out; margin 0 is
        the paper's exact rule."""
        a, b = key
        if b < 0:
            return [a]
        sa, sb = best[a], best[b]
        total = float(np.maximum(sa, sb).sum())
        gain_b, gain_a = total - float(sa.sum()), total - float(sb.sum())
        if gain_b <= margin and gain_a > margin:
            return [a]
        if gain_a <= margin and gain_b > margin:
            return [b]
        if gain_a <= margin and gain_b <= margin:
            return [a] if sa.sum() >= sb.sum() else [b]
        return [a, b] if sa.sum() >= sb.sum() else [b, a]

    def _scored_edge(
        self, li: LateInteraction, key: EdgeKey, score: float, kind: str, with_matches: bool, margin: float
    ) -> ScoredEdge:
        ga = li.arrays
        a, b = key
        matches: list[SubqueryMatch] = []
        if with_matches:
            for j in range(li.best.shape[1]):
                side = a if b < 0 or li.best[a, j] >= li.best[b, j] else b
                node_id, s = li.winner(side, j)
                matches.append(SubqueryMatch(subquery=j, node_id=node_id, score=round(s, 4)))
        return ScoredEdge(
            src=ga.comp_ids[a], dst=ga.comp_ids[b] if b >= 0 else "ε", edge_kind=kind, score=round(score, 4),
            matches=matches, one_sided=len(self._endpoints(li.best, key, margin)) == 1,
        )

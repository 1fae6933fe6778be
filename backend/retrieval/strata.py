"""Strata's own method, composed from measured recipes (bench/RESULTS.md#stages).

1. Know the corpus. At load the corpus's template share is measured (traits.py): the fraction of
   sampled components whose nearest neighbour in another document is a near copy.
2. Template corpora (filings sharing one boilerplate): BM25 and the Doc_cards pull towards
   whichever filing repeats the question's words, so the ranking is dense, and the leading
   results are spread over documents (one unit per document first): a question about a company
   is answered across its filings.
3. Other corpora: HiKEY's routed ranking fused by reciprocal rank (k=10) with a flat ranking, so
   the documents routing would drop keep a place: the hybrid one, or, for corpora of short
   documents (at most `short_doc_pages` pages on average), MMGraphRAG's entity-backed one with
   weight 2. Both come from the registry (get_retriever_class) with their typed params.
4. Partners, both modes. The question is decomposed (decompose/: rules or the LLM); for the
   leading results, the components one hop away in another document are scored by late
   interaction against the subqueries (graphwalk.py, LILaC's edge score), and the best ones come
   right after their anchor. A hop is a PDF link between the documents or the other document's
   title named in the anchor's text (titles.py): a bridge page is named by the page before it
   whether or not the PDF links it. A partner is placed when it adds to some subquery's best
   match, or, in a corpus where hops are common (hop share >= `hop_share`), on the strength of the
   hop alone, however the question was decomposed: the rules decomposition often leaves most of
   the question in one part, whose best match is the anchor itself, so the bridge page could add
   to no part. A partner that is itself a leading result hops as an anchor would. A placed
   partner leads up to `chain` hops further, each when it adds to some subquery's best match: the
   third page of a 3-hop question is named by the second page, not by the first.
5. Composed hops (`compose`). A dependent subquery is searched with its bridge filled in, as FiF
   composes it (entities.py): the leading unit that best matches the prerequisite names the
   bridge. The best unit of that search joins the partner candidates of the unit that named the
   bridge, scored as any other: a chain's second page is often not the bridge's own but a page
   naming it ("the third studio album of Randy Travis" is Old 8x10's page), which no title hop
   reaches.
6. Named documents (`named`), both non-template modes: the components of the documents whose
   title the question names are a third ranking in the base fusion, weight 2. A composed question
   names only where its chain starts ("the high school of the daughter of Ken Rose's UNLV
   teammate"); the rest is the last hop's words, which pages of the answer's kind match better
   than the start page.

What it does not do: call an LLM beyond the decomposition, or rerank pages.
"""

from __future__ import annotations

from typing import Any

import numpy as np

from backend.retrieval.base import Retriever, StrategyParams, get_retriever_class, param, register
from backend.retrieval.decompose import decompose
from backend.retrieval.entities import bridge_entities, compose, content_tokens
from backend.retrieval.graphwalk import LateInteraction, best_of_document, component_neighbours, edge_scores, graph_arrays
from backend.retrieval.scoring import QueryScores, reciprocal_rank_fusion, top_scored
from backend.retrieval.titles import title_index
from backend.retrieval.traits import HOP_SHARE, SHORT_DOC_PAGES, hop_share, mean_pages, template_share
from backend.types import (
    BeamStep,
    DecomposeStep,
    FuseStep,
    RankStep,
    ScoredEdge,
    ScoredNode,
    SubqueryMatch,
    Trace,
)

RRF_K = 10
# The entity-backed flat ranking: entity weight 0.3 with every mention's full entity score (not
# MMGraphRAG's damped mention hubs), entities matched to the whole question (not to the names it
# writes), and no own-page term (strata's named ranking finds the pages a question names); each
# choice is measured in bench/RESULTS.md#stages.
FLAT_ENTITY_WEIGHT = 0.3


def spread_over_documents(corpus, ranked: list[ScoredNode], per_doc: int) -> list[ScoredNode]:
    """The first `per_doc` units of every document in rank order, then the rest; scores are
    clipped so they stay non-increasing."""
    first, rest, count = [], [], {}
    for hit in ranked:
        doc = corpus.nodes.doc_of(hit.node_id)
        (first if count.get(doc, 0) < per_doc else rest).append(hit)
        count[doc] = count.get(doc, 0) + 1
    out, floor = [], float("inf")
    for hit in first + rest:
        floor = min(floor, hit.score)
        out.append(hit.model_copy(update={"score": floor, "why": hit.why + (" (spread)" if hit in rest else "")}))
    return out


class StrataParams(StrategyParams):
    template_share: float = param(0.3, 0.0, 1.0, "Template share at and above which the corpus is treated as boilerplate filings.")
    per_doc_first: int = param(1, 1, 10, "Template corpora: units per document before any document gets more.")
    short_doc_pages: float = param(SHORT_DOC_PAGES, 0.0, 1000.0, "Mean pages per document at and below which the flat ranking is MMGraphRAG's.")
    hop_share: float = param(HOP_SHARE, 0.0, 1.0, "Share of components naming or linking another document at and above which a hop alone earns a partner its place.")
    partners: int = param(2, 0, 5, "Linked components placed after each anchor (0: no graph walk).")
    links: int = param(1, 0, 1, "1: hop along PDF links between documents; 0: leave them out (to measure the title hop alone).", ui=False)
    mentions: int = param(1, 0, 1, "1: also hop to documents whose title a leading component names; 0: PDF links only.")
    partner_depth: int = param(10, 0, 50, "How many leading results get a partner.")
    per_doc: int = param(3, 1, 50, "Components of a linked document considered as partners.")
    chain: int = param(2, 0, 3, "Further hops from a placed partner, each only when it adds to some subquery's best match (0: one hop).")
    compose: int = param(
        1, 0, 3,
        "Units per composed hop: each dependent subquery with the bridge named by the leading unit that best matches its "
        "prerequisite filled in (FiF's composition) is searched flat, and its best units join that unit's partner "
        "candidates (0: none).",
    )
    named: float = param(
        2.0, 0.0, 5.0,
        "Weight, in the reciprocal-rank fusion of the base ranking, of the components of the documents "
        "whose title the question names (0: none).",
    )
    alpha: float = param(
        0.5, 0.0, 1.0, "BM25 weight of the partners' late interaction (other corpora; template corpora use 0).",
        setting="retrieval.hybrid_alpha", ui=False,
    )


@register
class StrataRetriever(Retriever):
    name = "strata"
    description = "Strata: dense + spread on template corpora, HiKEY elsewhere, LILaC partners across document links."
    Params = StrataParams
    follows_references = True

    def retrieve(self, query: str, top_k: int, params: dict[str, Any], trace: Trace) -> list[ScoredNode]:
        p = self.resolve_params(params)
        corpus = self.corpus
        comps = corpus.layers["components"]
        if not comps.ids or top_k <= 0:
            return []
        share = template_share(corpus)
        template = share >= p.template_share
        hops = hop_share(corpus)
        linked_corpus = hops >= p.hop_share
        trace.params.update({"template_share": round(share, 4), "mode": "template" if template else "hikey",
                             "hop_share": round(hops, 4),
                             "partners": p.partners, "partner_depth": p.partner_depth, "per_doc": p.per_doc})
        k = max(top_k, p.partner_depth)
        sc = self.question_scores()  # one scoring pass per layer, shared by every ranking below
        if template:
            base = self._template_ranking(sc, query, k, p, trace)
            alpha = 0.0
        else:
            base = self._routed_and_flat(sc, query, k, p, trace, self._named(sc, query, k, p))
            alpha = p.alpha
        if p.partners <= 0 or p.partner_depth <= 0:
            return base[:top_k]
        # 3. LILaC partners across document links.
        subqueries, reason = decompose(self.llm, query)
        trace.add(DecomposeStep(subqueries=subqueries, backend=self.llm.name, reason=reason))
        li = LateInteraction(self, subqueries, alpha, 0.0, 0.5, scores=sc)
        composed = self._composed_hops(sc, subqueries, base, li, p, trace) if p.compose > 0 and not template else {}
        return self._with_partners(base, li, top_k, p, linked_corpus, trace, composed)

    def _composed_hops(self, sc: QueryScores, subqueries: list, base: list[ScoredNode], li: LateInteraction,
                       p: StrataParams, trace: Trace) -> dict[str, list[ScoredNode]]:
        """For each dependent subquery, the best units of a flat search for it with its bridge
        filled in, keyed by the unit that named the bridge: they join that unit's partner
        candidates. The bridge is FiF's: the leading unit that best matches the prerequisite names
        it ("Randy Travis" for "the co-writer of Alan Jackson on ..."), and "the third studio album
        of Randy Travis" finds Old 8x10, a page the title hops cannot reach because it is not the
        bridge's own (MuSiQue's second pages often are not). The next hop's prerequisite is the
        composed search's first unit (its candidates count only if that unit is placed). A name the
        dependent subquery already writes is not its bridge ("Alice David is the voice of Lara Croft in
        a video game developed by which company": the bridge is the game, not Alice David)."""
        corpus, comps = self.corpus, self.corpus.layers["components"]
        ga = li.arrays
        leading = [h.node_id for h in base[: p.partner_depth]]
        candidates: dict[str, list[ScoredNode]] = {}
        shown: dict[str, list[ScoredNode]] = {}
        asked = [sub.text for sub in subqueries]  # each subquery as searched, its bridge filled in
        for i, sub in enumerate(subqueries):
            if not sub.depends_on or not leading:
                continue
            j = sub.depends_on[-1]
            unit_id = max(leading, key=lambda n: (float(li.best[ga.comp_row[n], j]), n))
            node = corpus.nodes[unit_id]
            links = [corpus.documents[d].title for d in title_index(corpus).mentioned(node.text, exclude=node.doc)]
            names = bridge_entities(asked[j], {"title": corpus.documents[node.doc].title, "text": node.text, "links": links})
            names = [n for n in names if not content_tokens(n) <= content_tokens(sub.text)]
            if not names:
                continue
            text = asked[i] = compose(sub.text, names[0], subqueries[j].text)
            hits = top_scored(comps.ids, sc.hybrid(comps, text, sc.encode(self.encoder, [text])[0], 0.5), p.compose,
                              f"composed hop: {text}")
            if not hits:
                continue
            candidates.setdefault(unit_id, []).extend(h.model_copy(update={"why": f"composed hop: {text}"}) for h in hits)
            shown[text] = hits
            leading = [hits[0].node_id]
        if shown:
            trace.add(FuseStep(label="composed hops (partner candidates of the unit naming the bridge)", inputs=shown,
                               weights={"units per hop": float(p.compose)}))
        return candidates

    def _named(self, sc: QueryScores, query: str, k: int, p: StrataParams) -> list[ScoredNode]:
        """The components of the documents whose title the question names (titles.py: the
        whole title, or its name before a qualifier), by the question's hybrid score."""
        if p.named <= 0:
            return []
        ga = graph_arrays(self.corpus)
        docs = [d for group in title_index(self.corpus).mentions(query) for d in group]
        parts = [ga.doc_components[d] for d in docs if d in ga.doc_components]
        if not parts:
            return []
        rows = np.concatenate(parts)
        comps = self.corpus.layers["components"]
        score = sc.hybrid_with_own(comps, query, sc.encode(self.encoder, [query])[0], 0.5, rows)[rows]
        order = np.lexsort((rows, -score))[: 3 * k]
        return [ScoredNode(node_id=comps.ids[rows[i]], score=round(float(score[i]), 6), why="named") for i in order]

    def _template_ranking(self, sc: QueryScores, query: str, k: int, p: StrataParams, trace: Trace) -> list[ScoredNode]:
        """Template corpora: dense over the components (the FAISS index's top), the leading
        results spread over documents."""
        comps = self.corpus.layers["components"]
        rows, cos = sc.top_dense(comps, sc.encode(self.encoder, [query])[0], max(k * 4, 60))
        ranked = [ScoredNode(node_id=comps.ids[i], score=round(float(s), 6), why="dense") for i, s in zip(rows, cos)]
        trace.add(RankStep(label="template corpus: dense over the components", index="dense", candidates=ranked[:30]))
        return spread_over_documents(self.corpus, ranked, p.per_doc_first)[:k]

    def _routed_and_flat(
        self, sc: QueryScores, query: str, k: int, p: StrataParams, trace: Trace, named: list[ScoredNode] = (),
    ) -> list[ScoredNode]:
        """HiKEY's routed ranking fused by reciprocal rank (k=10) with a flat one: the hybrid
        ranking for long documents (routing wins on long reports, the flat ranking keeps the
        documents routing would drop); MMGraphRAG's entity-backed ranking, weighted 2, for
        corpora of short documents, where table row labels and names carry the question
        (bench/RESULTS.md#stages). Both are the registry's, asked with their typed params."""
        entity_flat = mean_pages(self.corpus) <= p.short_doc_pages
        flat_name, flat_weight = ("mmgraph", 2.0) if entity_flat else ("hybrid", 1.0)
        flat_params = {"entity_weight": FLAT_ENTITY_WEIGHT, "damp_mentions": 0, "by_names": 0, "homes": 0} if entity_flat else {}
        routed = self._part("hikey", sc).retrieve(query, 3 * k, self._params("hikey", {}), trace)
        flat_trace = Trace(method=flat_name)
        flat = self._part(flat_name, sc).retrieve(query, 3 * k, self._params(flat_name, flat_params), flat_trace)
        trace.steps.extend(flat_trace.steps)
        trace.notes.extend(n for n in flat_trace.notes if n not in trace.notes)
        rankings = [([h.node_id for h in routed], 1.0), ([h.node_id for h in flat], flat_weight)]
        if named:
            rankings.append(([h.node_id for h in named], p.named))
        fused = reciprocal_rank_fusion(rankings, RRF_K)
        order = sorted(fused, key=lambda n: (-fused[n], n))[:k]
        base = [ScoredNode(node_id=n, score=round(fused[n], 6), why=f"HiKEY + {flat_name} (reciprocal rank)") for n in order]
        trace.params["flat"] = flat_name
        inputs, weights = {"hikey": routed[:10], flat_name: flat[:10]}, {"hikey": 1.0, flat_name: flat_weight}
        if named:
            inputs["named documents"], weights["named documents"] = named[:10], p.named
        trace.add(FuseStep(label=f"HiKEY routed ranking + flat {flat_name} ranking" + (" + named documents" if named else ""),
                           inputs=inputs, weights={**weights, "rrf_k": float(RRF_K)}))
        return base

    def _part(self, method: str, sc: QueryScores) -> Retriever:
        """Another registered method (the registry's), built for this question over the same
        corpus, encoders, LLM and score cache."""
        cls = get_retriever_class(method)
        return cls(self.corpus, self.encoder, self.settings, sub_encoder=self.sub_encoder, llm=self.llm, scores=sc)

    def _params(self, method: str, overrides: dict[str, Any]) -> dict[str, Any]:
        """Every parameter of another method, its defaults under these settings with `overrides`,
        validated by its typed params model (a name it does not have fails)."""
        model = get_retriever_class(method).Params
        return model.model_validate({**model.defaults(self.settings), **overrides}).model_dump()

    def _partner_candidates(
        self, node_id: str, li: LateInteraction, p: StrataParams, seen: set[str], linked_corpus: bool
    ) -> tuple[dict[int, str], dict[int, int]]:
        """Component rows one hop from a component into another document, with how: a PDF link
        between the documents ("doc_link"), or, in a corpus where hops are common, the other
        document's title named in this component's text ("mention"; its `per_doc` best
        components for the question). Where units rarely name another document a name is
        incidental, not a hop (filings naming another company). Also returns, per candidate named by title, the mention it was named by
        (homonyms share one)."""
        ga = li.arrays
        out: dict[int, str] = {}
        mention_of: dict[int, int] = {}
        if p.links:
            out = {u: kind for u, kind in component_neighbours(self.corpus, node_id, li, p.per_doc) if kind == "doc_link"}
        if p.mentions and linked_corpus:
            node = self.corpus.nodes[node_id]
            for g, docs in enumerate(title_index(self.corpus).mentions(node.text, exclude=node.doc)):
                for doc in docs:
                    for u in best_of_document(ga, li, doc, p.per_doc):
                        out.setdefault(int(u), "mention")
                        mention_of.setdefault(int(u), g)
        return {u: kind for u, kind in sorted(out.items()) if ga.comp_ids[u] not in seen}, mention_of

    def _with_partners(
        self, base: list[ScoredNode], li: LateInteraction, top_k: int, p: StrataParams, linked_corpus: bool, trace: Trace,
        composed: dict[str, list[ScoredNode]] | None = None,
    ) -> list[ScoredNode]:
        """The base ranking with the best linked components placed right after their anchors, and
        (chain > 0) each placed partner's own best hop right after it when that hop adds to some
        subquery's best match along the chain: the third page of a 3-hop question is named by the
        second, not by the first. A partner that is one of the base's first `partner_depth`
        results hops as an anchor (its first hops, up to `partners` of them): "The Year Without
        a Santa Claus" (1974), placed after the 2006 remake that names it, still leads to
        Rankin/Bass, which produced it."""
        out: list[ScoredNode] = []
        seen: set[str] = set()
        edges: list[ScoredEdge] = []
        frontier: list[str] = []
        partners_found: list[str] = []
        leading = {h.node_id for h in base[: p.partner_depth]}
        for rank, hit in enumerate(base):
            if len(out) >= top_k:
                break
            if hit.node_id in seen:
                continue
            seen.add(hit.node_id)
            out.append(hit)
            if rank >= p.partner_depth:
                continue
            frontier.append(hit.node_id)
            chain = [(hit.node_id, li.best[li.arrays.comp_row[hit.node_id]], p.partners, True)]
            for depth in range(p.chain + 1):
                next_chain = []
                for anchor, reached, limit, first_hop in chain:
                    for partner, best_so_far in self._place_partners(
                        anchor, reached, limit, first_hop, li, p, linked_corpus, seen, out, top_k, hit.score, edges,
                        (composed or {}).get(anchor, []),
                    ):
                        partners_found.append(partner)
                        if depth < p.chain:
                            # A leading result placed as a partner hops as its own anchor would.
                            lead = partner in leading
                            next_chain.append((partner, best_so_far, p.partners if lead else 1, lead))
                chain = next_chain
                if not chain:
                    break
        trace.add(BeamStep(iteration=1, frontier=frontier, edges=edges, kept=partners_found,
                           pruned=[e.dst for e in edges if e.dst not in set(partners_found)]))
        trace.add(FuseStep(label="base ranking + link partners", inputs={"ranked": out[:30]},
                           weights={"partners": float(p.partners), "chain": float(p.chain)},
                           reason=f"{len(partners_found)} partner(s) placed"))
        return out

    def _place_partners(
        self, anchor: str, reached: np.ndarray, limit: int, first_hop: bool, li: LateInteraction, p: StrataParams,
        linked_corpus: bool, seen: set[str], out: list[ScoredNode], top_k: int, score: float, edges: list[ScoredEdge],
        composed: list[ScoredNode] = (),
    ) -> list[tuple[str, np.ndarray]]:
        """Place up to `limit` of the anchor's one-hop components after it (in `out`), best edge
        first; `reached`: the best match per subquery along the chain so far. A first hop in a
        linked corpus may be placed on the strength of the hop alone, whatever the number of
        subqueries; a further hop only when it adds to some subquery. A title names one hop, so
        the pages it names (homonyms) and their units share one place. Returns the placed partners
        with the chain's best matches through them."""
        ga, best = li.arrays, li.best
        n_subqueries = best.shape[1]
        a = ga.comp_row[anchor]
        kinds, mention_of = self._partner_candidates(anchor, li, p, seen, linked_corpus)
        for hop in composed:  # the composed hop's units are candidates too, scored as any other
            if hop.node_id not in seen and hop.node_id in ga.comp_row:
                kinds.setdefault(int(ga.comp_row[hop.node_id]), "composed")
        if not kinds:
            return []
        homonyms_placed: set[int] = set()
        cand = np.array(list(kinds), dtype=np.int64)
        scored = edge_scores(reached[None, :], best[cand])
        gains = scored - reached.sum()
        placed: list[tuple[str, np.ndarray]] = []
        for j in np.lexsort((cand, -scored)):
            if len(placed) >= limit or len(out) >= top_k:
                break
            u = int(cand[j])
            if ga.comp_ids[u] in seen or mention_of.get(u, -1) in homonyms_placed:
                continue  # one place per mention: "The Young Ones" names the TV series or the video game
            edges.append(ScoredEdge(
                src=anchor, dst=ga.comp_ids[u], edge_kind=kinds[u], score=round(float(scored[j]), 4),
                matches=[SubqueryMatch(subquery=q, node_id=li.winner(a if best[a, q] >= best[u, q] else u, q)[0],
                                       score=round(float(max(reached[q], best[u, q])), 4)) for q in range(n_subqueries)],
                one_sided=bool(gains[j] <= 0),
            ))
            if gains[j] <= 0 and (not first_hop or not linked_corpus):
                # The partner adds nothing any subquery needs. In a linked corpus (a wiki) the first
                # hop alone is reason enough: a one-part question may still hide a hop, and a
                # decomposition whose parts the anchor already matches best leaves none to add to
                # ("Westminster School, Adelaide ... located at Marion, South Australia").
                continue
            seen.add(ga.comp_ids[u])
            if u in mention_of:
                homonyms_placed.add(mention_of[u])
            out.append(ScoredNode(node_id=ga.comp_ids[u], score=score, why=f"linked from {anchor}"))
            placed.append((ga.comp_ids[u], np.maximum(reached, best[u])))
        return placed

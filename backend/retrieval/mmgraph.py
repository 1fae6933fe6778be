"""MMGraphRAG's Entity2Entity retrieval (section 3.3) over the entity layer built at ingest
(backend/graph/entities.py).

1. Node selection: the paper extracts the query's entities and matches them to the graph's.
   Here the query's entities are the names it writes (quoted strings and capitalised word runs,
   entities.entity_spans), and every graph entity scores its best match to one of them,
   alpha * min-max(BM25) + (1 - alpha) * min-max(cosine) over its name, type and description (in
   the subcomponent encoder's space, which the entities are encoded in); the top-K are V_K
   (`top_entities`; the paper's QA peaks near K = 10, its Figure 5). A question that writes no
   name, or one asked with `by_names` 0 (the template profile's: filings that all name the same
   companies), is matched whole (bench/RESULTS.md#stages).
2. Subgraph extraction (equation 18): narrow follows the relation edges among V_K (both ends in
   V_K); broad follows every relation edge of V_K one hop (one end in V_K) and so reaches new
   entities. An entity at the end of a followed edge scores the higher of its own match and
   DECAY * its anchor's match, damped when the anchor is a hub (an entity with hundreds of
   relations says little through each one).
3. Evidence: the paper gives V_K and the edges to the generator as text; Strata's reader reads
   units, so the results are the components the reached entities come from (MENTIONS of the
   component, or of its sentence or row). Each component scores
   entity_weight * e(c) + (1 - entity_weight) * s(c): e(c) is the best score among the entities it
   mentions, each damped like a hub anchor when many components mention it, plus RELATION_BONUS
   when it states a followed relation (it mentions both ends);
   s(c) is its own hybrid similarity to the query. Components no entity reaches keep
   (1 - entity_weight) * s(c), so the ranking is filled up to top_k by the hybrid ranking.
4. Own pages (`homes`, not in the paper): in a web of short articles an entity's facts sit on its
   own page, a short document titled by its name, which need not mention the entity the question
   names. Each matched or reached entity passes its score to its own page's components (weight
   0.3, added to the score above), and in a broad walk the entities a matched entity's own page
   mentions are reached at DECAY * its match, as a relation would reach them: the rules extractor
   relates the DISCLOSE Act to "U.S." but not to Chris Van Hollen, whom its page names as the
   bill's sponsor. Long documents are no one's own page, so corpora of them rank as without the
   term. The pages whose title a matched entity's own page writes (the title index, as FiF and
   strata read a page's names) are reached the same way: the rules extractor reads "the former
   CEO of Viglen" as the entity "CEO of Viglen", whose own page there is none
   (bench/RESULTS.md#stages).
A workspace without entities is ranked by the hybrid scores alone, and the trace says so.

What it does not do: ask an LLM anything at query time (the paper's generator reads the
subgraph; here the reader reads the components), or search figures by their pixels.
"""

from __future__ import annotations

import math
from dataclasses import dataclass
from typing import Any

import numpy as np

from backend.retrieval.base import Retriever, StrategyParams, param, register
from backend.retrieval.entities import entity_spans
from backend.retrieval.graphwalk import graph_arrays
from backend.retrieval.titles import WORD, title_index
from backend.retrieval.scoring import top_scored
from backend.retrieval.traits import SHORT_DOC_PAGES
from backend.types import EdgeKind, EntityEdge, EntityHit, EntityStep, Layer, ScoredNode, Trace

DECAY = 0.8  # score a neighbour reached over a broad edge inherits from its anchor
HUB_RELATIONS = 25  # anchors with more relation edges pass on sqrt(HUB_RELATIONS / degree) of it; entities with
# more mentioning components pass on sqrt(HUB_RELATIONS / mentions) of their score to each
RELATION_BONUS = 0.1  # a component stating a followed relation (it mentions both ends)
TRACE_EDGES = 40
TRACE_HOMES = 8
TRACE_COMPONENTS = 30


@dataclass(frozen=True, slots=True)
class MentionIndex:
    """The components each node is mentioned in (through its MENTIONS edges, a sentence's or a
    row's mention counting for its component), as sorted components-layer rows: node row r's are
    comps[starts[r]:starts[r + 1]]."""

    starts: np.ndarray  # (n_nodes + 1,)
    comps: np.ndarray  # int32

    def of(self, node_row: int) -> np.ndarray:
        return self.comps[self.starts[node_row]:self.starts[node_row + 1]]


def mention_index(corpus) -> MentionIndex:
    """The corpus's mention index, built once per loaded corpus."""
    return corpus.derived(_build_mention_index)


def _build_mention_index(corpus) -> MentionIndex:
    nodes = corpus.nodes
    n, n_comps = len(nodes.ids), max(1, len(corpus.layers["components"].ids))
    comp_row = np.full(n, -1, dtype=np.int32)
    comp_row[np.array([nodes.rows[c] for c in corpus.layers["components"].ids], dtype=np.int64)] = np.arange(
        len(corpus.layers["components"].ids), dtype=np.int32)
    parent = nodes.parent_rows()
    subcomponent = (nodes.layer_codes() == list(Layer).index(Layer.SUBCOMPONENT)) & (parent >= 0)
    unit_comp = comp_row[np.where(subcomponent, parent, np.arange(n))]  # Corpus.component_of, as rows
    del comp_row, parent, subcomponent
    src, dst = corpus.edges.ends((EdgeKind.MENTIONS,))  # node rows: the corpus's edges share its numbering
    keys = []
    for node, unit in ((src, dst), (dst, src)):  # both directions, as neighbour_ids reads them
        comp = unit_comp[unit]
        kept = comp >= 0
        keys.append(node[kept].astype(np.int64) * n_comps + comp[kept])
    key = np.unique(np.concatenate(keys))  # sorted by node, then component
    starts = np.zeros(n + 1, dtype=np.int64)
    np.cumsum(np.bincount(key // n_comps, minlength=n), out=starts[1:])
    return MentionIndex(starts, (key % n_comps).astype(np.int32))


def _mentions_of(index: MentionIndex, node_rows: np.ndarray) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """(who, comp, counts): node_rows[who[i]] is mentioned in component comp[i], entity by entity
    in the order of node_rows, each entity's components sorted; counts: components per entity."""
    starts = index.starts[node_rows]
    counts = index.starts[node_rows + 1] - starts
    who = np.repeat(np.arange(len(node_rows)), counts)
    offsets = np.arange(int(counts.sum())) - np.repeat(np.cumsum(counts) - counts, counts)
    return who, index.comps[np.repeat(starts, counts) + offsets].astype(np.int64), counts


def entity_rows(corpus) -> np.ndarray:
    """(n_nodes,) each node's row in the entities layer, -1 for other nodes; once per loaded corpus."""
    return corpus.derived(_build_entity_rows)


def _build_entity_rows(corpus) -> np.ndarray:
    ids = corpus.layers["entities"].ids
    out = np.full(len(corpus.nodes.ids), -1, dtype=np.int64)
    out[np.array([corpus.nodes.rows[e] for e in ids], dtype=np.int64)] = np.arange(len(ids))
    return out


@dataclass(frozen=True, slots=True)
class EntityHomes:
    """Each entity's own pages: the short documents (at most SHORT_DOC_PAGES pages: an article
    about one thing, not a filing that names a company on every page) whose title is the entity's
    name, by the title forms of titles.py. A form that needs its qualifier ("Bangor" for
    "Bangor, Maine") counts only while an entity the qualifier names is reached too, as titles.py
    counts it only where the text writes the qualifier. Node row r's homes are
    docs[starts[r]:starts[r + 1]], each with the form id it needs reached (-1: none)."""

    starts: np.ndarray  # (n_nodes + 1,)
    docs: np.ndarray  # int64 indexes into doc_ids
    needs: np.ndarray  # int64
    form: np.ndarray  # (n_nodes,) each entity node's form id, -1 for other nodes
    doc_ids: list[str]

    def best(self, rows: np.ndarray, values: np.ndarray) -> list[tuple[float, int, int]]:
        """The homes of the entities at node `rows` scoring `values`: (score, document index, entity
        row) per document, its best entity's score (ties to the lower row), best first."""
        starts = self.starts[rows]
        counts = self.starts[rows + 1] - starts
        who = np.repeat(np.arange(len(rows)), counts)
        pos = np.repeat(starts, counts) + np.arange(int(counts.sum())) - np.repeat(np.cumsum(counts) - counts, counts)
        needs = self.needs[pos]
        ok = (needs < 0) | np.isin(needs, self.form[rows])
        who, docs = who[ok], self.docs[pos[ok]]
        top: dict[int, tuple[float, int]] = {}
        for w, d in zip(who.tolist(), docs.tolist()):
            key = (float(values[w]), -int(rows[w]))
            if d not in top or key > top[d]:
                top[d] = key
        return sorted(((v, d, -neg) for d, (v, neg) in top.items()), key=lambda t: (-t[0], t[1]))


def entity_homes(corpus) -> EntityHomes:
    """The corpus's entity homes, built once per loaded corpus."""
    return corpus.derived(_build_entity_homes)


def _build_entity_homes(corpus) -> EntityHomes:
    index = title_index(corpus)
    doc_ids = [d for d, doc in corpus.documents.items() if doc.pages <= SHORT_DOC_PAGES]
    doc_index = {d: i for i, d in enumerate(doc_ids)}
    nodes = corpus.nodes
    forms: dict[tuple[str, ...], int] = {}
    form = np.full(len(nodes.ids), -1, dtype=np.int64)
    entities = []
    for e in corpus.layers["entities"].ids:
        words = tuple(w.lower() for w in WORD.findall(nodes.text_of(e)))
        if words:
            row = nodes.rows[e]
            form[row] = forms.setdefault(words, len(forms))
            entities.append((row, words))
    homes = []
    for row, words in sorted(entities):
        for d in index.by_words.get(words, ()):
            needs = index.qualifiers.get((words, d))
            need = -1 if needs is None else forms.get(needs, -2)
            if d in doc_index and need != -2:  # -2: no entity is named by the qualifier
                homes.append((row, doc_index[d], need))
    starts = np.zeros(len(nodes.ids) + 1, dtype=np.int64)
    table = np.array(homes, dtype=np.int64).reshape(-1, 3)
    np.cumsum(np.bincount(table[:, 0], minlength=len(nodes.ids)), out=starts[1:])
    return EntityHomes(starts, table[:, 1].copy(), table[:, 2].copy(), form, doc_ids)


@dataclass(frozen=True, slots=True)
class Followed:
    """The relation edges followed, each once (source, target and relation as the edge table numbers
    them) with the highest score it was followed with."""

    src: np.ndarray
    dst: np.ndarray
    prov: np.ndarray
    score: np.ndarray

    @classmethod
    def of(cls, parts: list[tuple[np.ndarray, np.ndarray, np.ndarray, np.ndarray]]) -> Followed:
        if not parts:
            empty = np.zeros(0, dtype=np.int64)
            return cls(empty, empty, empty, np.zeros(0))
        src, dst, prov, score = (np.concatenate(col) for col in zip(*parts))
        order = np.lexsort((-score, prov, dst, src))  # each edge's highest score first
        src, dst, prov, score = src[order], dst[order], prov[order], score[order]
        first = np.r_[True, (src[1:] != src[:-1]) | (dst[1:] != dst[:-1]) | (prov[1:] != prov[:-1])] if len(src) else order
        return cls(src[first], dst[first], prov[first], score[first])

    def pairs(self, entity_rows_in_order: np.ndarray) -> np.ndarray:
        """The distinct (source, target) pairs as positions in `entity_rows_in_order` (node rows): (m, 2)."""
        if not len(self.src):
            return np.zeros((0, 2), dtype=np.int64)
        sorter = np.argsort(entity_rows_in_order, kind="stable")
        ends = np.unique(np.stack([self.src, self.dst], axis=1).astype(np.int64), axis=0)
        return sorter[np.searchsorted(entity_rows_in_order, ends, sorter=sorter)]

    def best(self, edges, k: int) -> list[tuple[str, str, str, float]]:
        """The k highest-scored edges as (source id, target id, relation, score), ties by the ids and relation."""
        if not len(self.src):
            return []
        cut = np.sort(self.score)[::-1][min(k, len(self.score)) - 1]
        near = np.flatnonzero(self.score >= cut)
        rows = sorted((-float(self.score[i]), edges.id_of(int(self.src[i])), edges.id_of(int(self.dst[i])),
                       edges.provenance_of(int(self.prov[i]))) for i in near.tolist())[:k]
        return [(s, d, rel, -neg) for neg, s, d, rel in rows]


@dataclass(frozen=True, slots=True)
class Evidence:
    """The components the reached entities are mentioned in (sorted rows) and each one's best
    entity (its node row)."""

    rows: np.ndarray
    entity_rows: np.ndarray

    def entity_of(self, row: int) -> int | None:
        i = int(np.searchsorted(self.rows, row))
        return int(self.entity_rows[i]) if i < len(self.rows) and self.rows[i] == row else None

    def best(self, final: np.ndarray, ids: list[str], k: int) -> list[tuple[float, int]]:
        """The k best of these components by final score rounded to 6 places, ties by id: (score, row)."""
        if not len(self.rows):
            return []
        scores = final[self.rows]
        cut = np.partition(scores, len(scores) - min(k, len(scores)))[len(scores) - min(k, len(scores))]
        near = self.rows[scores >= cut - 1e-6]  # every row that can round into the k best
        top = sorted((-round(float(final[r]), 6), ids[r], int(r)) for r in near.tolist())[:k]
        return [(-neg, r) for neg, _id, r in top]


class MMGraphParams(StrategyParams):
    top_entities: int = param(10, 1, 100, "K: entity nodes matched to the query (the paper's QA peaks near 10).")
    broad: int = param(
        1, 0, 1,
        "1: follow every relation edge of the matched entities one hop (E_K^broad, reaches new entities); "
        "0: only the edges among the matched entities (E_K^narrow).",
    )
    alpha: float = param(0.5, 0.0, 1.0, "BM25 weight in the hybrid scores of entities and components.")
    entity_weight: float = param(
        0.1, 0.0, 1.0,
        "Weight of the entity evidence against the component's own similarity (bench/RESULTS.md#stages).",
    )
    by_names: int = param(
        1, 0, 1,
        "1: entities are matched to the names the question writes (each name's best match; the whole question when it "
        "names none). The template profile sets 0: there every filing names the same companies.",
    )
    homes: float = param(
        0.3, 0.0, 1.0,
        "Weight of the own-page term: a matched or reached entity passes its score to the components of its own page "
        "(a short document titled by its name), and the entities a matched entity's own page mentions are reached "
        "too (bench/RESULTS.md#stages).",
    )
    damp_mentions: int = param(
        1, 0, 1,
        "1: an entity many components mention passes on sqrt(25 / mentions) of its score to each, as a hub anchor "
        "does along its relations (bench/RESULTS.md#stages).",
    )


@register
class MMGraphRetriever(Retriever):
    name = "mmgraph"
    description = "MMGraphRAG: top-K entities for the query, their relation edges (broad or narrow), the components they come from."
    Params = MMGraphParams
    follows_references = True

    def retrieve(self, query: str, top_k: int, params: dict[str, Any], trace: Trace) -> list[ScoredNode]:
        p = self.resolve_params(params, trace)
        k, broad, alpha, weight = p.top_entities, bool(p.broad), p.alpha, p.entity_weight
        mode = "broad" if broad else "narrow"
        trace.params.update({"top_entities": k, "broad": int(broad), "alpha": alpha, "entity_weight": weight,
                             "damp_mentions": p.damp_mentions, "by_names": p.by_names, "homes": p.homes})
        corpus = self.corpus
        comps = corpus.layers["components"]
        if not comps.ids:
            return []
        sc = self.question_scores()
        own = sc.hybrid(comps, query, sc.encode(self.encoder, [query])[0], alpha)  # (n_components,)
        entities = corpus.entity_layer(self.sub_encoder)
        if not entities.ids:
            results = top_scored(comps.ids, own, top_k, "hybrid (no entity layer)")
            trace.notes.append("This workspace has no entities: ranked by hybrid BM25 + dense over components.")
            trace.add(EntityStep(mode=mode, entities=[], components=results))
            return results

        # 1. Node selection: V_K.  (n_entities,)
        names = entity_spans(query) if p.by_names else []
        if names:
            ent_scores = sc.hybrid_many(entities, names, sc.encode(self.sub_encoder, names), alpha).max(axis=1)
            trace.notes.append(f"Entities matched to the names the question writes: {', '.join(names)}.")
        else:
            ent_scores = sc.hybrid(entities, query, sc.encode(self.sub_encoder, [query])[0], alpha)
        anchors = top_scored(entities.ids, ent_scores, k, "entity match")
        # Reached entities by node row: a broad walk over 100k pages reaches ~50k of them.
        reached: dict[int, float] = {corpus.nodes.rows[a.node_id]: a.score for a in anchors}
        via: dict[int, str] = {corpus.nodes.rows[a.node_id]: "matched" for a in anchors}

        # 2. Subgraph extraction: narrow (both ends in V_K) or broad (one end in V_K).
        followed = self._walk(anchors, broad, ent_scores, reached, via)

        # 3. The components the reached entities come from.
        entity_term, evidence, hubs = self._evidence(reached, followed, comps, bool(p.damp_mentions))
        final = weight * entity_term + (1 - weight) * own
        home_of: dict[int, str] = {}
        if p.homes > 0:
            final = final + p.homes * self._homes(reached, via, anchors if broad else [], home_of, trace)
        results = top_scored(comps.ids, final, top_k, "hybrid")
        results = [self._explain(r, evidence.entity_of(comps.dense.row[r.node_id]), via, hubs, home_of.get(comps.dense.row[r.node_id]))
                   for r in results]

        # The trace's best reached components; records for those only (an entity named across thousands
        # of documents reaches thousands of components).
        shown = evidence.best(final, comps.ids, TRACE_COMPONENTS)
        reached_components = [ScoredNode(node_id=comps.ids[r], score=score, why=self._why(evidence.entity_of(r), via, hubs))
                              for score, r in shown]
        trace.add(EntityStep(
            mode=mode,
            entities=[EntityHit(node_id=a.node_id, name=corpus.nodes.text_of(a.node_id), score=a.score) for a in anchors],
            edges=[EntityEdge(src=s, dst=d, relation=rel, score=round(sc, 6)) for s, d, rel, sc in followed.best(corpus.edges, TRACE_EDGES)],
            components=reached_components,
        ))
        return results

    def _walk(self, anchors: list[ScoredNode], broad: bool, ent_scores: np.ndarray, reached: dict[int, float],
              via: dict[int, str]) -> Followed:
        """Follow the anchors' relation edges one hop (narrow: only to other anchors), filling
        `reached` and `via` in place: an entity at the end of a followed edge scores the higher of
        its own match and DECAY * its anchor's match, damped for an anchor with many relations.
        On the edge table's columns: an anchor named across a big corpus has tens of thousands of
        relations, which one Edge record each took ~1 s a question to walk at 100k pages."""
        corpus = self.corpus
        edges = corpus.edges
        layer_row = entity_rows(corpus)
        matched = np.array([corpus.nodes.rows[a.node_id] for a in anchors], dtype=np.int64)
        parts = []
        for a in anchors:
            other, src, dst, prov = edges.incident(a.node_id, (EdgeKind.RELATION,))
            damp = min(1.0, math.sqrt(HUB_RELATIONS / max(1, len(other))))
            if not broad:
                keep = np.isin(other, matched)
                other, src, dst, prov = other[keep], src[keep], dst[keep], prov[keep]
            if not len(other):
                continue
            score = DECAY * a.score * damp  # one hop from the anchor's own match score, never along a chain
            found, first = np.unique(other, return_index=True)
            found = found[np.argsort(first, kind="stable")]  # in the order the edges give them
            rows = layer_row[found]
            own = np.where(rows >= 0, ent_scores[np.maximum(rows, 0)], 0.0).tolist()
            anchor_name = corpus.nodes.text_of(a.node_id)
            for entity, own_score in zip(found.tolist(), own):
                if entity not in reached:
                    reached[entity] = float(own_score)
                if score > reached[entity]:
                    reached[entity] = score
                    via[entity] = anchor_name
            parts.append((src, dst, prov, np.full(len(src), score)))
        return Followed.of(parts)

    def _homes(self, reached: dict[int, float], via: dict[int, str], anchors: list[ScoredNode], home_of: dict[int, str],
               trace: Trace) -> np.ndarray:
        """(n_components,) the own-page term: each component of an entity's own page (EntityHomes)
        gets the entity's score, the best one where several entities share a page. A matched
        entity's own page states its relations in prose, and names entities no extracted relation
        reaches (the DISCLOSE Act's page names Chris Van Hollen, who introduced it): in a broad
        walk (`anchors` given) those are reached at DECAY * the anchor's match, their own pages
        with them. Fills `home_of`
        (component row -> why) for the components that get the term."""
        corpus = self.corpus
        homes, ga, layer_row = entity_homes(corpus), graph_arrays(corpus), entity_rows(corpus)
        comps, ids = corpus.layers["components"].ids, corpus.nodes.ids
        scores, how = dict(reached), dict(via)
        anchor_homes = [(a, homes.doc_ids[d]) for a in anchors
                        for _score, d, _entity in homes.best(np.array([corpus.nodes.rows[a.node_id]]), np.array([a.score]))]
        for a, home in anchor_homes:
            for r in ga.doc_components[home].tolist():
                for e in corpus.neighbour_ids(comps[r], (EdgeKind.MENTIONS,)):
                    named = corpus.nodes.rows[e]
                    if layer_row[named] >= 0 and DECAY * a.score > scores.get(named, 0.0):
                        scores[named] = DECAY * a.score
                        how[named] = f"named on the page of {corpus.nodes.text_of(a.node_id)}"
        rows = np.fromiter(scores.keys(), dtype=np.int64, count=len(scores))
        values = np.fromiter(scores.values(), dtype=np.float64, count=len(scores))
        out = np.zeros(len(comps), dtype=np.float32)
        found = homes.best(rows, values)
        for score, d, entity in found:
            name, reached_how = corpus.nodes.text_of(ids[entity]), how.get(entity, "matched")
            if reached_how != "matched" and not reached_how.startswith("named on"):
                reached_how = f"related to {reached_how}"
            why = f"the page of {name}" + ("" if reached_how == "matched" else f" ({reached_how})")
            for r in ga.doc_components[homes.doc_ids[d]].tolist():
                out[r] = score
                home_of[r] = why
        titled = self._titled_on_homes(anchor_homes, set(homes.doc_ids))
        for doc, (score, anchor) in titled.items():
            for r in ga.doc_components[doc].tolist():
                if score > out[r]:
                    out[r] = score
                    home_of[r] = f"a page whose title the page of {anchor} writes"
        if titled:
            shown = sorted(titled.items(), key=lambda kv: (-kv[1][0], kv[0]))[:TRACE_HOMES]
            trace.notes.append("Pages whose title a matched entity's own page writes: "
                               + ", ".join(f"{corpus.documents[d].title} ({score:.2f})" for d, (score, _a) in shown) + ".")
        if found:
            shown = [f"{corpus.documents[homes.doc_ids[d]].title} ({score:.2f})" for score, d, _e in found[:TRACE_HOMES]]
            trace.notes.append(f"Own pages of the reached entities, best first: {', '.join(shown)}.")
        return out

    def _titled_on_homes(self, anchor_homes: list[tuple[ScoredNode, str]], short: set[str]) -> dict[str, tuple[float, str]]:
        """The short documents (`short`) whose title a matched entity's own page writes (`anchor_homes`:
        each anchor with one of its own pages), each at DECAY * the best such anchor's match, with its
        name: the title index links the names a page writes that the rules extractor took into a
        longer span ("the former CEO of Viglen" gives the entity "CEO of Viglen", whose own page
        there is none; the title "Viglen" is written all the same). A page written by a name it
        names is reached as its entity would be."""
        corpus, ga, index = self.corpus, graph_arrays(self.corpus), title_index(self.corpus)
        comps = corpus.layers["components"].ids
        out: dict[str, tuple[float, str]] = {}
        for a, home in anchor_homes:
            score, name = DECAY * a.score, corpus.nodes.text_of(a.node_id)
            for r in ga.doc_components[home].tolist():
                for doc in index.mentioned(corpus.nodes.text_of(comps[r]), exclude=home):
                    if doc in short and score > out.get(doc, (0.0, ""))[0]:
                        out[doc] = (score, name)
        return out

    def _evidence(self, reached: dict[int, float], followed: Followed,
                  comps, damp_mentions: bool) -> tuple[np.ndarray, Evidence, dict[int, int]]:
        """e(c) for every component (n_components,), the entity that gave it to each component an
        entity reaches, and the damped hubs (entity -> components that mention it).

        With `damp_mentions`, an entity that more than HUB_RELATIONS components mention passes on
        sqrt(HUB_RELATIONS / mentions) of its score to each, as a hub anchor does along its relation
        edges: "Company", reached from a matched ratio over a broad edge, is named by most components
        of a 160-page filing and says little about any one of them.

        Array maths over the corpus's mention index: at 10k pages the reached entities of a
        question are mentioned in ~185k units, which a loop over the units took ~0.8 s to read."""
        index = mention_index(self.corpus)
        node_rows = np.fromiter(reached.keys(), dtype=np.int64, count=len(reached))
        ids = self.corpus.nodes.ids
        ents = [ids[r] for r in reached]
        who, comp, counts = _mentions_of(index, node_rows)  # who mentions which component, by entity then component
        hub = (counts > HUB_RELATIONS) if damp_mentions else np.zeros(len(ents), dtype=bool)
        hubs = {int(node_rows[i]): int(counts[i]) for i in np.flatnonzero(hub).tolist()}
        value = np.fromiter(reached.values(), dtype=np.float64, count=len(ents))
        value[hub] *= np.sqrt(HUB_RELATIONS / counts[hub])
        # The best entity of each component: the highest value, ties to the greater id (as max over
        # (value, id)). The entities are put in that order once; each component keeps its first.
        id_rank = np.empty(len(ents), dtype=np.int64)
        id_rank[np.argsort(np.array(ents, dtype=str), kind="stable")] = np.arange(len(ents))
        order = np.lexsort((-id_rank, -value))
        priority = np.empty(len(ents), dtype=np.int64)
        priority[order] = np.arange(len(ents))
        first = np.full(len(comps.ids), len(ents), dtype=np.int64)
        np.minimum.at(first, comp, priority[who])
        rows = np.flatnonzero(first < len(ents))
        best = order[first[rows]]
        states = self._stating(who, comp, followed.pairs(node_rows), len(comps.ids))
        entity_term = np.zeros(len(comps.ids), dtype=np.float32)
        entity_term[rows] = np.minimum(1.0, value[best] + np.where(states[rows], RELATION_BONUS, 0.0))
        return entity_term, Evidence(rows, node_rows[best]), hubs

    @staticmethod
    def _stating(who: np.ndarray, comp: np.ndarray, pairs: np.ndarray, n_comps: int) -> np.ndarray:
        """(n_comps,) True for the components that state a followed relation: they mention both of
        its ends. `who`/`comp`: the (entity, component) mentions sorted by entity, then component;
        `pairs`: (m, 2) the relations' ends as entities. The relations are grouped by their busier
        end (an anchor with thousands of relations is one group, not thousands of set
        intersections): the components that mention any partner of the group's end are marked, and
        those of the end's own that are marked state one."""
        states = np.zeros(n_comps, dtype=bool)
        if not len(pairs) or not len(comp):
            return states
        n_ents = int(max(who.max(), pairs.max())) + 1
        counts = np.bincount(who, minlength=n_ents)
        ends = np.cumsum(counts)
        starts = ends - counts
        degree = np.bincount(pairs.ravel(), minlength=n_ents)
        partners: dict[int, list[int]] = {}
        for i, j in pairs.tolist():
            key, other = (i, j) if (degree[i], -i) >= (degree[j], -j) else (j, i)
            partners.setdefault(key, []).append(other)
        marked = np.zeros(n_comps, dtype=bool)
        for key, others in partners.items():
            rows = np.concatenate([comp[starts[o]:ends[o]] for o in others])
            marked[rows] = True
            own = comp[starts[key]:ends[key]]
            states[own[marked[own]]] = True
            marked[rows] = False
        return states

    def _why(self, entity: int, via: dict[int, str], hubs: dict[int, int]) -> str:
        """Why a component scores: the entity (node row) it mentions, how it was reached, its damping."""
        name = self.corpus.nodes.text_of(self.corpus.nodes.ids[entity])
        how = via.get(entity, "matched")
        why = f"mentions {name} (matched)" if how == "matched" else f"mentions {name}, related to {how}"
        if entity in hubs:
            why += f"; a hub: {hubs[entity]} components name it, each gets {math.sqrt(HUB_RELATIONS / hubs[entity]):.2f} of its score"
        return why

    def _explain(self, hit: ScoredNode, entity: int | None, via: dict[int, str], hubs: dict[int, int],
                 home: str | None = None) -> ScoredNode:
        why = "hybrid (no matched entity)" if entity is None else self._why(entity, via, hubs)
        if home:
            why = home if entity is None else f"{why}; {home}"
        return ScoredNode(node_id=hit.node_id, score=hit.score, why=why)

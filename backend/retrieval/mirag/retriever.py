"""MI-RAG: multimodal iterative retrieval (paper 003, Algorithm 1 and appendix C).

Iteration 1 searches with the question and writes a reasoning record of what it found. Every
later iteration
  1. expands the question with the latest record (prompt 2, task mirag_expand),
  2. generates follow-up queries from all the records so far (prompt 3, mirag_generate),
  3. searches with every query not searched before, jointly over the text KB (paragraph units)
     and the image-text KB (figure and table units, represented by caption + upper context +
     content text; when the workspace has an image index, a figure's score is the average of
     that text score and the text-to-image score, the paper's multimodal similarity),
     taking up to text_k paragraphs and image_k figures/tables per query (the paper: 20 and 10),
  4. writes a reasoning record of the newly found knowledge (prompt 4, mirag_record): its best
     sentences, cited by id, each with the titles of the other pages it names (titles.py's
     title index), which the next expansion and follow-ups ask about first.
The final ranking fuses every query's list of every iteration by weighted reciprocal rank.
Each iteration is one IterationStep in the trace; the fusion is a FuseStep.

Differences from the paper: a question comes without an image, so there is no initial image
description (prompt 1) and the image term is text-to-image (CLIP/SigLIP) instead of
image-to-image; the final answer (prompt 5) is the reader's job, not the retriever's; the
expansion asks for the question plus the record's key terms instead of concatenating the whole
record, which would drown the question's own terms in BM25.
"""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path
from typing import Any

import numpy as np

from backend.index.image import note_figures_as_text, visual_component_scores
from backend.index.lexical import tokenize
from backend.llm.text import QUESTION_WORDS
from backend.retrieval.base import Retriever, StrategyParams, param, register
from backend.retrieval.titles import title_index
from backend.retrieval.mirag.tasks import (
    EXPAND,
    GENERATE,
    RECORD,
    UNIT_CHARS,
    ExpandPayload,
    GenerateAnswer,
    GeneratePayload,
    KnowledgeUnit,
    RecordPayload,
)
from backend.retrieval.scoring import SEED_RRF_K, SEED_WHY, fused_with_seeds, reciprocal_rank_fusion, top_scored
from backend.types import FuseStep, IterationStep, NodeKind, ScoredNode, Trace

RRF_K = 5  # small: the lists are short (tens of units), and rank 1 should count clearly more than rank 5
QUESTION_WEIGHT = 1.0
SEEDS = 30  # the whole question's best components fused in when seed_weight > 0
SEED_LABEL = "seeds (the whole question's direct matches)"
GENERATED_WEIGHT = 0.7  # a generated follow-up explores; the question (or its expansion) anchors
RECORD_UNITS = 5  # units of an iteration whose sentences the record chooses from
TRACE_HITS = 10
TEXT_KINDS = (NodeKind.PARAGRAPH, NodeKind.CODE)
IMAGE_TEXT_KINDS = (NodeKind.FIGURE, NodeKind.TABLE)


def knowledge_base_rows(corpus) -> tuple[np.ndarray, list[str], np.ndarray, list[str]]:
    """Rows of the components layer (and their ids) in the text KB and in the image-text KB
    (built once per loaded corpus, see Corpus.derived)."""
    ids = corpus.layers["components"].ids
    kind_of = corpus.nodes.kind_of
    text = [r for r, i in enumerate(ids) if kind_of(i) in TEXT_KINDS]
    image = [r for r, i in enumerate(ids) if kind_of(i) in IMAGE_TEXT_KINDS]
    return np.array(text, dtype=np.int64), [ids[r] for r in text], np.array(image, dtype=np.int64), [ids[r] for r in image]


@dataclass(frozen=True, slots=True)
class QueryHits:
    """One query's joint search: text and image-text hits merged by score, best first."""

    iteration: int
    label: str
    query: str
    weight: float
    hits: list[ScoredNode]


class MIRAGParams(StrategyParams):
    iterations: int = param(2, 1, 5, "Search iterations; iteration 1 uses the question, later ones the records.")
    text_k: int = param(20, 1, 100, "Text KB: paragraphs kept per query (the paper: 20).")
    image_k: int = param(10, 0, 50, "Image-text KB: figures and tables kept per query (the paper: 10).")
    queries: int = param(2, 0, 4, "Follow-up queries generated per iteration (the paper: 2).")
    facts: int = param(3, 1, 10, "Facts (sentences) per reasoning record.")
    alpha: float = param(0.5, 0.0, 1.0, "BM25 weight in the hybrid text scores.", setting="retrieval.hybrid_alpha")
    seed_weight: float = param(
        0.0, 0.0, 5.0,
        "Weight of the whole question's component ranking (its hybrid scores, top 30) fused by reciprocal rank with the fused "
        "iterations (0: the paper's fusion alone).",
    )


@register
class MIRAGRetriever(Retriever):
    name = "mirag"
    description = (
        "MI-RAG: iterations of reasoning record -> query expansion + generated follow-up queries -> joint search "
        "over paragraphs and figures/tables; reciprocal-rank fusion of every iteration."
    )
    Params = MIRAGParams
    follows_references = True

    def retrieve(self, query: str, top_k: int, params: dict[str, Any], trace: Trace) -> list[ScoredNode]:
        p = self.resolve_params(params, trace)
        n_iter, text_k, image_k, n_queries, max_facts, alpha = p.iterations, p.text_k, p.image_k, p.queries, p.facts, p.alpha
        trace.params.update(
            {"iterations": n_iter, "text_k": text_k, "image_k": image_k, "queries": n_queries, "facts": max_facts, "alpha": alpha}
        )

        searched: list[QueryHits] = []
        asked: list[str] = []
        records: list[str] = []
        facts: list[dict[str, Any]] = []  # the latest record's facts: {id, text, pages}
        known: list[str] = []  # every fact id cited so far
        recorded: set[str] = set()  # units handed to a record so far
        for iteration in range(1, n_iter + 1):
            calls_before = self.llm.usage.calls
            if iteration == 1:
                queries = [(query, QUESTION_WEIGHT, "question")]
            else:
                queries = self._next_queries(query, records, facts, asked, n_queries)
                if not queries:  # nothing new to search: the records have stopped naming new things
                    trace.add(IterationStep(iteration=iteration, queries=[], record="No new query: the search stops here.",
                                            llm_calls=self.llm.usage.calls - calls_before))
                    break
            round_hits = []
            for i, (text, weight, label) in enumerate(queries):
                asked.append(text)
                hits = self._joint_search(text, text_k, image_k, alpha, f"iteration {iteration} {label}")
                round_hits.append(QueryHits(iteration, f"it{iteration} q{i} ({label})", text, weight, hits))
            searched += round_hits
            found = fuse(round_hits)
            # The record summarises the newly retrieved knowledge: units no earlier record was given.
            fresh = [h for h in found if h.node_id not in recorded][:RECORD_UNITS] or found[:RECORD_UNITS]
            recorded.update(h.node_id for h in fresh)
            record, facts = self._record(query, [q for q, _, _ in queries], fresh, known, max_facts)
            records.append(record)
            known += [f["id"] for f in facts]
            trace.add(
                IterationStep(
                    iteration=iteration, queries=[q for q, _, _ in queries], found=found[:max(top_k, TRACE_HITS)], record=record,
                    llm_calls=self.llm.usage.calls - calls_before,
                )
            )
        results = fuse(searched)
        inputs = {q.label: q.hits[:TRACE_HITS] for q in searched}
        weights = {q.label: q.weight for q in searched}
        reason = f"score = sum of weight / ({RRF_K} + rank) over the lists, scaled so that 1 is first everywhere"
        if p.seed_weight > 0:
            comps = self.corpus.layers["components"]
            sc = self.question_scores()
            whole = sc.hybrid(comps, query, sc.encode(self.encoder, [query])[0], alpha)
            seeds = top_scored(comps.ids, whole, SEEDS, SEED_WHY)
            results = fused_with_seeds(results, [h.node_id for h in seeds], p.seed_weight, seed_why=SEED_WHY)
            inputs[SEED_LABEL], weights[SEED_LABEL] = seeds[:TRACE_HITS], p.seed_weight
            reason += f"; then fused with the seeds: 1 / ({SEED_RRF_K} + rank) + seed_weight / ({SEED_RRF_K} + seed rank)"
        results = results[:top_k]
        trace.add(FuseStep(label="Reciprocal-rank fusion of every query of every iteration", inputs=inputs, weights=weights,
                           reason=reason))
        note_figures_as_text(trace, self.corpus, [h.node_id for h in results], self.image_encoder)
        return results

    # ---------------------------------------------------------------- the multi-query

    def _next_queries(
        self, question: str, records: list[str], facts: list[dict[str, Any]], asked: list[str], n_queries: int
    ) -> list[tuple[str, float, str]]:
        """The expansion and the generated follow-ups not searched yet: (query, weight, label)."""
        expanded = self.llm.run(EXPAND, ExpandPayload(question=question, record=records[-1], facts=facts))
        generated = GenerateAnswer(queries=[])
        if n_queries > 0:
            generated = self.llm.run(
                GENERATE, GeneratePayload(question=question, records=records, facts=facts, asked=asked, n=n_queries)
            )
        candidates = [(expanded.query.strip(), 1.0, "expansion")]
        candidates += [(q.strip(), GENERATED_WEIGHT, "generated") for q in generated.queries[:n_queries]]
        seen = {a.lower() for a in asked}
        out = []
        for text, weight, label in candidates:
            if text and text.lower() not in seen:
                seen.add(text.lower())
                out.append((text, weight, label))
        return out

    # ---------------------------------------------------------------- joint search

    def _joint_search(self, query: str, text_k: int, image_k: int, alpha: float, why: str) -> list[ScoredNode]:
        comps = self.corpus.layers["components"]
        if not comps.ids:
            return []
        text_rows, text_ids, image_rows, image_ids = self.corpus.derived(knowledge_base_rows)
        sc = self.question_scores()
        scores = sc.hybrid(comps, query, sc.encode(self.encoder, [query])[0], alpha)  # (n_components,)
        image_scores = scores[image_rows]
        visual = visual_component_scores(self.corpus, self.image_encoder, query)
        image_why = f"{why}, image-text KB"
        if visual:
            # The paper's multimodal similarity: the mean of the text and the image similarity.
            vis = np.array([visual.get(i, np.nan) for i in image_ids], dtype=np.float32)
            has = ~np.isnan(vis)
            image_scores = image_scores.copy()
            image_scores[has] = 0.5 * image_scores[has] + 0.5 * vis[has]
            image_why += " + image"
        text_hits = top_scored(text_ids, scores[text_rows], text_k, f"{why}, text KB")
        image_hits = top_scored(image_ids, image_scores, image_k, image_why)
        return sorted(text_hits + image_hits, key=lambda h: (-h.score, h.node_id))

    # ---------------------------------------------------------------- reasoning record

    def _record(
        self, question: str, queries: list[str], found: list[ScoredNode], known: list[str], max_facts: int
    ) -> tuple[str, list[dict[str, Any]]]:
        """The record of this iteration's best units and its facts ({id, text, pages}, best first):
        pages, the titles of the other documents the fact names (titles.py)."""
        knowledge = self._knowledge(question, queries, found)
        images = []
        if self.corpus.root is not None:
            images = [str(Path(self.corpus.root) / self.corpus.nodes[h.node_id].crop) for h in found
                      if self.corpus.nodes.kind_of(h.node_id) in IMAGE_TEXT_KINDS and self.corpus.nodes[h.node_id].crop]
        payload = RecordPayload(question=question, queries=queries, knowledge=knowledge, known=known, max_facts=max_facts,
                                images=images[:4])
        out = self.llm.run(RECORD, payload)
        facts = []
        titles = title_index(self.corpus)
        for fact_id in out.facts:
            node = self.corpus.nodes.get(fact_id)
            if node is not None and all(f["id"] != node.id for f in facts):
                pages = [self.corpus.documents[d].title for d in titles.mentioned(node.text, exclude=node.doc)]
                facts.append({"id": node.id, "text": node.text, "pages": pages})
        return out.record, facts

    def _knowledge(self, question: str, queries: list[str], found: list[ScoredNode]) -> list[KnowledgeUnit]:
        """The units of `found` with their candidate facts, each scored 0.5 * best cosine with the
        question and this iteration's queries (subcomponent space) + 0.5 * the IDF-weighted share
        of the question's terms it covers: the question's rare terms (its named entities) count
        more than "director" or "born"."""
        corpus = self.corpus
        subs = corpus.layers["subcomponents"]
        weights = self._term_weights(question)
        total = sum(weights.values()) or 1.0
        qvecs = self.embed_sub([question, *queries])  # (n_queries + 1, dim_sub)
        units: list[tuple[ScoredNode, list[str]]] = []
        for hit in found:
            node = corpus.nodes[hit.node_id]
            members = []
            if node.kind in (NodeKind.PARAGRAPH, NodeKind.TABLE, NodeKind.CODE):
                members = [s for s in corpus.subcomponents(node.id) if corpus.nodes.kind_of(s) != NodeKind.OBJECT]
            if node.kind not in TEXT_KINDS:
                members = [node.id, *members]  # a figure's or table's caption and context is a fact too
            units.append((hit, members))
        texts = {sid: " ".join(corpus.nodes.text_of(sid).split()) for _, members in units for sid in members}
        token_sets = dict(zip(texts, (set(t) for t in tokenize(list(texts.values()))))) if texts else {}
        out = []
        # Only the candidate units' rows: a gather and one dot with every query vector.
        rows = {sid: subs.dense.row[sid] for _, members in units for sid in members if sid in subs.dense.row}
        best_cos: dict[str, float] = {}
        if rows:
            cos_rows = subs.dense.scores_of(np.fromiter(rows.values(), dtype=np.int64), np.atleast_2d(qvecs))  # (n_rows, n_q)
            best_cos = dict(zip(rows, cos_rows.max(axis=1).tolist()))
        for hit, members in units:
            sentences = []
            for sid in members:
                cos = best_cos.get(sid, hit.score)
                coverage = sum(w for t, w in weights.items() if t in token_sets[sid]) / total
                sentences.append({"id": sid, "text": texts[sid][:UNIT_CHARS], "score": round(0.5 * max(cos, 0.0) + 0.5 * coverage, 4)})
            node = corpus.nodes[hit.node_id]
            out.append(KnowledgeUnit(
                id=node.id, kind=node.kind.value, score=hit.score, path=" > ".join(corpus.section_path(node.id)),
                text=" ".join(node.text.split()), sentences=sentences,
            ))
        return out

    def _term_weights(self, question: str) -> dict[str, float]:
        """BM25 IDF over the components of every content token of the question but its question
        words ("where" is in no document, which would make it the rarest term)."""
        lexical = self.corpus.layers["components"].lexical
        n = len(lexical)
        words = sorted(set(question.split()))
        out: dict[str, float] = {}
        for word, tokens in zip(words, tokenize(words) if words else []):
            tokens = [t for t in tokens if t not in QUESTION_WORDS and t not in out]
            if tokens:
                df = int(np.count_nonzero(lexical.scores(word)))
                out.update({t: float(np.log(1 + (n - df + 0.5) / (df + 0.5))) for t in tokens})
        return out


def fuse(lists: list[QueryHits]) -> list[ScoredNode]:
    """Weighted reciprocal-rank fusion: sum over lists of weight / (RRF_K + rank), scaled by the
    best possible sum so that scores lie in [0, 1]; unique ids, scores descending."""
    if not lists:
        return []
    total = reciprocal_rank_fusion((([h.node_id for h in q.hits], q.weight) for q in lists), RRF_K)
    first: dict[str, str] = {}
    count: dict[str, int] = {}
    for q in lists:
        for hit in q.hits:
            first.setdefault(hit.node_id, hit.why)
            count[hit.node_id] = count.get(hit.node_id, 0) + 1
    best = sum(q.weight for q in lists) / (RRF_K + 1)
    ranked = sorted(total.items(), key=lambda kv: (-round(kv[1], 12), kv[0]))
    return [
        ScoredNode(node_id=n, score=round(s / best, 6), why=f"{first[n]} (in {count[n]} of {len(lists)} lists)")
        for n, s in ranked
    ]

"""What FiF's agent works with besides the prompts: the strategy tuple and its prompt fields, the
row maps of one corpus (max-over-descendants scores, document neighbourhoods), the per-question
scores and run configuration, and the memory M_t (subqueries, hop records, history)."""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any

import numpy as np

from backend.retrieval.base import StrategyParams, param
from backend.retrieval.titles import title_index
from backend.retrieval.scoring import SparseColumn
from backend.retrieval.fif.tasks import EvidenceNote, PlanRecord, RouteModes, TraverseRecord
from backend.types import EdgeKind, ScoredNode, Strategy, SubQuery

DOC_MODE = {"local": "neighbors", "global": "vector search"}
GRANULARITY_NAMES = ("document", "component", "subcomponent")
FOUND_IN_TRACE = 8
MAX_DECISIONS_PER_STEP = 3  # decisions that change only statuses (abandon a subquery) before a step is due
EVIDENCE_IN_MEMORY = 3


def strategy_of(doc_mode: str | None, comp_mode: str | None, granularity: str | None) -> Strategy:
    """The orchestrator's three fields as FiF's strategy tuple (unknown values: the cheapest)."""
    doc_llm = doc_mode == "llm reasoning"
    comp_llm = comp_mode == "llm reasoning"
    g = GRANULARITY_NAMES.index(granularity) if granularity in GRANULARITY_NAMES else 0
    reasoning = "both" if doc_llm else "component" if comp_llm else "none"
    return Strategy(hop="local" if doc_mode == "neighbors" else "global", granularity=g, reasoning=reasoning)


def modes_of(strategy: Strategy) -> dict[str, str]:
    doc = "llm reasoning" if strategy.reasoning == "both" else DOC_MODE[strategy.hop]
    comp = "vector search" if strategy.reasoning == "none" else "llm reasoning"
    return {"document_search_mode": doc, "component_search_mode": comp, "vector_granularity": GRANULARITY_NAMES[strategy.granularity]}


# ---------------------------------------------------------------- graph arrays and scores


class DocumentRowMaps:
    """Row maps of one corpus for the max-over-descendants scores, and document neighbourhoods.

    One per loaded corpus (Corpus.derived), shared by concurrent questions: the arrays are
    read-only, and the neighbourhood cache is filled lazily with values that depend only on the
    corpus, so two questions filling the same entry write the same list."""

    def __init__(self, corpus) -> None:
        self.corpus = corpus
        docs, comps, subs = (corpus.layers[n] for n in ("documents", "components", "subcomponents"))
        self.doc_ids = docs.ids
        self.doc_row = docs.dense.row
        self.comp_ids = comps.ids
        self.comp_row = comps.dense.row
        self.comp_doc_row = corpus.component_doc_rows  # (n_comps,)
        parent_of, doc_of = corpus.nodes.parent_of, corpus.nodes.doc_of
        # (n_subs,) row of each subcomponent's component and of its document (-1: not in those layers)
        self.sub_comp_row = np.array([self.comp_row.get(parent_of(s) or "", -1) for s in subs.ids], dtype=np.int64)
        self.sub_doc_row = np.array([self.doc_row.get(doc_of(s), -1) for s in subs.ids], dtype=np.int64)
        self.comp_has_subs = np.zeros(len(comps.ids), dtype=bool)  # (n_comps,)
        self.comp_has_subs[self.sub_comp_row[self.sub_comp_row >= 0]] = True
        self.subs_per_comp = np.bincount(self.sub_comp_row[self.sub_comp_row >= 0], minlength=len(comps.ids))
        self.subs_per_doc = np.bincount(self.sub_doc_row[self.sub_doc_row >= 0], minlength=len(docs.ids))
        self._neighbours: dict[str, list[str]] = {}

    def neighbours(self, doc_id: str) -> list[str]:
        """Documents the document's components lead to (`leads_to`), then documents linking to it."""
        cached = self._neighbours.get(doc_id)
        if cached is not None:
            return cached
        corpus = self.corpus
        out: list[str] = []
        for comp in corpus.components_by_doc.get(doc_id, []):
            out += self.leads_to(comp)
        out += [e.dst for e in corpus.edges.out_of(doc_id, (EdgeKind.DOC_LINK,))]
        out += [self._doc_of(e.src) for e in corpus.edges.into(doc_id, (EdgeKind.DOC_LINK, EdgeKind.LINK))]
        result = [d for d in dict.fromkeys(out) if d and d != doc_id and d in self.doc_row]
        self._neighbours[doc_id] = result
        return result

    def leads_to(self, comp_id: str) -> list[str]:
        """The other documents a component links to, then those whose title its text names without
        a link (titles.py): a page that names another is a hop to it whether or not the PDF
        carries the link annotation."""
        corpus = self.corpus
        own = corpus.nodes.doc_of(comp_id)
        docs = dict.fromkeys(self._doc_of(e.dst) for e in corpus.edges.out_of(comp_id, (EdgeKind.LINK,)))
        docs.update(dict.fromkeys(title_index(corpus).mentioned(corpus.nodes.text_of(comp_id), exclude=own)))
        return [d for d in docs if d in corpus.documents and d != own]

    def links_of(self, comp_id: str) -> list[str]:
        """Titles of the other documents a component leads to (`leads_to`)."""
        return [self.corpus.documents[d].title for d in self.leads_to(comp_id)]

    def _doc_of(self, node_id: str) -> str:
        nodes = self.corpus.nodes
        return nodes.doc_of(node_id) if node_id in nodes else ""


def max_into(values: np.ndarray, rows: np.ndarray, size: int) -> np.ndarray:
    """(size,) max of `values` grouped by `rows` (rows < 0 dropped); 0 where a group is empty.
    Scores are min-max normalised, so 0 is the floor."""
    out = np.zeros(size, dtype=np.float32)
    valid = rows >= 0
    np.maximum.at(out, rows[valid], values[valid])
    return out


def max_into_column(col: SparseColumn, group: np.ndarray, members: np.ndarray) -> np.ndarray:
    """max_into(col's every-row scores, group, len(members)) read from the rows with a score of
    their own: a group with a member among the others takes the column's shared score too.
    members: (n_groups,) rows in each group."""
    out = np.zeros(len(members), dtype=np.float32)
    g = group[col.rows]
    valid = g >= 0
    g = g[valid]
    if col.rest is not None:
        held = np.bincount(g, minlength=len(members))
        out[held < members] = max(col.rest, 0.0)  # max_into's floor is 0
    np.maximum.at(out, g, col.values[valid])
    return out


@dataclass
class TextScores:
    """Hybrid scores of one text against every row of the three layers, and the derived
    max-over-descendants vectors, computed once per text and question."""

    doc: np.ndarray  # (n_docs,)
    comp: np.ndarray  # (n_comps,)
    sub: SparseColumn  # every subcomponent's
    derived: dict[tuple[str, int], np.ndarray] = field(default_factory=dict)


class FiFParams(StrategyParams):
    """The parameters of one retrieve() call."""

    max_steps: int = param(8, 1, 30, "Most TRAVERSE/PLAN actions before the agent stops.")
    max_llm_calls: int = param(24, 0, 200, "Most LLM calls per question (rules make none); the agent stops when they run out.")
    shortlist: int = param(30, 1, 200, "Vector shortlist k at the document and component level (the paper's k).")
    docs_per_hop: int = param(
        8, 1, 50,
        "Documents a traverse keeps. A top 10 needs a pool about that wide (bench/RESULTS.md#stages).",
    )
    units_per_hop: int = param(8, 1, 50, "Components a traverse keeps.")
    alpha: float = param(0.5, 0.0, 1.0, "BM25 weight in the hybrid node scores.")
    min_coverage: float = param(0.5, 0.0, 1.0, "Evaluator: share of a subquery's non-entity words the evidence must contain.")
    min_score: float = param(0.3, 0.0, 1.0, "Evaluator: lowest normalised score of a unit that can count as evidence.")
    hop_weight: float = param(0.5, 0.0, 1.0, "Reranker: weight of the hops' credit against relevance to the query.")
    seed_weight: float = param(
        2.0, 0.0, 5.0,
        "Weight of the whole question's component ranking (its hybrid scores, top `shortlist`) fused by reciprocal rank with the "
        "reranked memory (0: the paper's rerank alone; bench/RESULTS.md#stages).",
    )
    seed_open: int = param(
        2, 0, 2,
        "1: the seed weight is scaled by the share of subqueries the agent left unanswered; 2: and is full when the question's "
        "best direct match is nowhere in memory (0: always the full weight).", ui=False,
    )
    seed_extensions: int = param(
        0, 0, 1,
        "1: a subquery a replan added to extend a plan already resolved counts among the unanswered when it fails (the "
        "default on separate documents, where the question's direct matches are the stronger signal); 0: its failure "
        "leaves what the resolved plan found as it was (in a web of pages, where the plan's chain is).", ui=False,
    )


# ---------------------------------------------------------------- memory


@dataclass
class HopRecord:
    """What a TRAVERSE step left in memory: its target, route, outcome and evidence."""

    step: int
    subtask: int
    target: str
    entity: str | None
    strategy: Strategy
    anchor: int | None  # the step whose documents it started from
    outcome: str  # success | failure
    dead_end: bool
    docs: list[str]
    found: list[ScoredNode]
    entities: list[str] = field(default_factory=list)  # entities the judged evidence names
    evidence_doc: str | None = None  # the document of the unit the evaluator judged relevant

    def serialise(self, corpus, view: DocumentRowMaps) -> TraverseRecord:
        evidence = []
        for hit in self.found[:EVIDENCE_IN_MEMORY]:
            node = corpus.nodes[hit.node_id]
            evidence.append(EvidenceNote(title=corpus.documents[node.doc].title, text=node.text, links=view.links_of(hit.node_id)))
        return TraverseRecord(
            step=self.step, subtask=self.subtask, target=self.target, entity=self.entity,
            anchor=self.anchor, strategy=RouteModes(**modes_of(self.strategy)), outcome=self.outcome, dead_end=self.dead_end,
            docs=[corpus.documents[d].title for d in self.docs], evidence=evidence, entities=self.entities,
            neighbors=len({n for d in self.docs for n in view.neighbours(d)}),
        )


@dataclass
class Memory:
    """M_t = (query, subquery list with statuses and answers, action history)."""

    query: str
    subqueries: list[SubQuery]
    answers: dict[int, list[str]] = field(default_factory=dict)  # subquery -> [answer, alternatives...]
    history: list[TraverseRecord | PlanRecord] = field(default_factory=list)  # serialised records, oldest first
    hops: list[HopRecord] = field(default_factory=list)
    steps: int = 0
    replans: int = 0
    extensions: set[int] = field(default_factory=set)  # subqueries a replan added to a plan already resolved

    def subtasks(self) -> list[dict[str, Any]]:
        out = []
        for i, s in enumerate(self.subqueries):
            answers = self.answers.get(i, [])
            out.append({"index": i, "text": s.text, "status": s.status, "depends_on": s.depends_on,
                        "answer": answers[0] if answers else None, "alternatives": answers[1:]})
        return out

"""FiF, "Failure is Feedback": an agent that traverses the three layers (documents with their
summaries / components / subcomponents) under history-aware backtracking.

Memory M_t = (query, subquery list with statuses, action history). Each turn the orchestrator
chooses TRAVERSE(anchor documents, subquery, strategy), PLAN or STOP; STOP reranks every unit in
memory against the original query. A traverse runs the document-level traverser (local hop:
the documents the anchor's components link to or are linked from; global hop: every document
summary), then the component-level traverser inside the chosen documents; the strategy tuple
sets the hop scope, the vector granularity g (0: the node's own vector, 1: max over its
components, 2: max over its subcomponents; components use max(g, 1)) and whether an LLM
re-selects documents and/or components from the vector shortlist. The traversal evaluator marks
the hop success or failure and fills in subquery answers (the bridge entity a dependent
subquery needs). The orchestrator escalates along the cost ladder after failures and re-anchors
to an earlier successful step instead of the dead end it reached (`backtrack_to`).

Node scores are the hybrid of the repository: per layer, alpha * min-max(BM25) + (1 - alpha) *
min-max(cosine), computed for every row of a layer at once with numpy; the max over children
uses precomputed row maps (np.maximum.at), never a Python loop per pair.

All prompts of appendix D are kept below with their JSON schemas; the offline `rules` backend
answers them with backend/llm/rules_fif.py. Query decomposition is the shared `decompose` task.

Each AgentStep carries its LLM calls and tokens (usage differences, every decision charged to
the step it led to) and `seconds`, the time its model calls took: the cost that dominates with a
model, and 0 under the rules, so that identical questions give identical traces.

What it does not do: read figures (no image encoder is used), or call the LLM beyond
`max_llm_calls` (it stops instead and reranks with the rules reranker, which costs nothing).
"""

from __future__ import annotations

import json
import logging
import time
from dataclasses import dataclass, field
from typing import Any

import numpy as np

from backend.retrieval.base import ParamSpec, Retriever, register
from backend.retrieval.scoring import hybrid_scores, order_rows
from backend.types import AgentStep, DecomposeStep, EdgeKind, ScoredNode, Strategy, SubQuery, Trace

log = logging.getLogger(__name__)

# ---------------------------------------------------------------- prompts (appendix D)

ORCHESTRATOR_PROMPT = """You are a retrieval action-decider assistant.

Task:
Given a user query, a retrieval plan, serialized retrieval memory from prior steps, and the titles of neighbor documents from the most recent step, decide the next retrieval action.

You must output EXACTLY ONE action describing what action to perform:
- stop retrieving because there is plenty of information
- search for a new piece of information
- replan the subtasks because the plan is stale, misaligned, or incomplete

# Decision requirements:
1) Use ONLY provided context: the user query, the initial plan, the serialized retrieval memory, the neighbor docs list. Do NOT add facts, assumptions, background knowledge, or outside context.
2) No clarifying questions.
3) Internal reasoning only: output JSON only, no explanations or extra text.

# Rule Regarding Next Retrieval Subtask:
- If the latest retrieval was marked "answerable" OR the previous action used "llm reasoning" for BOTH 'document_search_mode' and 'component_search_mode', advance to the next unresolved subtask when selecting 'next_retrieval_subtask'.
- Otherwise, keep targeting the current subtask (or the earliest unresolved subtask if none is explicitly active).
- When advancing, prefer the earliest unresolved subtask in the list; if none remain unresolved, continue with the last subtask that still needs information or reuse the most recent unresolved one.

# Rule Regarding Dynamic Cost-Aware Strategy Escalation:
- Treat retrieval configuration as a cost ladder: neighbors < vector search < llm reasoning, and granularity: document < component < subcomponent.
- Default (cheapest) for a new/clean subtask: document_search_mode="neighbors" (if Neighbor Docs likely contain missing info), else "vector search"; component_search_mode="vector search"; vector_granularity="document"; anchor=null unless a clearly relevant prior candidate set exists.
- Escalate ONLY when justified by evidence in Serialized Retrieval Memory: the current subtask's latest attempt is marked Failure/unanswerable, OR repeated near-misses, OR the hop is ambiguous/underspecified, OR the prior attempt already used low-cost modes and did not progress.
- Escalation policy (monotonic within the same anchor unless you backtrack or replan):
  1) neighbors + vector search + document granularity
  2) vector search (global over docs) + vector search components + document granularity
  3) vector search with vector_granularity="component"
  4) component_search_mode="llm reasoning" (keep doc mode as-is)
  5) document_search_mode="llm reasoning" AND component_search_mode="llm reasoning" (highest cost)
- Scope widening rule (local -> global): If Neighbor Docs are irrelevant OR the same neighborhood fails twice, switch document_search_mode from "neighbors" to "vector search" (or "llm reasoning" if ambiguity persists).

# Rule Regarding History-Aware Backtracking (Failure-is-Feedback):
- Use failure traces in Serialized Retrieval Memory as first-class signals.
- A "failed routing pattern" repeats the same route: same subtask intent + same (or null) anchor + same document_search_mode/component_search_mode/granularity, where the memory marks Failure/unanswerable or shows no new evidence gained.
- If a failed routing pattern exists for the current subtask, you MUST change at least one of: (i) anchor, (ii) document_search_mode, (iii) component_search_mode, (iv) vector_granularity, or (v) rewrite next_retrieval_subtask to add missing constraints / choose a different target entity.
- Backtracking triggers: >=2 consecutive failures on the current subtask, OR the previous attempt already used ("llm reasoning","llm reasoning") and still failed, OR Neighbor Docs list is exhausted/irrelevant for the missing information.
- Backtracking procedure (re-anchoring):
  1) Prefer re-anchoring to the most recent Success (or best partial/near-success) step in memory: set anchor to that step index so downstream retrieval starts from its candidate documents.
  2) If multiple candidate anchors exist, prefer the one whose retrieved evidence best matches the unresolved constraint(s) of the current subtask.
  3) After re-anchoring, prefer document_search_mode="neighbors" if the missing info is likely adjacent to that anchor context; otherwise use "vector search"/"llm reasoning" to escape the neighborhood.
- Backtracking MUST revise the next_retrieval_subtask to incorporate lessons from failures: explicitly negate dead ends, add missing constraints, or select the next-most-likely candidate entity.
- Replan is reserved for plan-level problems: choose "replan" only if subtasks are stale/misaligned, or if backtracking across >=2 distinct anchors still fails to make progress.

# Action Fields
(1) "stop": retrieval memory already contains sufficient components to answer the original query.
(2) "search": more retrieval is needed. Fields: next_retrieval_subtask (a short, actionable, de-contextualized retrieval prompt that solves the first target subtask or a combination; if a single entity must meet a condition, pick the most likely entity, and if memory shows that entity failed, pick the second most likely), document_search_mode ("neighbors" | "vector search" | "llm reasoning"), component_search_mode ("vector search" | "llm reasoning"), anchor (0-based index of a memory step whose candidate documents to start from, or null), vector_granularity ("document" | "component" | "subcomponent"), subtask_index (0-based index of the subtask it serves), entity (the entity it resolved into the subtask, or null).
(3) "replan": the current plan is inadequate; the system will run the replan tool. Optionally "abandon": indexes of subtasks to give up.

Output format (strict): Return ONLY valid JSON: {"action": {"next_action": "stop" | "search" | "replan", ...}}

Inputs:

User Query
{query}

Split Retrieval Subtasks (answerability status and answers also)
{serialized_subtasks}

Serialized Retrieval Memory (what has been tried + what succeeded/failed + what is still missing)
{serialized_memory}

Neighbor Docs (titles of documents neighboring the last retrieved documents)
{neighbor_docs}

Output:"""

DOC_TRAVERSER_PROMPT = """You are a retrieval selection assistant.

Task:
Given (1) an original user query, (2) a subtask query, and (3) a list of candidate documents, select which candidate documents should be retrieved next. Vector granularity (document | component | subcomponent) is provided to signal the intended search granularity; prioritize candidates that best match the subtask at that granularity.

Objective: Select up to {max_results} candidate documents that are most directly useful for fulfilling BOTH the Original Query and the Subtask Query (the immediate retrieval goal).

Hard constraints:
1) Use ONLY provided context (the Original Query, the Subtask Query, the Candidate documents list). Do NOT introduce any documents that are not in the candidate list.
2) No clarifying questions.
3) Validity + exact matching: indices must be valid 0-based indices into the candidate list; filenames must exactly match a filename from the candidate list.
4) Internal reasoning only: output JSON only.

Scoring rules: assign a relevance score in [0.0, 1.0] for each selected document (1.0: highly likely to contain the needed evidence for the subtask while staying aligned with the original query; 0.5: partially relevant; 0.0: clearly irrelevant). Prefer documents that strongly match the Subtask Query, but do not pick documents that obviously diverge from the Original Query's scope/constraints.

Selection & ordering rules: output ONLY up to {max_results} selections, sorted by descending score. Never return an empty selection unless nothing is relevant at all.

Output format (strict): {"selection": [{"index": int, "filename": string, "score": float}]}

Inputs:
# Original Query
{original_query}

# Subtask Query
{subtask_query}

# Vector granularity
{vector_granularity}

# Candidate documents (0-based indices):
{candidates}

# Max results
{max_results}

Output:"""

COMPONENT_TRAVERSER_PROMPT = """You are a component selection assistant for retrieval.

Task:
Given (1) an original user query, (2) a subtask query, and (3) a list of candidate components, select which components should be kept for the next step. Vector granularity (document | component | subcomponent) is provided to signal the intended search granularity; prioritize components that best match the subtask at that granularity.

Objective: Select up to {max_results} candidate components that are most directly useful for fulfilling BOTH the Original Query and the Subtask Query.

Hard constraints:
1) Use ONLY provided context. Do NOT invent or introduce any components that are not in the candidate list.
2) No clarifying questions.
3) Validity + exact matching: indices must be valid 0-based indices; filenames and component_ids must exactly match a candidate entry.
4) Internal reasoning only: output JSON only.

Scoring rules: a relevance score in [0.0, 1.0] per selected component (1.0: highly likely to contain the needed evidence; 0.5: partially relevant; 0.0: clearly irrelevant). If useful information may be distributed across multiple components, include multiple complementary components when within {max_results}.

Selection & ordering rules: output ONLY up to {max_results} selections, sorted by descending score. Avoid empty outputs unless nothing is relevant at all.

Output format (strict): {"selection": [{"index": int, "filename": string, "component_id": string, "score": float}]}

Inputs:
Original Query
{original_query}

Subtask Query
{subtask_query}

Vector granularity
{vector_granularity}

Candidate components (0-based indices):
{candidates}

Max results
{max_results}

Output:"""

PLANNER_PROMPT = """You are a retrieval-plan revision assistant.

Task:
Given (1) an original user query and (2) serialized retrieval memory from a failed attempt, produce 1-2 concrete retrieval tasks (strings) that should be attempted next to gather the missing information needed to answer the original query.

Rules:
1) Task count: if the remaining gap is small and single-scope, output exactly 1 task; otherwise output 2 tasks.
2) Task wording: each task is a short, actionable retrieval prompt (imperative verb + object); no reasoning as a task; one clear information need per task.
3) Use ONLY provided inputs (the Original Query and the Retrieval Memory); no outside knowledge.
4) Entity & noun-phrase coverage: every named entity and key noun phrase from the Original Query that is still needed must appear at least once across the tasks.
5) De-contextualize: replace pronouns and implicit references; restate placeholders explicitly.
6) Constraint distribution: spread constraints logically across tasks (identification/disambiguation vs. evidence gathering vs. attribute extraction).
7) Dependency ordering: if one task's output is needed for another, put the prerequisite first and reference it with (i), (ii), ... until it is resolved.

Output format (strict): {"tasks": ["string", ...]} (optionally "depends_on": [[subtask indexes], ...] per task).

Inputs:
# Original Query
{original_query}

# Retrieval Memory
{memory}

Output:"""

EVALUATOR_PROMPT = """You are a retrieval evaluation assistant.

Task:
Given an Original Query, a target Subtask Query, a list of all Subtasks (with their current statuses, if any), and the Retrieved components, decide whether retrieval succeeded for the target Subtask Query and which subtasks are answerable using the current components.

Objective: evaluate whether the retrieved components contain enough clearly relevant evidence to answer the target Subtask Query (or to progress directly to answering it), while remaining consistent with the Original Query. Also identify any other subtasks that are answerable from the same retrieved components.

Hard constraints:
1) Use ONLY provided context. Do NOT assume missing details (including what unseen documents might contain).
2) No clarifying questions.
3) Internal reasoning only: output JSON only.

Decision rules for 'status':
- Output "answerable" if at least one retrieved component appears: (i) clearly relevant to the given '# Subtask Query', OR (ii) directly answers the '# Original query', if combined with the '# Subtask status', OR (iii) directly answers any of the '# Subtask query' that are marked as "not answerable" or "unknown" in the '# Subtask status' list, if combined with the '# Subtask status'.
- Otherwise output "not answerable".

Updated subtasks (independent of target status): "updated_subtasks" MUST include ONLY the unanswerable subtasks from the '# Subtask status' that have become answerable using the current Retrieved components + subtask status. For each: its 1-based index, status = "answerable", and a concise answer drawn ONLY from the Retrieved components (for a subtask another one depends on: the entity it names, and optionally "alternatives": other candidate entities, most likely first). If none, output [].

Output format (strict): {"status": "answerable" | "not answerable", "updated_subtasks": [{"index": int, "status": "answerable", "answer": string, "alternatives": [string]}]}

Inputs:
# Original Query
{original_query}

# Subtask Query
{subtask_query}

# Retrieved components (0-based indices):
{candidates}

# Subtask status (1-based index; include current status if any)
{subtasks}

Output:"""

RERANKER_PROMPT = """You are a reranking assistant for retrieval.

Task:
Given a user query and a list of candidate components, select and rank the TOP-{top_k} candidates by how directly useful they are for answering the user query.

Hard constraints:
1) Use only provided context (the user query and the candidate components list). Do NOT complete missing details with parametric knowledge.
2) No clarifying questions.
3) Internal reasoning only: consider semantic overlap, specificity to the query, and usefulness for answering; output only JSON.

Scoring rules:
- Assign a relevance score in [0.0, 1.0] to selected candidates (1.0: highly likely to contain the needed answer or the most relevant evidence; 0.5: partially relevant or tangentially useful; 0.0: clearly irrelevant).
- Relevant information may be distributed across multiple components, such as components that are needed to resolve a query, including identifying, disambiguating, or mapping implicit entities (e.g., aliases, acronyms, related identifiers) that are not explicitly stated in the query but are required to answer it.
- Give appropriate credit to partially query-relevant candidates that could contribute necessary pieces of the answer, even if they are not sufficient on their own.
- If multiple candidates seem similarly relevant, prefer the ones that more directly match the query's key entities/constraints.

Selection & ordering rules: output ONLY the TOP-{top_k} candidates by relevance, sorted by descending score. Indices are 0-based and must match the candidate list.

Output format (strict): {"ranking": [{"index": int, "filename": string, "component_id": string, "score": float}]}

Inputs:
# User Query
{query}

# Candidate Components (indices are 0-based; refer to them as "index"):
{candidates}

# Top-K
{top_k}

Output:"""

DECOMPOSE_PROMPT = PLANNER_PROMPT  # the initial plan is the planner run on an empty memory

_SELECTION = {"type": "array", "items": {"type": "object", "required": ["index"], "properties": {
    "index": {"type": "integer"}, "filename": {"type": "string"}, "component_id": {"type": "string"},
    "score": {"type": "number"}}}}
ORCHESTRATOR_SCHEMA: dict[str, Any] = {
    "type": "object", "required": ["action"],
    "properties": {"action": {"type": "object", "required": ["next_action"], "properties": {
        "next_action": {"enum": ["stop", "search", "replan"]},
        "next_retrieval_subtask": {"type": ["string", "null"]},
        "document_search_mode": {"enum": ["neighbors", "vector search", "llm reasoning", None]},
        "component_search_mode": {"enum": ["vector search", "llm reasoning", None]},
        "anchor": {"type": ["integer", "null"]},
        "vector_granularity": {"enum": ["document", "component", "subcomponent", None]},
        "subtask_index": {"type": ["integer", "null"]},
        "entity": {"type": ["string", "null"]},
        "abandon": {"type": "array", "items": {"type": "integer"}},
    }}},
}
DOC_TRAVERSER_SCHEMA: dict[str, Any] = {"type": "object", "required": ["selection"], "properties": {"selection": _SELECTION}}
COMPONENT_TRAVERSER_SCHEMA: dict[str, Any] = DOC_TRAVERSER_SCHEMA
PLANNER_SCHEMA: dict[str, Any] = {
    "type": "object", "required": ["tasks"],
    "properties": {"tasks": {"type": "array", "items": {"type": "string"}},
                   "depends_on": {"type": "array", "items": {"type": "array", "items": {"type": "integer"}}}},
}
EVALUATOR_SCHEMA: dict[str, Any] = {
    "type": "object", "required": ["status", "updated_subtasks"],
    "properties": {
        "status": {"enum": ["answerable", "not answerable"]},
        "updated_subtasks": {"type": "array", "items": {"type": "object", "required": ["index", "answer"], "properties": {
            "index": {"type": "integer"}, "status": {"type": "string"}, "answer": {"type": "string"},
            "alternatives": {"type": "array", "items": {"type": "string"}}}}},
        "dead_end": {"type": "boolean"},
    },
}
RERANKER_SCHEMA: dict[str, Any] = {"type": "object", "required": ["ranking"], "properties": {"ranking": _SELECTION}}
DECOMPOSE_SCHEMA: dict[str, Any] = {
    "type": "object", "required": ["subqueries"],
    "properties": {"subqueries": {"type": "array", "items": {"type": "object", "required": ["text"], "properties": {
        "text": {"type": "string"}, "modality": {"type": "string"},
        "depends_on": {"type": "array", "items": {"type": "integer"}}}}}},
}

DOC_MODE = {"local": "neighbors", "global": "vector search"}
GRANULARITY_NAMES = ("document", "component", "subcomponent")
FOUND_IN_TRACE = 8
MAX_DECISIONS_PER_STEP = 3  # decisions that change only statuses (abandon a subquery) before a step is due
EVIDENCE_IN_MEMORY = 3


def fill(template: str, **values: Any) -> str:
    """Fill {name} slots without str.format, so the JSON braces of the prompts stay literal."""
    for key, value in values.items():
        text = value if isinstance(value, str) else json.dumps(value, ensure_ascii=False)
        template = template.replace("{" + key + "}", text)
    return template


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
    """Row maps of one corpus for the max-over-descendants scores, and document neighbourhoods."""

    def __init__(self, corpus) -> None:
        self.corpus = corpus
        docs, comps, subs = (corpus.layers[n] for n in ("documents", "components", "subcomponents"))
        self.doc_ids = docs.ids
        self.doc_row = docs.dense.row
        self.comp_ids = comps.ids
        self.comp_row = comps.dense.row
        self.comp_doc_row = corpus.component_doc_rows  # (n_comps,)
        nodes = corpus.nodes
        # (n_subs,) row of each subcomponent's component and of its document (-1: not in those layers)
        self.sub_comp_row = np.array([self.comp_row.get(nodes[s].parent or "", -1) for s in subs.ids], dtype=np.int64)
        self.sub_doc_row = np.array([self.doc_row.get(nodes[s].doc, -1) for s in subs.ids], dtype=np.int64)
        self.comp_has_subs = np.zeros(len(comps.ids), dtype=bool)  # (n_comps,)
        self.comp_has_subs[self.sub_comp_row[self.sub_comp_row >= 0]] = True
        self._neighbours: dict[str, list[str]] = {}

    def neighbours(self, doc_id: str) -> list[str]:
        """Documents the document's components link to, then documents linking to it."""
        cached = self._neighbours.get(doc_id)
        if cached is not None:
            return cached
        corpus = self.corpus
        out: list[str] = []
        for comp in corpus.components_by_doc.get(doc_id, []):
            out += [self._doc_of(e.dst) for e in corpus.out_edges.get(comp, []) if e.kind == EdgeKind.LINK]
        out += [e.dst for e in corpus.out_edges.get(doc_id, []) if e.kind == EdgeKind.DOC_LINK]
        out += [self._doc_of(e.src) for e in corpus.in_edges.get(doc_id, []) if e.kind in (EdgeKind.DOC_LINK, EdgeKind.LINK)]
        result = [d for d in dict.fromkeys(out) if d and d != doc_id and d in self.doc_row]
        self._neighbours[doc_id] = result
        return result

    def links_of(self, comp_id: str) -> list[str]:
        """Titles of the other documents a component links to."""
        corpus = self.corpus
        own = corpus.nodes[comp_id].doc
        docs = dict.fromkeys(self._doc_of(e.dst) for e in corpus.out_edges.get(comp_id, []) if e.kind == EdgeKind.LINK)
        return [corpus.documents[d].title for d in docs if d in corpus.documents and d != own]

    def _doc_of(self, node_id: str) -> str:
        node = self.corpus.nodes.get(node_id)
        return node.doc if node is not None else ""


def max_into(values: np.ndarray, rows: np.ndarray, size: int) -> np.ndarray:
    """(size,) max of `values` grouped by `rows` (rows < 0 dropped); 0 where a group is empty.
    Scores are min-max normalised, so 0 is the floor."""
    out = np.zeros(size, dtype=np.float32)
    valid = rows >= 0
    np.maximum.at(out, rows[valid], values[valid])
    return out


@dataclass
class TextScores:
    """Hybrid scores of one text against every row of the three layers, and the derived
    max-over-descendants vectors, computed once per text and question."""

    doc: np.ndarray  # (n_docs,)
    comp: np.ndarray  # (n_comps,)
    sub: np.ndarray  # (n_subs,)
    derived: dict[tuple[str, int], np.ndarray] = field(default_factory=dict)


@dataclass(frozen=True, slots=True)
class RunConfig:
    """The parameters of one retrieve() call (see FiFRetriever.params)."""

    max_steps: int
    max_llm_calls: int
    shortlist: int
    docs_per_hop: int
    units_per_hop: int
    alpha: float
    min_coverage: float
    min_score: float
    hop_weight: float


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

    def serialise(self, corpus, view: DocumentRowMaps) -> dict[str, Any]:
        evidence = []
        for hit in self.found[:EVIDENCE_IN_MEMORY]:
            node = corpus.nodes[hit.node_id]
            evidence.append({"title": corpus.documents[node.doc].title, "text": node.text, "links": view.links_of(hit.node_id)})
        return {
            "step": self.step, "action": "traverse", "subtask": self.subtask, "target": self.target, "entity": self.entity,
            "anchor": self.anchor, "strategy": modes_of(self.strategy), "outcome": self.outcome, "dead_end": self.dead_end,
            "docs": [corpus.documents[d].title for d in self.docs], "evidence": evidence, "entities": self.entities,
            "neighbors": len({n for d in self.docs for n in view.neighbours(d)}),
        }


@dataclass
class Memory:
    """M_t = (query, subquery list with statuses and answers, action history)."""

    query: str
    subqueries: list[SubQuery]
    answers: dict[int, list[str]] = field(default_factory=dict)  # subquery -> [answer, alternatives...]
    history: list[dict[str, Any]] = field(default_factory=list)  # serialised records, oldest first
    hops: list[HopRecord] = field(default_factory=list)
    steps: int = 0
    replans: int = 0

    def subtasks(self) -> list[dict[str, Any]]:
        out = []
        for i, s in enumerate(self.subqueries):
            answers = self.answers.get(i, [])
            out.append({"index": i, "text": s.text, "status": s.status, "depends_on": s.depends_on,
                        "answer": answers[0] if answers else None, "alternatives": answers[1:]})
        return out


# ---------------------------------------------------------------- the retriever


@register
class FiFRetriever(Retriever):
    name = "fif"
    description = "FiF: an agent traverses documents -> components with a cost ladder and history-aware backtracking, then reranks."
    params = (
        ParamSpec("max_steps", 8, 1, 30, "Most TRAVERSE/PLAN actions before the agent stops."),
        ParamSpec("max_llm_calls", 24, 0, 200, "Most LLM calls per question (rules make none); the agent stops when they run out."),
        ParamSpec("shortlist", 30, 1, 200, "Vector shortlist k at the document and component level (the paper's k)."),
        ParamSpec(
            "docs_per_hop", 8, 1, 50,
            "Documents a traverse keeps. A top 10 needs a pool about that wide: on dev-hotpot-pdf 5 gives All@10 0.890, 8 gives 0.935.",
        ),
        ParamSpec("units_per_hop", 8, 1, 50, "Components a traverse keeps."),
        ParamSpec("alpha", 0.5, 0.0, 1.0, "BM25 weight in the hybrid node scores."),
        ParamSpec("min_coverage", 0.5, 0.0, 1.0, "Evaluator: share of a subquery's non-entity words the evidence must contain."),
        ParamSpec("min_score", 0.3, 0.0, 1.0, "Evaluator: lowest normalised score of a unit that can count as evidence."),
        ParamSpec("hop_weight", 0.5, 0.0, 1.0, "Reranker: weight of the hops' credit against relevance to the query."),
    )

    # ------------------------------------------------------------ scores

    @property
    def view(self) -> DocumentRowMaps:
        """The corpus's row maps, built once per loaded corpus and shared by every question."""
        return self.corpus.derived(DocumentRowMaps)

    def _scores(self, text: str) -> TextScores:
        cached = self._text_scores.get(text)
        if cached is not None:
            return cached
        layers, alpha = self.corpus.layers, self._cfg.alpha
        qvec, qsub = self.embed(text), self.embed_sub([text])[0]

        def hybrid(name: str, vec: np.ndarray) -> np.ndarray:
            return hybrid_scores(layers[name], text, vec, alpha).astype(np.float32)

        scores = TextScores(doc=hybrid("documents", qvec), comp=hybrid("components", qvec), sub=hybrid("subcomponents", qsub))
        self._text_scores[text] = scores
        return scores

    def doc_scores(self, text: str, granularity: int) -> np.ndarray:
        """(n_docs,) SCORE_vec(q, d; g): the summary's own score (g=0), the max over the document's
        components (g=1) or over its subcomponents (g=2)."""
        s = self._scores(text)
        if granularity == 0:
            return s.doc
        key = ("doc", granularity)
        if key not in s.derived:
            n = len(self.view.doc_ids)
            s.derived[key] = (max_into(s.comp, self.view.comp_doc_row, n) if granularity == 1
                              else max_into(s.sub, self.view.sub_doc_row, n))
        return s.derived[key]

    def comp_scores(self, text: str, granularity: int) -> np.ndarray:
        """(n_comps,) component scores at granularity max(g, 1): the component's own score, or the
        max over its subcomponents (its own score where it has none)."""
        s = self._scores(text)
        if granularity < 2:
            return s.comp
        key = ("comp", 2)
        if key not in s.derived:
            view = self.view
            s.derived[key] = np.where(view.comp_has_subs, max_into(s.sub, view.sub_comp_row, len(view.comp_ids)), s.comp)
        return s.derived[key]

    # ------------------------------------------------------------ loop

    def retrieve(self, query: str, top_k: int, params: dict[str, Any], trace: Trace) -> list[ScoredNode]:
        self._cfg = RunConfig(**{spec.name: self.param(params, spec.name) for spec in self.params})
        trace.params.update({spec.name: getattr(self._cfg, spec.name) for spec in self.params})
        self._calls0 = self.llm.usage.snapshot()[0]
        self._text_scores: dict[str, TextScores] = {}
        if not self.corpus.layers["documents"].ids or not self.corpus.layers["components"].ids:
            return []
        memory = Memory(query=query, subqueries=self._decompose(query, trace))
        stop_reason = "step budget spent"
        decisions = 0
        usage0 = self._usage()  # a step is charged every call since the previous step (decisions included)
        while memory.steps < self._cfg.max_steps:
            if self._calls_left() < 2:  # a decision and an evaluation
                stop_reason = "LLM call budget spent"
                break
            decisions += 1
            if decisions > MAX_DECISIONS_PER_STEP * self._cfg.max_steps:
                stop_reason = "the orchestrator kept deciding without acting"
                break
            t0 = time.perf_counter()
            action = self._orchestrate(memory)
            for i in action.get("abandon") or []:
                if isinstance(i, int) and 0 <= i < len(memory.subqueries) and memory.subqueries[i].status == "open":
                    memory.subqueries[i].status = "failed"
            kind = action.get("next_action")
            if kind == "replan":
                self._replan(memory, trace, action, usage0)
            elif kind == "search" and action.get("next_retrieval_subtask"):
                self._traverse_step(memory, trace, action, usage0)
            elif kind == "stop" or all(s.status != "open" for s in memory.subqueries):
                stop_reason = str(action.get("reason") or "the orchestrator stopped")
                break
            else:
                continue  # a decision that only abandoned a subquery: its cost goes to the next step
            usage0 = self._usage()
            log.debug("fif step %d (%s) took %.3fs", memory.steps, kind, time.perf_counter() - t0)
        return self._stop(memory, trace, top_k, stop_reason, usage0)

    def _llm(self, task: str, prompt: str, payload: dict[str, Any], schema: dict[str, Any]) -> dict[str, Any]:
        return self.llm.complete_json(task, prompt, payload, schema)

    def _calls_left(self) -> int:
        return self._cfg.max_llm_calls - (self.llm.usage.snapshot()[0] - self._calls0)

    def _usage(self) -> tuple[int, int, float]:
        calls, tokens = self.llm.usage.snapshot()
        return calls, tokens, float(getattr(self.llm.usage, "seconds", 0.0))

    def _cost(self, usage0: tuple[int, int, float]) -> dict[str, Any]:
        """A step's cost as AgentStep fields. `seconds` is the time its model calls took: the cost
        that matters with a model, 0 under the rules, so identical questions give identical traces."""
        calls, tokens, seconds = self._usage()
        return {"llm_calls": calls - usage0[0], "llm_tokens": tokens - usage0[1], "seconds": round(seconds - usage0[2], 4)}

    # ------------------------------------------------------------ PLAN

    def _decompose(self, query: str, trace: Trace) -> list[SubQuery]:
        """The initial plan from the shared decomposition task (the question alone without it)."""
        try:
            out = self._llm("decompose", fill(DECOMPOSE_PROMPT, original_query=query, memory="[]"), {"question": query}, DECOMPOSE_SCHEMA)
            reason = str(out.get("reason", ""))
        except ValueError:
            out, reason = {}, "this backend has no decompose task: the question is the only subquery"
        subs: list[SubQuery] = []
        for s in out.get("subqueries") or []:
            if not isinstance(s, dict) or not str(s.get("text", "")).strip():
                continue
            modality = s.get("modality") if s.get("modality") in ("text", "table", "figure", "any") else "any"
            deps = [d for d in s.get("depends_on") or [] if isinstance(d, int) and 0 <= d < len(subs)]
            subs.append(SubQuery(text=str(s["text"]).strip(), modality=modality, depends_on=deps))
        subs = subs or [SubQuery(text=query)]
        trace.add(DecomposeStep(subqueries=subs, backend=self.llm.name, reason=reason))
        return subs

    def _replan(self, memory: Memory, trace: Trace, action: dict[str, Any], usage0: tuple[int, int, float]) -> None:
        memory.steps += 1
        memory.replans += 1
        payload = {"query": memory.query, "subtasks": memory.subtasks(), "memory": memory.history}
        out = self._llm("fif_plan", fill(PLANNER_PROMPT, original_query=memory.query, memory=memory.history), payload, PLANNER_SCHEMA)
        deps_list, names_list = out.get("depends_on") or [], out.get("answers") or []
        added: list[str] = []
        for j, text in enumerate(out.get("tasks") or []):
            if not isinstance(text, str) or not text.strip():
                continue
            deps = deps_list[j] if j < len(deps_list) and isinstance(deps_list[j], list) else []
            deps = [d for d in deps if isinstance(d, int) and 0 <= d < len(memory.subqueries)]
            names = names_list[j] if j < len(names_list) and isinstance(names_list[j], list) else []
            if deps and names:  # the bridge entities the new task builds on, most likely first
                memory.answers[deps[-1]] = [str(n) for n in names]
            memory.subqueries.append(SubQuery(text=text.strip(), depends_on=deps))
            added.append(text.strip())
        memory.history.append({"step": memory.steps, "action": "plan", "tasks": added})
        trace.add(AgentStep(step=memory.steps, action="plan", outcome="planned",
                            reason=f"{action.get('reason', 'replan')}; added {added}", **self._cost(usage0)))
        trace.add(DecomposeStep(subqueries=memory.subqueries, backend=self.llm.name, reason=str(out.get("reason", "replanned"))))

    # ------------------------------------------------------------ orchestrator

    def _orchestrate(self, memory: Memory) -> dict[str, Any]:
        last_docs = memory.hops[-1].docs if memory.hops else []
        neighbours = dict.fromkeys(self.corpus.documents[n].title for d in last_docs for n in self.view.neighbours(d))
        payload = {
            "query": memory.query, "subtasks": memory.subtasks(), "memory": memory.history,
            "neighbor_docs": list(neighbours)[:30], "steps_left": self._cfg.max_steps - memory.steps,
            "llm_calls_left": self._calls_left() - 1, "replans": memory.replans,
        }
        prompt = fill(ORCHESTRATOR_PROMPT, query=memory.query, serialized_subtasks=payload["subtasks"],
                      serialized_memory=memory.history, neighbor_docs=payload["neighbor_docs"])
        out = self._llm("fif_orchestrate", prompt, payload, ORCHESTRATOR_SCHEMA)
        action = out.get("action") if isinstance(out, dict) else None
        return action if isinstance(action, dict) and action else {"next_action": "stop", "reason": "the orchestrator returned no action"}

    # ------------------------------------------------------------ TRAVERSE

    def _traverse_step(self, memory: Memory, trace: Trace, action: dict[str, Any], usage0: tuple[int, int, float]) -> None:
        memory.steps += 1
        strategy = strategy_of(action.get("document_search_mode"), action.get("component_search_mode"), action.get("vector_granularity"))
        target, entity = str(action["next_retrieval_subtask"]), action.get("entity") or None
        index = action.get("subtask_index")
        if not isinstance(index, int) or not 0 <= index < len(memory.subqueries):
            open_ = [i for i, s in enumerate(memory.subqueries) if s.status == "open"]
            index = open_[0] if open_ else len(memory.subqueries) - 1
        by_step = {h.step: h for h in memory.hops}
        anchor_step = action.get("anchor") if action.get("anchor") in by_step else None
        anchor_hop = by_step.get(anchor_step) if anchor_step is not None else None
        # Without an anchor a hop starts from the documents last retrieved (the naive continuation).
        anchor_docs = anchor_hop.docs if anchor_hop else (memory.hops[-1].docs if memory.hops else [])
        previous = memory.hops[-1].step if memory.hops else None
        backtrack_to = anchor_step if anchor_step is not None and anchor_step != previous else None
        # A composed hop must reach somewhere new, not the page its entity was read from; an
        # uncomposed local hop leaves its anchor documents.
        if entity and anchor_hop and anchor_hop.evidence_doc:
            exclude = [anchor_hop.evidence_doc]
        else:
            exclude = [] if entity else list(anchor_docs)

        docs, found, note = self._traverse(memory.query, target, strategy, anchor_docs, exclude)
        source = [self.corpus.documents[d].file_name for d in exclude] if entity else []
        verdict = self._evaluate(memory, index, target, entity, found, source)
        success = verdict.get("status") == "answerable" and bool(found)
        for upd in verdict.get("updated_subtasks") or []:
            j = upd.get("index", 0) - 1 if isinstance(upd.get("index"), int) else -1
            if 0 <= j < len(memory.subqueries) and memory.subqueries[j].status == "open":
                memory.subqueries[j].status = "answered"
                answers = [str(upd.get("answer", "")).strip(), *(str(a).strip() for a in upd.get("alternatives") or [])]
                memory.answers[j] = [a for a in answers if a]
        if success and memory.subqueries[index].status == "open":
            memory.subqueries[index].status = "answered"
        hop = HopRecord(
            step=memory.steps, subtask=index, target=target, entity=entity, strategy=strategy, anchor=anchor_step,
            outcome="success" if success else "failure", dead_end=bool(verdict.get("dead_end")), docs=docs, found=found,
            entities=[str(e) for e in verdict.get("entities") or []],
            evidence_doc=_evidence_doc(self.corpus, found, verdict.get("evidence")) if success else None,
        )
        memory.hops.append(hop)
        memory.history.append(hop.serialise(self.corpus, self.view))
        reason = "; ".join(r for r in (str(action.get("reason", "")), note, str(verdict.get("reason", ""))) if r)
        trace.add(AgentStep(
            step=memory.steps, action="traverse", subquery=target, strategy=strategy,
            anchor=list(anchor_docs) if strategy.hop == "local" or backtrack_to is not None else [],
            outcome=hop.outcome, found=found[:FOUND_IN_TRACE], backtrack_to=backtrack_to, reason=reason, **self._cost(usage0),
        ))

    def _traverse(
        self, query: str, target: str, strategy: Strategy, anchor_docs: list[str], exclude: list[str]
    ) -> tuple[list[str], list[ScoredNode], str]:
        """Document-level then component-level traverser. Returns (documents, units, note)."""
        corpus, view, cfg = self.corpus, self.view, self._cfg
        g = strategy.granularity
        doc_sc = self.doc_scores(target, g)  # (n_docs,)
        if strategy.hop == "local":
            skip = set(exclude)
            cand = [n for n in dict.fromkeys(n for d in anchor_docs for n in view.neighbours(d)) if n not in skip]
            if not cand:
                return [], [], "no neighbour documents around the anchor"
            rows = np.array([view.doc_row[d] for d in cand], dtype=np.int64)
        else:
            rows = np.arange(len(view.doc_ids))
        shortlist = order_rows(doc_sc, rows)[: cfg.shortlist]  # document rows, best first
        chosen = [int(r) for r in shortlist[: cfg.docs_per_hop]]
        if strategy.reasoning == "both" and self._calls_left() >= 3:  # this call, the components', the evaluator's
            cands = [{"index": i, "filename": corpus.documents[view.doc_ids[r]].file_name, "title": corpus.documents[view.doc_ids[r]].title,
                      "summary": corpus.documents[view.doc_ids[r]].summary[:400], "score": round(float(doc_sc[r]), 4)}
                     for i, r in enumerate(shortlist)]
            payload = {"original_query": query, "subtask_query": target, "vector_granularity": GRANULARITY_NAMES[g],
                       "candidates": cands, "max_results": cfg.docs_per_hop}
            out = self._llm("fif_select_docs", fill(DOC_TRAVERSER_PROMPT, **payload), payload, DOC_TRAVERSER_SCHEMA)
            chosen = [int(shortlist[i]) for i in _picked(out.get("selection"), len(shortlist), cfg.docs_per_hop)] or chosen
        docs = [view.doc_ids[r] for r in chosen]

        comp_rows = np.array([view.comp_row[c] for d in docs for c in corpus.components_by_doc.get(d, []) if c in view.comp_row],
                             dtype=np.int64)
        if not len(comp_rows):
            return docs, [], "the chosen documents have no components"
        # A unit's score mixes its own (component level) and its document's (document level).
        unit = 0.5 * self.comp_scores(target, g)[comp_rows] + 0.5 * doc_sc[view.comp_doc_row[comp_rows]]
        order = np.lexsort((comp_rows, -unit))[: cfg.shortlist]
        ranked = [int(o) for o in order[: cfg.units_per_hop]]
        if strategy.reasoning != "none" and self._calls_left() >= 2:  # this call and the evaluator's
            cands = []
            for i, o in enumerate(order):
                node = corpus.nodes[view.comp_ids[comp_rows[o]]]
                cands.append({"index": i, "filename": corpus.documents[node.doc].file_name, "title": corpus.documents[node.doc].title,
                              "component_id": node.id, "text": node.text[:600], "score": round(float(unit[o]), 4)})
            payload = {"original_query": query, "subtask_query": target, "vector_granularity": GRANULARITY_NAMES[g],
                       "candidates": cands, "max_results": cfg.units_per_hop}
            out = self._llm("fif_select_components", fill(COMPONENT_TRAVERSER_PROMPT, **payload), payload, COMPONENT_TRAVERSER_SCHEMA)
            ranked = [int(order[i]) for i in _picked(out.get("selection"), len(order), cfg.units_per_hop)] or ranked
        found = [ScoredNode(node_id=view.comp_ids[comp_rows[o]], score=round(float(unit[o]), 6), why=f"{strategy.hop} g{g}")
                 for o in ranked]
        return docs, found, ""

    def _evaluate(
        self, memory: Memory, index: int, target: str, entity: str | None, found: list[ScoredNode], source_files: list[str]
    ) -> dict[str, Any]:
        if not found:
            return {"status": "not answerable", "updated_subtasks": [], "dead_end": bool(entity), "reason": "nothing found"}
        corpus = self.corpus
        cands = []
        for i, hit in enumerate(found):
            node = corpus.nodes[hit.node_id]
            cands.append({"index": i, "filename": corpus.documents[node.doc].file_name, "title": corpus.documents[node.doc].title,
                          "component_id": node.id, "text": node.text, "links": self.view.links_of(node.id), "score": hit.score})
        payload = {"original_query": memory.query, "subtask_query": target, "subtask_index": index, "entity": entity,
                   "source_files": source_files, "subtasks": memory.subtasks(), "candidates": cands,
                   "min_coverage": self._cfg.min_coverage, "min_score": self._cfg.min_score}
        prompt = fill(EVALUATOR_PROMPT, original_query=memory.query, subtask_query=target, candidates=cands, subtasks=payload["subtasks"])
        return self._llm("fif_evaluate", prompt, payload, EVALUATOR_SCHEMA)

    # ------------------------------------------------------------ STOP

    def _stop(self, memory: Memory, trace: Trace, top_k: int, reason: str, usage0: tuple[int, int, float]) -> list[ScoredNode]:
        """RERANK every unit in memory against the original query, then record the STOP step (charged
        with the decision to stop and the rerank)."""
        corpus, view, query = self.corpus, self.view, memory.query
        found_by: dict[str, list[dict[str, Any]]] = {}
        for h in memory.hops:
            for rank, hit in enumerate(h.found):
                found_by.setdefault(hit.node_id, []).append({"step": h.step, "subtask": h.subtask, "outcome": h.outcome, "rank": rank})
        ids = list(found_by)
        relevance = self.comp_scores(query, 2)  # (n_comps,)
        cands = []
        for i, node_id in enumerate(ids):
            node = corpus.nodes[node_id]
            cands.append({"index": i, "filename": corpus.documents[node.doc].file_name, "component_id": node_id,
                          "title": corpus.documents[node.doc].title, "text": node.text[:600],
                          "score": round(float(relevance[view.comp_row[node_id]]), 6), "found_by": found_by[node_id]})
        # The chain: for each answered subquery, its best unit from its earliest successful hop.
        chain = []
        for j in range(len(memory.subqueries)):
            best = min(((f["step"], f["rank"], i) for i, c in enumerate(cands) for f in c["found_by"]
                        if f["subtask"] == j and f["outcome"] == "success"), default=None)
            if best is not None:
                chain.append(best[2])
        payload = {"query": query, "candidates": cands, "top_k": top_k, "chain": chain, "hop_weight": self._cfg.hop_weight}
        if not cands:
            out: dict[str, Any] = {"ranking": []}
        elif self._calls_left() >= 1:
            out = self._llm("fif_rerank", fill(RERANKER_PROMPT, query=query, candidates=cands, top_k=str(top_k)), payload, RERANKER_SCHEMA)
        else:  # no call left: the rules reranker, which costs nothing
            from backend.llm.rules import RulesBackend

            out = RulesBackend().complete_json("fif_rerank", "", payload, RERANKER_SCHEMA)
        results: list[ScoredNode] = []
        ceiling = float("inf")  # keeps scores non-increasing whatever the reranker returned
        ranked = [r.get("index") for r in out.get("ranking") or [] if isinstance(r, dict)]
        scores = {r.get("index"): float(r.get("score", 0.0)) for r in out.get("ranking") or [] if isinstance(r, dict)}
        ranked = [i for i in dict.fromkeys(ranked) if isinstance(i, int) and 0 <= i < len(ids)]
        # A model that ranked only its top k: the others follow by relevance to the query.
        rest = sorted((i for i in range(len(ids)) if i not in set(ranked)), key=lambda i: (-cands[i]["score"], ids[i]))
        for i in ranked + rest:
            ceiling = min(ceiling, scores.get(i, cands[i]["score"]))
            results.append(ScoredNode(node_id=ids[i], score=round(ceiling, 6), why=_why(found_by[ids[i]])))
        results = results[:top_k]
        answered = sum(s.status == "answered" for s in memory.subqueries)
        trace.add(AgentStep(
            step=memory.steps + 1, action="stop", outcome="stopped", found=results[:FOUND_IN_TRACE],
            reason=f"{reason}; {answered}/{len(memory.subqueries)} subqueries answered; reranked {len(ids)} units",
            **self._cost(usage0),
        ))
        return results


def _picked(selection: Any, n: int, limit: int) -> list[int]:
    """Valid, distinct candidate indexes of an LLM selection, in its order."""
    out: list[int] = []
    for s in selection or []:
        i = s.get("index") if isinstance(s, dict) else None
        if isinstance(i, int) and 0 <= i < n and i not in out:
            out.append(i)
    return out[:limit]


def _evidence_doc(corpus, found: list[ScoredNode], index: Any) -> str | None:
    i = index if isinstance(index, int) and 0 <= index < len(found) else 0
    return corpus.nodes[found[i].node_id].doc if found else None


def _why(found_by: list[dict[str, Any]]) -> str:
    return ", ".join(f"step {f['step']} {f['outcome']} #{f['rank'] + 1}" for f in found_by[:3])

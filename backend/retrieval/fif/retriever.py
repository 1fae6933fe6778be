"""FiF, "Failure is Feedback": an agent that traverses the three layers (documents with their
summaries / components / subcomponents) under history-aware backtracking.

Memory M_t = (query, subquery list with statuses, action history). Each turn the orchestrator
chooses TRAVERSE(anchor documents, subquery, strategy), PLAN or STOP; STOP reranks every unit in
memory against the original query, and (seed_weight > 0, not in the paper) fuses that order by
reciprocal rank with the whole question's hybrid component ranking: the agent's hops add what
the direct match misses, but a dead-end traversal cannot drop the question's best direct
matches (bench/RESULTS.md#stages). A traverse runs the document-level traverser (local hop:
the documents the anchor's components link to, name by title without a link (titles.py), or
are linked from; global hop: every document
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

The package: prompts.py (appendix D, with JSON schemas), tasks.py (each prompt as a typed task),
rules.py (their offline answers), memory.py (strategy tuple, row maps, memory), scores.py (node
scores of one question), agent.py (the loop of one question) and this file (parameters, entry).

Each AgentStep carries its LLM calls and tokens (usage differences, every decision charged to
the step it led to) and `seconds`, the time its model calls took: the cost that dominates with a
model, and 0 under the rules, so that identical questions give identical traces.

What it does not do: read figures (no image encoder is used), or call the LLM beyond
`max_llm_calls` (it stops instead and reranks with the rules reranker, which costs nothing).
"""

from __future__ import annotations

from typing import Any

from backend.retrieval.base import Retriever, register
from backend.retrieval.fif.agent import FiFAgent
from backend.retrieval.fif.memory import DocumentRowMaps, FiFParams
from backend.retrieval.fif.scores import QuestionScores
from backend.types import ScoredNode, Trace


@register
class FiFRetriever(Retriever):
    name = "fif"
    description = "FiF: an agent traverses documents -> components with a cost ladder and history-aware backtracking, then reranks."
    Params = FiFParams
    follows_references = True

    @property
    def view(self) -> DocumentRowMaps:
        """The corpus's row maps, built once per loaded corpus and shared by every question."""
        return self.corpus.derived(DocumentRowMaps)

    def fif_scores(self, alpha: float) -> QuestionScores:
        """A fresh FiF score cache for one question, over the question's shared QueryScores."""
        sc = self.question_scores()
        return QuestionScores(self.corpus, self.view, alpha, lambda t: sc.encode(self.encoder, [t])[0],
                              lambda ts: sc.encode(self.sub_encoder, ts), sc)

    def retrieve(self, query: str, top_k: int, params: dict[str, Any], trace: Trace) -> list[ScoredNode]:
        cfg = self.resolve_params(params, trace)
        trace.params.update(cfg.model_dump())
        if not self.corpus.layers["documents"].ids or not self.corpus.layers["components"].ids:
            return []
        return FiFAgent(self.corpus, self.llm, cfg, self.fif_scores(cfg.alpha)).run(query, top_k, trace)

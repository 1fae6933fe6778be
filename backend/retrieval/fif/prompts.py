"""FiF's prompts (appendix D of "Failure is Feedback") with the JSON schemas of their replies, and
`fill`, which puts values into a prompt's {slots}. The offline answers are in rules.py."""

from __future__ import annotations

import json
from typing import Any

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


def fill(template: str, **values: Any) -> str:
    """Fill {name} slots without str.format, so the JSON braces of the prompts stay literal."""
    for key, value in values.items():
        text = value if isinstance(value, str) else json.dumps(value, ensure_ascii=False)
        template = template.replace("{" + key + "}", text)
    return template

"""LILaC's LLM task: QUERY DECOMPOSITION with MODALITY SELECTION (appendix F), typed.

`DECOMPOSE` turns a question into 1-5 modality-labelled subqueries; offline it is answered by the
rules in rules.py. Strata reuses it; FiF has its own decomposition task (its planner's prompt).
"""

from __future__ import annotations

from typing import Any, Literal

from pydantic import Field

from backend.llm.task import LLMTask, TaskAnswer, TaskPayload
from backend.retrieval.decompose.rules import decompose_answer

DECOMPOSE_PROMPT = (
    "You are a retrieval-oriented query decomposer.\n"
    "Goal - Produce the smallest set (1 - 5) of component-targeting sub-queries.\n"
    "Each sub-query must describe one retrievable component (sentence, paragraph, table row, figure, etc.) whose "
    "embedding should be matched.\nTogether, the sub-queries must supply all the information needed to answer the "
    "original question.\nGuidelines:\n"
    "1. Entity & noun-phrase coverage: Every noun phrase and named entity that appears in the original question must "
    "appear at least once across the entire set of sub-queries (you may distribute them). Keep each phrase exactly as written.\n"
    "2. One-component rule: A sub-query should reference only the facts expected to co-occur within the same component. "
    "If two facts will likely be in different components, put them in different sub-queries.\n"
    "3. No unnecessary splitting: If the whole answer can be found in a single component, return only one sub-query.\n"
    "4. De-contextualize: Rewrite pronouns and implicit references so every sub-query is understandable on its own.\n"
    "5. Keyword distribution: Spread constraints logically.\n"
    "6. Remove redundancy: Merge duplicate or paraphrased sub-queries before you output.\n"
    "7. Ordering for dependencies: If the answer to one sub-query is needed for another, place the prerequisite first.\n"
    "8. Output format: Return one JSON object {{\"subqueries\": [{{\"text\": str, \"modality\": \"text\"|\"table\"|\"figure\", "
    "\"depends_on\": [indexes of prerequisite subqueries]}}]}}. For the modality use the heuristics: numeric totals, "
    "percentages, year-by-year figures -> table; visual appearance, colours, logos, charts -> figure; definitions, roles, "
    "biographies, causal explanations, quotes -> text.\n\nQuestion: {question}\nOutput:"
)
DECOMPOSE_SCHEMA: dict[str, Any] = {
    "type": "object",
    "required": ["subqueries"],
    "properties": {
        "subqueries": {
            "type": "array",
            "minItems": 1,
            "maxItems": 5,
            "items": {
                "type": "object",
                "required": ["text"],
                "properties": {
                    "text": {"type": "string"},
                    "modality": {"enum": ["text", "table", "figure", "image", "any"]},
                    "depends_on": {"type": "array", "items": {"type": "integer"}},
                },
            },
        }
    },
}


class DecomposePayload(TaskPayload):
    question: str


class SubQueryReply(TaskAnswer):
    text: str
    modality: Literal["text", "table", "figure", "image", "any"] = "any"
    depends_on: list[int] = Field(default_factory=list, description="Indexes of prerequisite subqueries.")


class DecomposeAnswer(TaskAnswer):
    subqueries: list[SubQueryReply]
    reason: str = ""


def _rules(payload: DecomposePayload) -> DecomposeAnswer:
    return DecomposeAnswer.model_validate(decompose_answer(payload.question))


DECOMPOSE: LLMTask[DecomposePayload, DecomposeAnswer] = LLMTask(
    name="lilac_decompose",
    prompt=lambda p: DECOMPOSE_PROMPT.format(question=p.question),
    payload=DecomposePayload,
    answer=DecomposeAnswer,
    rules=_rules,
    schema=DECOMPOSE_SCHEMA,
)

"""The reader's prompt (HiKEY/LILaC: answer from the packed evidence, cite unit ids, or abstain)
as a typed task, `ANSWER`, so a reader can `llm.run(ANSWER, AnswerPayload(...))` like every other
prompt. Offline it is answered by `answer_by_rules` (backend/llm/rules.py).

The reader (backend/reader.py) runs it with `llm.run(ANSWER, payload)`: the rules backend calls
the rules, a model backend renders the prompt and validates its JSON with `AnswerReply`.
"""

from __future__ import annotations

from pydantic import Field

from backend.llm.base import ANSWER_PROMPT, ANSWER_SCHEMA
from backend.llm.rules import answer_by_rules, asking_subquery
from backend.llm.task import LLMTask, TaskAnswer, TaskPayload


class EvidenceUnit(TaskPayload):
    """One scored unit of the packed evidence (a sentence, row or figure region)."""

    id: str
    kind: str
    text: str
    score: float
    cosine: float
    coverage: float = Field(description="Share of the question's content words the unit contains.")
    role: str
    subquery: int | None = Field(None, description="Index of the decomposed subquery this unit covers best (None: not decomposed).")
    sub_coverage: float = Field(0.0, description="Share of that subquery's content words the unit contains.")
    bridge: str = Field("", description="The name its page is about, when that page is the bridge: the one the best "
                        "unit of another subquery names (the asking subquery's answer is read there).")
    hop: int = Field(0, description="1 for a bridge page; 2 for a page a bridge page names by the role the asking subquery asks about.")


class AnswerPayload(TaskPayload):
    question: str
    evidence: list[EvidenceUnit] = Field(description="Scored units, best first.")
    threshold: float = Field(0.35, description="Below this best evidence score the answer abstains.")
    context: str = Field("", description="The packed evidence as the prompt shows it.")
    subqueries: list[str] = Field(default_factory=list, description="The retriever's decomposition of the question, if any.")


class AnswerReply(TaskAnswer):
    answer: str
    citations: list[str]
    abstain: bool
    confidence: float = 0.0
    reason: str = ""


def _rules(payload: AnswerPayload) -> AnswerReply:
    evidence = [e.model_dump() for e in payload.evidence]
    asking = asking_subquery(payload.subqueries)
    asking_text = payload.subqueries[asking] if asking is not None else ""
    return AnswerReply.model_validate(answer_by_rules(payload.question, evidence, payload.threshold, len(payload.subqueries),
                                                      asking, asking_text))


ANSWER: LLMTask[AnswerPayload, AnswerReply] = LLMTask(
    name="answer",
    prompt=lambda p: ANSWER_PROMPT.format(context=p.context, question=p.question),
    payload=AnswerPayload,
    answer=AnswerReply,
    rules=_rules,
    schema=ANSWER_SCHEMA,
)

"""The reader's prompt (HiKEY/LILaC: answer from the packed evidence, cite unit ids, or abstain)
as a typed task, `ANSWER`, so a reader can `llm.run(ANSWER, AnswerPayload(...))` like every other
prompt. Offline it is answered by `answer_by_rules` (backend/reader/rules.py), which reads the
payload's units, a table row's cells among them, as these models.

The reader (backend/reader/reader.py) runs it with `llm.run(ANSWER, payload)`: the rules backend
calls the rules, a model backend renders the prompt and validates its JSON with `AnswerReply`.
"""

from __future__ import annotations

from backend.llm.base import ANSWER_PROMPT, ANSWER_SCHEMA
from backend.llm.task import LLMTask
from backend.reader.evidence import AnswerPayload, AnswerReply
from backend.reader.questions import asking_subquery
from backend.reader.rules import answer_by_rules


def _rules(payload: AnswerPayload) -> AnswerReply:
    asking = asking_subquery(payload.subqueries)
    asking_text = payload.subqueries[asking] if asking is not None else ""
    return answer_by_rules(payload.question, payload.evidence, payload.threshold, len(payload.subqueries), asking, asking_text)


ANSWER: LLMTask[AnswerPayload, AnswerReply] = LLMTask(
    name="answer",
    prompt=lambda p: ANSWER_PROMPT.format(context=p.context, question=p.question),
    payload=AnswerPayload,
    answer=AnswerReply,
    rules=_rules,
    schema=ANSWER_SCHEMA,
)

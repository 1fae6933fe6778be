"""The reader: from the packed evidence to a cited answer (reader.py), the typed ANSWER task it
runs (task.py, evidence.py) and that task's offline rules (rules.py, with questions.py, patterns.py,
figures.py, spans.py and computed.py)."""

from backend.reader.evidence import AnswerPayload, AnswerReply, EvidenceUnit
from backend.reader.questions import asking_subquery, question_type
from backend.reader.reader import MAX_EVIDENCE, EvidenceReader, subqueries_of, with_each_subquery
from backend.reader.rules import NOT_ENOUGH, answer_by_rules
from backend.reader.task import ANSWER

__all__ = [
    "ANSWER", "MAX_EVIDENCE", "NOT_ENOUGH", "AnswerPayload", "AnswerReply", "EvidenceReader", "EvidenceUnit",
    "answer_by_rules", "asking_subquery", "question_type", "subqueries_of", "with_each_subquery",
]

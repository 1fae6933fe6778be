"""What goes into the reader's ANSWER task and what comes back: the scored evidence units (a table
row's with its cells), the payload, and the reply. The rules (backend/reader/rules.py) and the
task (backend/reader/task.py) both read these models; a model backend sees them as JSON."""

from __future__ import annotations

from pydantic import Field

from backend.llm.task import TaskAnswer, TaskPayload
from backend.types import TableRow


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
    row: TableRow | None = Field(None, description="A table row's cells (kind 'row'); its text is row.index_text().")
    lead: str = Field("", description="The blocks before it that open the sentence it continues (it starts with a lower-case word).")
    follows: str = Field("", description="The blocks it announces (its sentence is left open: 'the command is', 'as follows:').")

    def whole(self) -> str:
        """The text with the sentence it continues and what it announces: what a reader is shown."""
        text = " ".join(part for part in (self.lead.strip(), self.text.strip(), self.follows.strip()) if part)
        return text.replace(" . ", " .") if self.text.rstrip().endswith(" .") else text  # "a file called .RData", split there


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

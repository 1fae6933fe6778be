"""MI-RAG's LLM tasks (appendix C), typed: the query expansion, the follow-up query generation
and the reasoning record. Offline, each is answered by the rules in rules.py."""

from __future__ import annotations

from pydantic import Field

from backend.llm.task import LLMTask, TaskAnswer, TaskPayload
from backend.retrieval.mirag import rules

EXPAND_PROMPT = (
    "Question: {question}\n{reasoning_record}\n\n"
    "Write one search query for what is still needed to answer the question: the question followed by the "
    'names and terms from the knowledge above that it depends on. Return JSON: {{"query": "..."}}'
)
GENERATE_PROMPT = (
    "Question: {question}\nKnowledge: {reasoning_records}\n\n"
    "Please first analyze all the information in a section named Analysis (## Analysis).\n"
    "Generate {n} follow-up questions to search for additional information and helpful to confirm knowledge, "
    "in a section named Queries (## Queries).\n"
    "Your output should be in the following format:\n\n"
    "## Analysis\nAnalysis question and knowledge to ask context-specific queries that helps to address question.\n"
    "## Queries\nQuestion 1: question 1.\nQuestion 2: question 2.\n\n"
    'Return the two sections as JSON: {{"analysis": "...", "queries": ["question 1", "question 2"]}}'
)
RECORD_PROMPT = (
    "Question: {question}\nKnowledge: {knowledge}\n\n"
    "Based on the figures, tables and knowledge, summarize correct and relevant information with the question. "
    "Write one fact per line and start it with the [id] of the sentence or unit it comes from. "
    'Return JSON: {{"record": "...", "facts": ["ids of the sentences or units cited"]}}'
)
EXPAND_SCHEMA = {"type": "object", "properties": {"query": {"type": "string"}}, "required": ["query"]}
GENERATE_SCHEMA = {
    "type": "object",
    "properties": {"analysis": {"type": "string"}, "queries": {"type": "array", "items": {"type": "string"}}},
    "required": ["queries"],
}
RECORD_SCHEMA = {
    "type": "object",
    "properties": {"record": {"type": "string"}, "facts": {"type": "array", "items": {"type": "string"}}},
    "required": ["record", "facts"],
}

UNIT_CHARS = 600  # knowledge text per unit in the record prompt


class Fact(TaskPayload):
    """A fact of a reasoning record: the sentence (or unit) id and its text."""

    id: str
    text: str
    pages: list[str] = Field(default_factory=list, description="Titles of the knowledge base's pages the fact names.")


class ScoredSentence(TaskPayload):
    id: str
    text: str
    score: float


class KnowledgeUnit(TaskPayload):
    """A retrieved unit as the record prompt sees it, with its candidate fact sentences."""

    id: str
    kind: str
    score: float
    path: str
    text: str
    sentences: list[ScoredSentence]


class ExpandPayload(TaskPayload):
    question: str
    record: str
    facts: list[Fact]


class GeneratePayload(TaskPayload):
    question: str
    records: list[str]
    facts: list[Fact]
    asked: list[str]
    n: int


class RecordPayload(TaskPayload):
    question: str
    queries: list[str]
    knowledge: list[KnowledgeUnit]
    known: list[str] = Field(description="Fact ids cited by earlier records.")
    max_facts: int
    images: list[str] = Field(description="Crops of the figures and tables among the units (for a vision model).")


class ExpandAnswer(TaskAnswer):
    query: str


class GenerateAnswer(TaskAnswer):
    analysis: str = ""
    queries: list[str]


class RecordAnswer(TaskAnswer):
    record: str
    facts: list[str]


def _dict_rules(fn, answer: type[TaskAnswer]):
    """Rules that read the payload as the prompt's JSON object and return the reply's."""
    return lambda payload: answer.model_validate(fn(payload.model_dump()))


def _record_prompt(p: RecordPayload) -> str:
    lines = []
    for unit in p.knowledge:
        lines.append(f"[{unit.id}] ({unit.kind}; {unit.path}) {unit.text[:UNIT_CHARS]}")
        lines += [f"  [{s.id}] {s.text}" for s in unit.sentences if s.id != unit.id]
    return RECORD_PROMPT.format(question=p.question, knowledge="\n".join(lines) or "(nothing found)")


def _with_pages(record: str, facts: list[Fact]) -> str:
    """The record, and the knowledge base's pages its facts name (a follow-up that names one finds it)."""
    pages = list(dict.fromkeys(page for f in facts for page in f.pages))
    return f"{record}\nPages of the knowledge base these facts name: {'; '.join(pages)}" if pages else record


EXPAND: LLMTask[ExpandPayload, ExpandAnswer] = LLMTask(
    name="mirag_expand", prompt=lambda p: EXPAND_PROMPT.format(question=p.question, reasoning_record=_with_pages(p.record, p.facts)),
    payload=ExpandPayload, answer=ExpandAnswer, rules=_dict_rules(rules.expand, ExpandAnswer), schema=EXPAND_SCHEMA,
)
GENERATE: LLMTask[GeneratePayload, GenerateAnswer] = LLMTask(
    name="mirag_generate",
    prompt=lambda p: GENERATE_PROMPT.format(question=p.question, reasoning_records=_with_pages("\n".join(p.records), p.facts), n=p.n),
    payload=GeneratePayload, answer=GenerateAnswer, rules=_dict_rules(rules.generate, GenerateAnswer), schema=GENERATE_SCHEMA,
)
RECORD: LLMTask[RecordPayload, RecordAnswer] = LLMTask(
    name="mirag_record", prompt=_record_prompt,
    payload=RecordPayload, answer=RecordAnswer, rules=_dict_rules(rules.record, RecordAnswer), schema=RECORD_SCHEMA,
)

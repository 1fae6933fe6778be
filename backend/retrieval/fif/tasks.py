"""FiF's LLM tasks (appendix D), typed: the planner's initial decomposition, the orchestrator's
action, the document and component traversers, the traversal evaluator, the planner and the
reranker. Offline, each is answered by the rules in rules.py, which read the payload as the
prompt's JSON and return the reply the prompt asks for; the answer models check both.

The rules read a payload as the JSON object the prompt serialises (`model_dump()`), so what a
model is shown and what the rules decide on are the same data.
"""

from __future__ import annotations

from typing import Annotated, Literal

from pydantic import Field

from backend.llm.task import LLMTask, TaskAnswer, TaskPayload
from backend.retrieval.fif import prompts as P
from backend.retrieval.fif import rules
from backend.retrieval.decompose.rules import decompose_answer

DocMode = Literal["neighbors", "vector search", "llm reasoning"]
ComponentMode = Literal["vector search", "llm reasoning"]
Granularity = Literal["document", "component", "subcomponent"]


# ---------------------------------------------------------------- payloads


class SubtaskState(TaskPayload):
    """One subquery as memory shows it: status open | answered | failed, and its answers."""

    index: int
    text: str
    status: str
    depends_on: list[int]
    answer: str | None
    alternatives: list[str]


class DocCandidate(TaskPayload):
    index: int
    filename: str
    title: str
    summary: str
    score: float


class ComponentCandidate(TaskPayload):
    index: int
    filename: str
    title: str
    component_id: str
    text: str
    score: float


class EvidenceCandidate(TaskPayload):
    index: int
    filename: str
    title: str
    component_id: str
    text: str
    links: list[str]
    score: float


class FoundBy(TaskPayload):
    step: int
    subtask: int
    outcome: str
    rank: int


class RerankCandidate(TaskPayload):
    index: int
    filename: str
    component_id: str
    title: str
    text: str
    score: float
    found_by: list[FoundBy]


class RouteModes(TaskPayload):
    """A strategy tuple as the orchestrator prompt names it."""

    document_search_mode: DocMode
    component_search_mode: ComponentMode
    vector_granularity: Granularity


class EvidenceNote(TaskPayload):
    """A unit a hop found, as memory shows it: its document's title, its text, the titles it links to."""

    title: str
    text: str
    links: list[str]


class TraverseRecord(TaskPayload):
    """A TRAVERSE step in the serialised memory: target, route, outcome, what it found."""

    step: int
    action: Literal["traverse"] = "traverse"
    subtask: int
    target: str
    entity: str | None
    anchor: int | None = Field(description="The step whose documents the hop started from.")
    strategy: RouteModes
    outcome: Literal["success", "failure"]
    dead_end: bool
    docs: list[str] = Field(description="Titles of the documents the hop kept.")
    evidence: list[EvidenceNote]
    entities: list[str]
    neighbors: int = Field(description="How many documents neighbour the hop's documents.")


class PlanRecord(TaskPayload):
    """A PLAN step in the serialised memory: the subtasks it added."""

    step: int
    action: Literal["plan"] = "plan"
    tasks: list[str]


MemoryRecord = Annotated[TraverseRecord | PlanRecord, Field(discriminator="action")]


class DecomposePayload(TaskPayload):
    question: str


class OrchestratePayload(TaskPayload):
    query: str
    subtasks: list[SubtaskState]
    memory: list[MemoryRecord]
    neighbor_docs: list[str]
    steps_left: int
    llm_calls_left: int
    replans: int


class SelectDocsPayload(TaskPayload):
    original_query: str
    subtask_query: str
    vector_granularity: Granularity
    candidates: list[DocCandidate]
    max_results: int


class SelectComponentsPayload(TaskPayload):
    original_query: str
    subtask_query: str
    vector_granularity: Granularity
    candidates: list[ComponentCandidate]
    max_results: int


class EvaluatePayload(TaskPayload):
    original_query: str
    subtask_query: str
    subtask_index: int
    entity: str | None
    source_files: list[str]
    subtasks: list[SubtaskState]
    candidates: list[EvidenceCandidate]
    min_coverage: float
    min_score: float


class PlanPayload(TaskPayload):
    query: str
    subtasks: list[SubtaskState]
    memory: list[MemoryRecord]


class RerankPayload(TaskPayload):
    query: str
    candidates: list[RerankCandidate]
    top_k: int
    chain: list[int]
    hop_weight: float


# ---------------------------------------------------------------- answers


class PlannedSubquery(TaskAnswer):
    text: str
    modality: str | None = None
    depends_on: list[int] = Field(default_factory=list)


class DecomposeAnswer(TaskAnswer):
    subqueries: list[PlannedSubquery]
    reason: str = ""


class FiFAction(TaskAnswer):
    """The orchestrator's one action. "search" needs a subtask to act; one without it only
    abandons subquestions (`abandon`)."""

    next_action: Literal["stop", "search", "replan"]
    next_retrieval_subtask: str | None = None
    document_search_mode: DocMode | None = None
    component_search_mode: ComponentMode | None = None
    anchor: int | None = None
    vector_granularity: Granularity | None = None
    subtask_index: int | None = None
    entity: str | None = None
    abandon: list[int] = Field(default_factory=list)
    reason: str | None = None


class OrchestrateAnswer(TaskAnswer):
    action: FiFAction


class Pick(TaskAnswer):
    """One candidate a traverser or the reranker chose (index into its candidate list)."""

    index: int
    filename: str | None = None
    component_id: str | None = None
    score: float = 0.0


class SelectAnswer(TaskAnswer):
    selection: list[Pick]


class SubtaskUpdate(TaskAnswer):
    index: int = Field(description="1-based index of the subtask.")
    status: str = "answerable"
    answer: str
    alternatives: list[str] = Field(default_factory=list)


class EvaluateAnswer(TaskAnswer):
    status: Literal["answerable", "not answerable"]
    updated_subtasks: list[SubtaskUpdate]
    dead_end: bool = False
    evidence: int | None = None
    entities: list[str] = Field(default_factory=list)
    reason: str = ""


class PlanAnswer(TaskAnswer):
    tasks: list[str]
    depends_on: list[list[int]] = Field(default_factory=list)
    answers: list[list[str]] = Field(default_factory=list)
    reason: str = "replanned"


class RerankAnswer(TaskAnswer):
    ranking: list[Pick]


# ---------------------------------------------------------------- tasks


def _prompt_orchestrate(p: OrchestratePayload) -> str:
    d = p.model_dump()
    return P.fill(P.ORCHESTRATOR_PROMPT, query=p.query, serialized_subtasks=d["subtasks"], serialized_memory=d["memory"],
                  neighbor_docs=d["neighbor_docs"])


def _prompt_evaluate(p: EvaluatePayload) -> str:
    d = p.model_dump()
    return P.fill(P.EVALUATOR_PROMPT, original_query=p.original_query, subtask_query=p.subtask_query,
                  candidates=d["candidates"], subtasks=d["subtasks"])


def _dict_rules(fn, answer: type[TaskAnswer]):
    """Rules that read the payload as the prompt's JSON object and return the reply's."""
    return lambda payload: answer.model_validate(fn(payload.model_dump()))


DECOMPOSE: LLMTask[DecomposePayload, DecomposeAnswer] = LLMTask(
    name="fif_decompose",
    prompt=lambda p: P.fill(P.DECOMPOSE_PROMPT, original_query=p.question, memory="[]"),
    payload=DecomposePayload, answer=DecomposeAnswer,
    rules=lambda p: DecomposeAnswer.model_validate(decompose_answer(p.question)),  # LILaC's rules: the same plan offline
    schema=P.DECOMPOSE_SCHEMA,
)
ORCHESTRATE: LLMTask[OrchestratePayload, OrchestrateAnswer] = LLMTask(
    name="fif_orchestrate", prompt=_prompt_orchestrate, payload=OrchestratePayload, answer=OrchestrateAnswer,
    rules=_dict_rules(rules.orchestrate, OrchestrateAnswer), schema=P.ORCHESTRATOR_SCHEMA,
)
SELECT_DOCS: LLMTask[SelectDocsPayload, SelectAnswer] = LLMTask(
    name="fif_select_docs", prompt=lambda p: P.fill(P.DOC_TRAVERSER_PROMPT, **p.model_dump()),
    payload=SelectDocsPayload, answer=SelectAnswer, rules=_dict_rules(rules.select_docs, SelectAnswer),
    schema=P.DOC_TRAVERSER_SCHEMA,
)
SELECT_COMPONENTS: LLMTask[SelectComponentsPayload, SelectAnswer] = LLMTask(
    name="fif_select_components", prompt=lambda p: P.fill(P.COMPONENT_TRAVERSER_PROMPT, **p.model_dump()),
    payload=SelectComponentsPayload, answer=SelectAnswer, rules=_dict_rules(rules.select_components, SelectAnswer),
    schema=P.COMPONENT_TRAVERSER_SCHEMA,
)
EVALUATE: LLMTask[EvaluatePayload, EvaluateAnswer] = LLMTask(
    name="fif_evaluate", prompt=_prompt_evaluate, payload=EvaluatePayload, answer=EvaluateAnswer,
    rules=_dict_rules(rules.evaluate, EvaluateAnswer), schema=P.EVALUATOR_SCHEMA,
)
PLAN: LLMTask[PlanPayload, PlanAnswer] = LLMTask(
    name="fif_plan", prompt=lambda p: P.fill(P.PLANNER_PROMPT, original_query=p.query, memory=p.model_dump()["memory"]),
    payload=PlanPayload, answer=PlanAnswer, rules=_dict_rules(rules.plan, PlanAnswer), schema=P.PLANNER_SCHEMA,
)
RERANK: LLMTask[RerankPayload, RerankAnswer] = LLMTask(
    name="fif_rerank",
    prompt=lambda p: P.fill(P.RERANKER_PROMPT, query=p.query, candidates=p.model_dump()["candidates"], top_k=str(p.top_k)),
    payload=RerankPayload, answer=RerankAnswer, rules=_dict_rules(rules.rerank, RerankAnswer), schema=P.RERANKER_SCHEMA,
)

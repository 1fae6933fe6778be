"""The one query pipeline (retrieve -> pack -> read), the bounds a question is checked against,
and the one wire format of an answer.

`QueryPipeline` runs a question through the stages asked for and a retriever (backend/stages/:
the corpus profile, the question stages, the method, the ranking stages, the scope filter),
HiKEY's token-budget packer and the evidence reader, timing each part, and returns an `AskResult`
(everything the UI shows).
`AskReply` is what leaves the program: `ask --json` prints it (with the trace), the API's `/ask`
returns it (without the trace), and the batch and evaluation predictions write a
`PredictionLine` built from it. Field names are read by other tools (bench/score.py, scripts);
README's "Command line" and "API" sections list them.

Not here: choosing the method, the LLM backend or the workspace (the service does that), what a
retriever does inside (backend/retrieval/), and what a stage does (backend/stages/).
"""

from __future__ import annotations

import time
from collections.abc import Callable, Iterable, Sequence
from dataclasses import dataclass


import numpy as np
from pydantic import Field

from backend.config import ReaderSettings, Settings
from backend.checks import checked_question, checked_top_k  # noqa: F401 (their home before backend/checks.py)
from backend.errors import StrataError
from backend.graph.corpus import Corpus
from backend.llm.base import LLMBackend
from backend.packing import TokenBudgetPacker
from backend.reader import EvidenceReader, subqueries_of
from backend.retrieval.base import Retriever
from backend.stages import SCOPE, SCOPE_WIDEN, Stage, StageContext, is_none, run_stage, select_stages, stages_label
from backend.stages.profile import PLAIN, Profile, choose_profile
from backend.types import (
    Answer,
    AskResult,
    BBox,
    Citation,
    EvidencePack,
    Model,
    NodeId,
    NodeKind,
    ResultItem,
    ScoredNode,
    Trace,
)

StagesSpec = str | Sequence[str] | None  # "default", "none", "a,b" or names (backend/stages/)
QuestionVectors = tuple[np.ndarray, np.ndarray]  # (text encoder, subcomponent encoder) vectors of the question


# ---------------------------------------------------------------- input bounds


MAX_SCOPE = 500  # documents one question may be limited to


def checked_scope(corpus: Corpus, docs: Iterable[str] | None) -> frozenset[str]:
    """The ids of the documents a question is limited to (backend/stages/scope.py), given by file
    name (as the Library lists them) or by id; empty: the whole workspace. A StrataError names any
    the workspace does not hold."""
    names = list(dict.fromkeys(n.strip() for n in (docs or []) if n and n.strip()))
    if not names:
        return frozenset()
    if len(names) > MAX_SCOPE:
        raise StrataError(f"{len(names)} documents were named; a question may be limited to at most {MAX_SCOPE}.")
    by_name = {d.file_name: d.id for d in corpus.documents.values()}
    found = {n: by_name.get(n) or (n if n in corpus.documents else None) for n in names}
    unknown = [n for n, doc in found.items() if doc is None]
    if unknown:
        shown = ", ".join(repr(n) for n in unknown[:5]) + (f" and {len(unknown) - 5} more" if len(unknown) > 5 else "")
        raise StrataError(f"Not in this workspace: {shown}. Name documents by their file name, as the Library lists them.")
    return frozenset(doc for doc in found.values() if doc is not None)


# ---------------------------------------------------------------- the pipeline


def result_item(corpus: Corpus, rank: int, hit: ScoredNode) -> ResultItem:
    node = corpus.nodes[hit.node_id]
    return ResultItem(
        rank=rank, node_id=hit.node_id, doc=corpus.documents[node.doc].file_name, page=node.page, bbox=node.bbox,
        kind=node.kind, section_path=corpus.section_path(hit.node_id), text=node.text, score=hit.score, why=hit.why,
    )


def _ms_since(start: float) -> float:
    return round((time.perf_counter() - start) * 1000, 2)


@dataclass(frozen=True, slots=True)
class QueryPipeline:
    """retrieve -> pack -> read over one loaded corpus with one LLM backend (fresh per question,
    so its usage counts are that question's cost). The retriever is built for the same corpus
    and backend; `question_vectors` encodes a question for the reader's unit scoring and the
    stages (backend/stages/)."""

    corpus: Corpus
    llm: LLMBackend
    count_tokens: Callable[[str], int]
    question_vectors: Callable[[str], QuestionVectors]
    reader: ReaderSettings
    rank_depth: int = 30
    stages: StagesSpec = "default"  # the stages a question runs through when the call names none
    profile: str = "auto"  # the corpus profile (backend/stages/profile.py): auto or a profile name

    def retrieve(self, retriever: Retriever, method: str, question: str, top_k: int, params: dict,
                 scope: frozenset[str] = frozenset(), stages: StagesSpec = None) -> tuple[list[ScoredNode], Trace]:
        """The first top_k results of a ranking `rank_depth` deep (or top_k, when deeper): the
        methods cut their candidate lists, and the stages reorder, at the depth they are asked for,
        so a shorter ranking asked for directly would differ from the head of the longer one
        (bench/RESULTS.md#stages). `stages`: "default", "none" or stage names (backend/stages/;
        None: this pipeline's `stages`); under any but "none" the corpus profile's overrides fill
        the parameters `params` leave unset. `scope`: document ids the results must come from
        (backend/stages/scope.py; empty: the whole workspace). The trace holds the profile, the
        question stages, the method's own steps and the ranking stages, in the order they ran."""
        trace = Trace(method=method, llm_backend=self.llm.name)
        spec = self.stages if stages is None else stages
        selected = select_stages(spec, retriever.follows_references)
        profile = self.profile_for(spec)
        applied = profile.params_for(method, params)
        if profile.chosen_by != "stages":
            trace.add(profile.step(applied))
        depth = max(top_k, self.rank_depth) * (SCOPE_WIDEN if scope else 1)
        context = StageContext(corpus=self.corpus, question=question, top_k=top_k, depth=depth, trace=trace, profile=profile,
                               encode=lambda q: self.question_vectors(q)[0], scope=scope, searched=question)
        for stage in selected:
            if stage.before_retrieval:
                run_stage(stage, context, [])
        hits = retriever.retrieve(context.searched, depth, {**applied, **params}, trace)
        for stage in self._ranking_stages(selected, scope):
            hits = run_stage(stage, context, hits)
        hits = hits[:top_k]
        trace.llm_calls, trace.llm_tokens = self.llm.usage.snapshot()
        trace.notes.extend(n for n in getattr(self.llm.usage, "notes", []) if n not in trace.notes)
        return hits, trace

    def profile_for(self, stages: StagesSpec) -> Profile:
        """The corpus profile a run under `stages` uses: plain under "none", else the one
        `profile` names (auto: chosen by the corpus's traits)."""
        if is_none(stages):
            return Profile(name=PLAIN, chosen_by="stages")
        return choose_profile(self.corpus, self.profile)

    @staticmethod
    def _ranking_stages(selected: Sequence[Stage], scope: frozenset[str]) -> list[Stage]:
        """The selected stages that act on the ranking, and the scope filter when documents are chosen."""
        return [s for s in selected if not s.before_retrieval] + ([SCOPE] if scope else [])

    def pack(self, question: str, hits: list[ScoredNode], budget: int) -> EvidencePack:
        packer = TokenBudgetPacker(self.corpus, self.count_tokens, self.reader.associates_per_anchor)
        return packer.pack(question, hits, budget)

    def read(self, question: str, pack: EvidencePack, trace: Trace | None = None) -> Answer:
        reader = EvidenceReader(self.corpus, self.llm, self.reader.abstain_threshold)
        return reader.read(question, self.question_vectors(question), pack, subqueries_of(trace))

    def run(self, retriever: Retriever, method: str, question: str, top_k: int, params: dict, budget: int,
            scope: frozenset[str] = frozenset(), stages: StagesSpec = None) -> AskResult:
        """The whole question, with the milliseconds of each part in timings_ms."""
        timings: dict[str, float] = {}
        spec = self.stages if stages is None else stages
        selected = select_stages(spec, retriever.follows_references)
        t = time.perf_counter()
        hits, trace = self.retrieve(retriever, method, question, top_k, params, scope, spec)
        timings["retrieve"] = _ms_since(t)
        t = time.perf_counter()
        pack = self.pack(question, hits, budget)
        timings["pack"] = _ms_since(t)
        t = time.perf_counter()
        answer = self.read(question, pack, trace)
        timings["read"] = _ms_since(t)
        timings["total"] = round(sum(timings.values()), 2)
        trace.notes.extend(n for n in getattr(self.llm.usage, "notes", []) if n not in trace.notes)  # the reader's fallbacks too
        return AskResult(
            question=question, method=method, results=[result_item(self.corpus, i + 1, h) for i, h in enumerate(hits)],
            pack=pack, answer=answer, trace=trace, timings_ms=timings, llm_backend=self.llm.name,
            llm_calls=self.llm.usage.calls, llm_tokens=self.llm.usage.tokens, stages=[st.name for st in selected],
            label=stages_label(method, spec, selected), llm_error=llm_failure(self.llm),
        )

    def reread(self, result: AskResult, budget: int) -> AskResult:
        """The same ranked results packed under another budget and read again (results whose
        node is not in this corpus are left out of the pack)."""
        hits = [ScoredNode(node_id=r.node_id, score=r.score, why=r.why) for r in result.results if r.node_id in self.corpus.nodes]
        pack = self.pack(result.question, hits, budget)
        answer = self.read(result.question, pack, result.trace)
        return result.model_copy(update={"pack": pack, "answer": answer, "llm_error": llm_failure(self.llm)})


def llm_failure(llm: LLMBackend) -> str | None:
    """What the user is told when the LLM server failed during a question: its name and why
    (AskResult.llm_error); None when it did not fail."""
    errors = getattr(llm.usage, "errors", [])
    if not errors:
        return None
    return (
        f"The LLM backend {llm.name} failed, so the rules backend answered in its place: {'; '.join(errors[:2])}"
        + (f" (and {len(errors) - 2} more)" if len(errors) > 2 else "")
        + ". Check the server's base URL and model in Settings (Apply checks that it answers)."
    )


# ---------------------------------------------------------------- wire format


class CitedUnit(Model):
    """One citation of an answer: its number in the answer text, the node id, and where it is."""

    n: int = Field(description="The citation's number, as [n] in the answer text.")
    node_id: NodeId
    doc: str = Field(description="File name of the document.")
    page: int = Field(description="1-based page number.")
    bbox: BBox | None = Field(description="x0, y0, x1, y1 in PDF points, top-left origin; None when the unit has no box.")
    kind: NodeKind
    section_path: list[str]
    text: str

    @classmethod
    def of(cls, c: Citation) -> CitedUnit:
        return cls(n=c.n, node_id=c.node_id, doc=c.doc, page=c.page, bbox=c.bbox, kind=c.kind, section_path=c.section_path, text=c.text)


class WireAnswer(Model):
    text: str
    abstained: bool
    citations: list[CitedUnit]

    @classmethod
    def of(cls, a: Answer) -> WireAnswer:
        return cls(text=a.text, abstained=a.abstained, citations=[CitedUnit.of(c) for c in a.citations])


class WireResult(Model):
    """One ranked result."""

    rank: int
    node_id: NodeId
    doc: str = Field(description="File name of the document.")
    page: int = Field(description="1-based page number.")
    bbox: BBox | None
    kind: NodeKind
    section_path: list[str]
    text: str
    score: float

    @classmethod
    def of(cls, r: ResultItem) -> WireResult:
        return cls(
            rank=r.rank, node_id=r.node_id, doc=r.doc, page=r.page, bbox=r.bbox, kind=r.kind, section_path=r.section_path,
            text=r.text, score=r.score,
        )


class AskReply(Model):
    """One answered question as it leaves the program (`ask --json`, `/ask`, predictions)."""

    question: str
    method: str
    answer: WireAnswer
    results: list[WireResult]
    timings_ms: dict[str, float]
    llm_calls: int
    llm_backend: str
    stages: list[str] = Field(default_factory=list, description="The stages the results ran through (README \"Stages\").")
    llm_error: str | None = Field(None, description="Why the LLM server failed during the question (the rules answered in its "
                                  "place); null when it did not fail.")
    trace: Trace | None = Field(None, description="The typed steps of the retrieval; left out by the API.")

    @classmethod
    def of(cls, result: AskResult, with_trace: bool = True) -> AskReply:
        return cls(
            question=result.question, method=result.method, answer=WireAnswer.of(result.answer),
            results=[WireResult.of(r) for r in result.results], timings_ms=result.timings_ms, llm_calls=result.llm_calls,
            llm_backend=result.llm_backend, stages=result.stages, llm_error=result.llm_error,
            trace=result.trace if with_trace else None,
        )

    def to_dict(self) -> dict:
        """JSON-ready; the trace key is absent (not null) when the reply was made without it."""
        return self.model_dump(mode="json", exclude={"trace"} if self.trace is None else None)


class PredictionLine(Model):
    """One line of a predictions file (`ask --questions ... --out`, the evaluator): what
    ../shared/bench/score.py reads (`id`, `results`), plus the answer and its cost (score.py
    ignores the other keys). A question that failed has no results, no answer and its error; a
    question whose LLM server failed has the rules' answer and `llm_error`."""

    id: str
    results: list[WireResult] = Field(default_factory=list)
    answer: WireAnswer | None = None
    timings_ms: dict[str, float] = Field(default_factory=dict)
    llm_calls: int = 0
    error: str | None = None
    llm_error: str | None = Field(None, description="Why the LLM server failed on this question (the rules answered in its place).")

    @classmethod
    def of(cls, qid: str, result: AskResult) -> PredictionLine:
        reply = AskReply.of(result, with_trace=False)
        return cls(id=qid, results=reply.results, answer=reply.answer, timings_ms=reply.timings_ms, llm_calls=reply.llm_calls,
                   llm_error=reply.llm_error)

    def to_json(self) -> str:
        """One JSON line; `error` only on a failed question, `llm_error` only where the LLM server failed."""
        unset = {key for key in ("error", "llm_error") if getattr(self, key) is None}
        return self.model_dump_json(exclude=unset or None)

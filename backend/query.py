"""The one query pipeline (retrieve -> pack -> read), the bounds a question is checked against,
and the one wire format of an answer.

`QueryPipeline` runs a question through a retriever, HiKEY's token-budget packer and the
evidence reader, timing each stage, and returns an `AskResult` (everything the UI shows).
`AskReply` is what leaves the program: `ask --json` prints it (with the trace), the API's `/ask`
returns it (without the trace), and the batch and evaluation predictions write a
`PredictionLine` built from it. Field names are read by other tools (bench/score.py, scripts);
README's "Command line" and "API" sections list them.

Not here: choosing the method, the LLM backend or the workspace (the service does that), and
what a retriever does inside (backend/retrieval/).
"""

from __future__ import annotations

import re
import time
from collections.abc import Callable, Iterable
from dataclasses import dataclass
from typing import Any

import numpy as np
from pydantic import Field

from backend.config import ReaderSettings, Settings
from backend.errors import StrataError
from backend.graph.corpus import Corpus
from backend.llm.base import LLMBackend
from backend.llm.text import content_tokens
from backend.packing import TokenBudgetPacker
from backend.reader import EvidenceReader, subqueries_of
from backend.retrieval.base import Retriever
from backend.retrieval.measures import with_line_items
from backend.retrieval.mentions import near_titles
from backend.retrieval.names import named_documents, named_first
from backend.retrieval.novelty import new_words_first
from backend.retrieval.rows import named_rows_first
from backend.retrieval.quoted import quoted_page_first
from backend.retrieval.references import place_references
from backend.retrieval.scope import SCOPE_WIDEN, within_scope
from backend.retrieval.spread import spread_over_pages
from backend.retrieval.traits import is_long_separate_corpus, is_template_corpus
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

QuestionVectors = tuple[np.ndarray, np.ndarray]  # (text encoder, subcomponent encoder) vectors of the question


# ---------------------------------------------------------------- input bounds


def checked_question(question: str | None, settings: Settings) -> str:
    """The question stripped, or a StrataError when it is empty or longer than settings.max_question_chars."""
    text = (question or "").strip()
    if not text:
        raise StrataError("The question is empty. Type a question about your documents.")
    limit = settings.max_question_chars
    if len(text) > limit:
        raise StrataError(
            f"The question is {len(text):,} characters long; at most {limit:,} are accepted. "
            "Ask the question itself and leave out pasted text (the limit is STRATA_MAX_QUESTION_CHARS)."
        )
    return text


def checked_top_k(top_k: Any, settings: Settings) -> int:
    """top_k as an int (None = settings.retrieval.top_k), or a StrataError when it is not a whole
    number between 1 and settings.max_top_k."""
    if top_k is None:
        top_k = settings.retrieval.top_k
    limit = settings.max_top_k
    try:
        value = int(top_k)
        whole = not isinstance(top_k, bool) and value == float(top_k)
    except (TypeError, ValueError, OverflowError):
        whole = False
    if not whole or not 1 <= value <= limit:
        raise StrataError(
            f"top_k must be a whole number between 1 and {limit}; got {top_k!r}. "
            f"Ask for 1 to {limit} results (the upper limit is STRATA_MAX_TOP_K)."
        )
    return value


MAX_SCOPE = 500  # documents one question may be limited to


def checked_scope(corpus: Corpus, docs: Iterable[str] | None) -> frozenset[str]:
    """The ids of the documents a question is limited to (backend/retrieval/scope.py), given by file
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


def spelt_as_titles(corpus: Corpus, question: str, trace: Trace) -> str:
    """The question with each mistyped word of a title spelt as the title writes it
    (mentions.NearTitles: "hree Men on a Horse" -> "Three Men on a Horse"), so that every signal of a
    structure-aware method, and the title hops, read the name the user meant. A word counts as
    mistyped only when no unit of the corpus writes it. The trace says what was read."""
    lexical = corpus.layers["components"].lexical
    fixes = near_titles(corpus).corrections(question, lambda w: len(lexical.query_tokens(w)) == len(content_tokens(w)))
    for written, titled in fixes:
        question = re.sub(rf"(?<!\w){re.escape(written)}(?!\w)", titled, question, count=1)
    if fixes:
        read = ", ".join(f'"{w}" as "{t}"' for w, t in fixes)
        trace.notes.append(f"Read {read}: the question names a title of the corpus but for that word, which no unit writes.")
    return question


def _ms_since(start: float) -> float:
    return round((time.perf_counter() - start) * 1000, 2)


@dataclass(frozen=True, slots=True)
class QueryPipeline:
    """retrieve -> pack -> read over one loaded corpus with one LLM backend (fresh per question,
    so its usage counts are that question's cost). The retriever is built for the same corpus
    and backend; `question_vectors` encodes a question for the reader's unit scoring."""

    corpus: Corpus
    llm: LLMBackend
    count_tokens: Callable[[str], int]
    question_vectors: Callable[[str], QuestionVectors]
    reader: ReaderSettings
    rank_depth: int = 30

    def retrieve(self, retriever: Retriever, method: str, question: str, top_k: int, params: dict,
                 scope: frozenset[str] = frozenset()) -> tuple[list[ScoredNode], Trace]:
        """The first top_k results of a ranking `rank_depth` deep (or top_k, when deeper): the
        methods cut their candidate lists, the named documents and the references reorder, at the
        depth they are asked for, so a shorter ranking asked for directly would differ from the
        head of the longer one (dev-docugami-10q: strata's check R@5 was 0.924 at top_k 10 against
        1.000 for the first 10 of 30). `scope`: document ids the results must come from
        (backend/retrieval/scope.py; empty: the whole workspace)."""
        trace = Trace(method=method, llm_backend=self.llm.name)
        depth = max(top_k, self.rank_depth) * (SCOPE_WIDEN if scope else 1)
        searched = question
        if retriever.follows_references:
            question = spelt_as_titles(self.corpus, question, trace)
            searched = with_line_items(self.corpus, question, trace)  # the question's words, and a named ratio's items
        hits = retriever.retrieve(searched, depth, params, trace)
        if retriever.follows_references:
            hits = new_words_first(self.corpus, question, hits, trace)
            template, long_separate = is_template_corpus(self.corpus), is_long_separate_corpus(self.corpus)
            named = named_documents(self.corpus, question) if template or long_separate else ({}, set())
            hits = named_rows_first(self.corpus, searched, hits, trace, frozenset(named[1]))
            hits = quoted_page_first(self.corpus, question, hits, trace)
            hits = spread_over_pages(self.corpus, hits, top_k, trace)
            if template:
                hits = named_first(self.corpus, question, hits, trace, named=named)
            elif long_separate:
                hits = named_first(self.corpus, question, hits, trace, "Long documents that do not lead to one another", named)
            hits = place_references(self.corpus, question, hits, depth, trace, lambda: self.question_vectors(question)[0])
        if scope:
            hits = within_scope(self.corpus, hits, scope, question, self.question_vectors(question)[0], top_k, trace)
        hits = hits[:top_k]
        trace.llm_calls, trace.llm_tokens = self.llm.usage.snapshot()
        trace.notes.extend(n for n in getattr(self.llm.usage, "notes", []) if n not in trace.notes)
        return hits, trace

    def pack(self, question: str, hits: list[ScoredNode], budget: int) -> EvidencePack:
        packer = TokenBudgetPacker(self.corpus, self.count_tokens, self.reader.associates_per_anchor)
        return packer.pack(question, hits, budget)

    def read(self, question: str, pack: EvidencePack, trace: Trace | None = None) -> Answer:
        reader = EvidenceReader(self.corpus, self.llm, self.reader.abstain_threshold)
        return reader.read(question, self.question_vectors(question), pack, subqueries_of(trace))

    def run(self, retriever: Retriever, method: str, question: str, top_k: int, params: dict, budget: int,
            scope: frozenset[str] = frozenset()) -> AskResult:
        """The whole question, with the milliseconds of each stage in timings_ms."""
        timings: dict[str, float] = {}
        t = time.perf_counter()
        hits, trace = self.retrieve(retriever, method, question, top_k, params, scope)
        timings["retrieve"] = _ms_since(t)
        t = time.perf_counter()
        pack = self.pack(question, hits, budget)
        timings["pack"] = _ms_since(t)
        t = time.perf_counter()
        answer = self.read(question, pack, trace)
        timings["read"] = _ms_since(t)
        timings["total"] = round(sum(timings.values()), 2)
        return AskResult(
            question=question, method=method, results=[result_item(self.corpus, i + 1, h) for i, h in enumerate(hits)],
            pack=pack, answer=answer, trace=trace, timings_ms=timings, llm_backend=self.llm.name,
            llm_calls=self.llm.usage.calls, llm_tokens=self.llm.usage.tokens,
        )

    def reread(self, result: AskResult, budget: int) -> AskResult:
        """The same ranked results packed under another budget and read again (results whose
        node is not in this corpus are left out of the pack)."""
        hits = [ScoredNode(node_id=r.node_id, score=r.score, why=r.why) for r in result.results if r.node_id in self.corpus.nodes]
        pack = self.pack(result.question, hits, budget)
        return result.model_copy(update={"pack": pack, "answer": self.read(result.question, pack, result.trace)})


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
    trace: Trace | None = Field(None, description="The typed steps of the retrieval; left out by the API.")

    @classmethod
    def of(cls, result: AskResult, with_trace: bool = True) -> AskReply:
        return cls(
            question=result.question, method=result.method, answer=WireAnswer.of(result.answer),
            results=[WireResult.of(r) for r in result.results], timings_ms=result.timings_ms, llm_calls=result.llm_calls,
            llm_backend=result.llm_backend, trace=result.trace if with_trace else None,
        )

    def to_dict(self) -> dict:
        """JSON-ready; the trace key is absent (not null) when the reply was made without it."""
        return self.model_dump(mode="json", exclude={"trace"} if self.trace is None else None)


class PredictionLine(Model):
    """One line of a predictions file (`ask --questions ... --out`, the evaluator): what
    ../shared/bench/score.py reads (`id`, `results`), plus the answer and its cost. A question
    that failed has no results, no answer and its error."""

    id: str
    results: list[WireResult] = Field(default_factory=list)
    answer: WireAnswer | None = None
    timings_ms: dict[str, float] = Field(default_factory=dict)
    llm_calls: int = 0
    error: str | None = None

    @classmethod
    def of(cls, qid: str, result: AskResult) -> PredictionLine:
        reply = AskReply.of(result, with_trace=False)
        return cls(id=qid, results=reply.results, answer=reply.answer, timings_ms=reply.timings_ms, llm_calls=reply.llm_calls)

    def to_json(self) -> str:
        """One JSON line; `error` only on a failed question."""
        return self.model_dump_json(exclude={"error"} if self.error is None else None)

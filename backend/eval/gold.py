"""Gold evidence of benchmark questions, and hit/miss matching of ranked results against it.

Matching follows ../shared/bench/score.py exactly: a result hits a gold item when its document
file name matches (any folder part dropped) and its page matches, or the gold page is null
(document-level gold). For the ranked metrics, results are first reduced to distinct
(doc, page) pages keeping the first occurrence, so @k means k pages whatever the unit size.

score.py stays the referee of the figures a report quotes; the per-question figures here feed
the Compare tab's hit/miss marks and the Evaluate tab's tables and breakdowns (a test checks that
they agree with score.py). This module does not read PDFs, retrieve, or aggregate across questions.
"""

from __future__ import annotations

import json
import re
import string
from collections.abc import Iterable, Sequence
from dataclasses import dataclass
from pathlib import Path, PurePosixPath
from typing import Any, Protocol

from pydantic import BaseModel, ConfigDict, Field, ValidationError

from backend.errors import StrataError

KS = (1, 5, 10)
K_MAX = max(KS)
# The phrases score.py counts as an abstention in an answer's text.
ABSTAIN_PHRASES = ("not answerable", "not enough information", "cannot be determined")
Page = tuple[str, int | None]  # (file name, 1-based page or None for document-level gold)


class PagedResult(Protocol):
    """Anything ranked that names a document and a page (ResultItem, Citation)."""

    doc: str
    page: int | None


def doc_name(doc: str) -> str:
    """The file name of a document reference ('corpus/a.pdf' and 'a.pdf' are the same document)."""
    return PurePosixPath(str(doc).replace("\\", "/")).name


class GoldRef(BaseModel):
    """One gold evidence item: a document, and a page in it (None = anywhere in the document)."""

    # The bench format carries bbox/text/hop and more on each gold item; only doc and page decide a hit.
    model_config = ConfigDict(extra="ignore", frozen=True)

    doc: str
    page: int | None = Field(None, ge=1)

    def matches(self, doc: str, page: int | None) -> bool:
        return doc_name(doc) == doc_name(self.doc) and (self.page is None or page == self.page)

    def label(self) -> str:
        return doc_name(self.doc) + (f" p.{self.page}" if self.page is not None else " (any page)")


class BenchQuestion(BaseModel):
    """One line of a collection's questions.jsonl (fields the UI and the runner use)."""

    model_config = ConfigDict(extra="ignore")  # answer_format ... are not needed here

    id: str
    question: str
    answers: list[str] = Field(default_factory=list)
    unanswerable: bool = False
    gold: list[GoldRef] = Field(default_factory=list)
    modality: str | None = None
    hops: int | None = None
    source: str = ""
    meta: dict[str, Any] = Field(default_factory=dict)

    @property
    def doc_scope(self) -> list[str]:
        """The documents the original task gives with the question (`meta.doc_scope`, in
        benchmarks whose questions are asked of one report), as file names; empty when it gives none."""
        scope = self.meta.get("doc_scope")
        return [d for d in scope if isinstance(d, str)] if isinstance(scope, list) else []

    @property
    def scored(self) -> bool:
        """Counts in the retrieval metrics: answerable and with gold evidence (as in score.py)."""
        return bool(self.gold) and not self.unanswerable


@dataclass(frozen=True, slots=True)
class RetrievalScores:
    """score.py's per-question retrieval figures (page level, after de-duplication)."""

    recall: dict[int, float]  # k -> fraction of gold pages found in the top k pages
    mrr: float  # 1 / rank of the first hit within the top K_MAX pages
    all_found: float  # 1.0 when every gold page is in the top K_MAX pages
    doc_recall: float  # fraction of gold documents among the documents of the top K_MAX pages


def load_questions(bench: Path, limit: int | None = None) -> list[BenchQuestion]:
    """The questions of one collection folder, in file order (the first `limit` when given)."""
    path = Path(bench) / "questions.jsonl"
    if not path.is_file():
        raise StrataError(f"No questions.jsonl in '{bench}'. A benchmark folder holds corpus/*.pdf and questions.jsonl.")
    questions: list[BenchQuestion] = []
    with path.open(encoding="utf-8") as f:
        for line_no, line in enumerate(f, 1):
            if not line.strip():
                continue
            try:
                questions.append(BenchQuestion.model_validate(json.loads(line)))
            except (json.JSONDecodeError, ValidationError) as exc:
                first = str(exc).splitlines()[0]
                raise StrataError(f"{path.name} line {line_no} is not a benchmark question ({first}). Fix or remove that line.") from None
            if limit and len(questions) >= limit:
                break
    return questions


_PAGE_SUFFIX = re.compile(r"^(?P<doc>.+?)(?:\s*(?:[:#,]|\bp\.?|\bpage)\s*(?P<page>\d+))?\s*$", re.IGNORECASE)


def parse_gold(text: str) -> list[GoldRef]:
    """Gold evidence typed or pasted by a person: one item per line or separated by ';'.

    Accepted items: `report.pdf p.3`, `report.pdf page 3`, `report.pdf:3`, `report.pdf#3`,
    `report.pdf` (document-level), or a JSON list of {"doc": ..., "page": ...} objects (the
    `gold` field of a questions.jsonl line)."""
    text = (text or "").strip()
    if not text:
        return []
    if text.startswith("["):
        try:
            items = json.loads(text)
            return [GoldRef.model_validate(item) for item in items]
        except (json.JSONDecodeError, ValidationError, TypeError) as exc:
            first = str(exc).splitlines()[0]
            raise StrataError(f"The gold evidence is not a JSON list of {{\"doc\", \"page\"}} objects ({first}).") from None
    gold: list[GoldRef] = []
    for item in re.split(r"[;\n]", text):
        item = item.strip()
        if not item:
            continue
        match = _PAGE_SUFFIX.match(item)
        doc = match.group("doc").strip() if match else ""
        if not doc.lower().endswith(".pdf"):
            raise StrataError(
                f"Gold item '{item}' does not name a PDF. Write it as 'file.pdf p.3' (or 'file.pdf' for any page), one per line."
            )
        page = int(match.group("page")) if match.group("page") else None
        if page is not None and page < 1:
            raise StrataError(f"Gold item '{item}' has page {page}; pages count from 1.")
        gold.append(GoldRef(doc=doc, page=page))
    return gold


def result_hits(results: Sequence[PagedResult], gold: Sequence[GoldRef]) -> list[bool]:
    """For each ranked result (not de-duplicated): does it land on a gold page?"""
    return [any(g.matches(r.doc, r.page) for g in gold) for r in results]


def ranked_pages(results: Iterable[PagedResult]) -> list[Page]:
    """Distinct (file name, page) pairs in rank order, first occurrence kept (score.py's dedup)."""
    out: list[Page] = []
    seen: set[Page] = set()
    for r in results:
        if not r.doc:
            continue
        key = (doc_name(r.doc), r.page)
        if key not in seen:
            seen.add(key)
            out.append(key)
    return out


def gold_pages(gold: Sequence[GoldRef]) -> list[Page]:
    """Distinct gold pages; a gold page counts once however many items point at it."""
    return sorted({(doc_name(g.doc), g.page) for g in gold}, key=lambda u: (u[0], u[1] or 0))


def score_question(results: Sequence[PagedResult], gold: Sequence[GoldRef]) -> RetrievalScores | None:
    """score.py's retrieval figures for one question, or None when it has no gold to score."""
    units = gold_pages(gold)
    if not units:
        return None
    ranked = ranked_pages(results)[:K_MAX]

    def found(unit: Page, prefix: list[Page]) -> bool:
        doc, page = unit
        return any(d == doc and (page is None or p == page) for d, p in prefix)

    recall = {k: sum(found(u, ranked[:k]) for u in units) / len(units) for k in KS}
    mrr = 0.0
    for rank, (doc, page) in enumerate(ranked, 1):
        if any(doc == gold_doc and (gold_page is None or page == gold_page) for gold_doc, gold_page in units):
            mrr = 1.0 / rank
            break
    gold_docs = {d for d, _ in units}
    return RetrievalScores(
        recall=recall,
        mrr=mrr,
        all_found=float(all(found(u, ranked) for u in units)),
        doc_recall=len(gold_docs & {d for d, _ in ranked}) / len(gold_docs),
    )


def is_abstention(text: str | None, abstained: bool = False) -> bool:
    """score.py's abstention test on an answer: flagged, empty, or saying it cannot answer."""
    if abstained or text is None or not str(text).strip():
        return True
    low = str(text).lower()
    return any(phrase in low for phrase in ABSTAIN_PHRASES)


_ARTICLES = re.compile(r"\b(a|an|the)\b")
_PUNCT = set(string.punctuation) | set("‘’“”–—…")


def normalize_answer(text: str) -> str:
    """score.py's answer normalisation: lowercase, punctuation to spaces, articles dropped, spaces squeezed."""
    text = "".join(" " if ch in _PUNCT else ch for ch in str(text).lower())
    return " ".join(_ARTICLES.sub(" ", text).split())


def token_f1(pred: str, gold: str) -> float:
    """Token-overlap F1 of two normalised answers (score.py's F1)."""
    p, g = normalize_answer(pred).split(), normalize_answer(gold).split()
    if not p or not g:
        return float(p == g)
    left = dict.fromkeys(p, 0)
    for t in p:
        left[t] += 1
    overlap = 0
    for t in g:
        if left.get(t, 0) > 0:
            overlap += 1
            left[t] -= 1
    if overlap == 0:
        return 0.0
    precision, recall = overlap / len(p), overlap / len(g)
    return 2 * precision * recall / (precision + recall)


def answer_scores(text: str | None, abstained: bool, references: Sequence[str]) -> tuple[float, float] | None:
    """(exact match, token F1) of an answer against the best reference, as score.py scores it (an
    abstention scores 0); None for a question without reference answers."""
    if not references:
        return None
    if text is None or is_abstention(text, abstained):
        return 0.0, 0.0
    em = max(float(normalize_answer(text) == normalize_answer(r)) for r in references)
    return em, max(token_f1(text, r) for r in references)

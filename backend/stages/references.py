"""Stage `references`: pages and labelled units a question names: "on page 17", "slides 51-53",
"the second page", "Figure 3", "Table 2", "the first figure of the paper".

A question that names where its evidence is has said more than any similarity score can: a
figure question ("How many people with scarf are there in Page 5?") shares no words with a page
that is mostly a photo. Questions about long reports and slide decks often do.

A page number is read two ways, and both pages are placed: the page's position in the file
(what a PDF viewer shows) and its printed number (the folio in the margin, the layout stage's
page-number blocks and running headers; fitted per document by
`backend.ingest.layout.printed_page_map`, Corpus.printed_pages). A journal paper printed as pages 6981-6994 and a manual whose page "28" is the file's 29th
page both resolve.

Where it acts (backend/stages/__init__.py, the last ranking stage before the scope filter; on
every corpus): the documents are the method's own, in the order of its results. Each of the first REFERENCE_DOCS documents
that has the named page or unit gives one anchor per named page (its best-ranked unit on that
page, else the page's unit nearest the question) and the named units themselves, placed ahead
of the strategy's order. A question that names only a page ("How many colors are in the slide
14?") ranks its document weakly, hence more than one. The reader then counts the words that
name the page as covered by the units on it (backend/reader/).
"""

from __future__ import annotations

import functools
import re
from collections.abc import Callable
from dataclasses import dataclass

import numpy as np

from backend.types import NodeKind, RankStep, ScoredNode, Trace

MAX_RANGE = 10  # "pages 400-640" names a part of a book, not places to look first
MAX_ANCHORS = 6  # a range of three pages read both ways
REFERENCE_DOCS = 3  # ranked documents searched for the named pages (bench/RESULTS.md#stages)

_NUM = r"(\d{1,5})"
PAGE_RE = re.compile(
    rf"\b(?:pages?|slides?|pp?\.)\s*{_NUM}(?:\s*(?:-|–|to|through)\s*{_NUM})?(?:\s*(?:and|&|,)\s*{_NUM})?\b", re.IGNORECASE
)
ORDINALS = {"first": 1, "second": 2, "third": 3, "fourth": 4, "fifth": 5, "sixth": 6, "seventh": 7, "eighth": 8,
            "ninth": 9, "tenth": 10, "last": -1}
_ORD = "|".join(ORDINALS)
ORDINAL_PAGE_RE = re.compile(rf"\b({_ORD}|\d{{1,4}}(?:st|nd|rd|th))\s+(page|slide)\b", re.IGNORECASE)
LABEL_RE = re.compile(r"\b(figure|fig\.|table|tab\.)\s*(\d{1,3}[a-z]?)\b", re.IGNORECASE)
# "the first figure of the paper", "in the last table?"; not "the first figure skater" (a compound noun)
ORDINAL_UNIT_RE = re.compile(
    rf"\b({_ORD})\s+(figure|table)(?=\s*(?:$|[?.,;:!)]|(?:of|in|on|at|from|that|which|where|shown|above|below)\b))", re.IGNORECASE
)
LABEL_TEXT_RE = re.compile(r"^\s*(fig(?:ure)?|tab(?:le)?)\.?\s*(\d{1,3}[a-z]?)\b", re.IGNORECASE)


@dataclass(frozen=True, slots=True)
class References:
    """What a question names, in the order it names it."""

    pages: tuple[int, ...] = ()  # "page 17" -> 17, "pages 51-53" -> 51, 52, 53 (position or printed number)
    positions: tuple[int, ...] = ()  # "the second page" -> 2, "the last slide" -> -1 (position only)
    labels: tuple[tuple[str, str], ...] = ()  # "Figure 3" -> ("figure", "3")
    nth_units: tuple[tuple[str, int], ...] = ()  # "the first figure" -> ("figure", 1)

    def __bool__(self) -> bool:
        return bool(self.pages or self.positions or self.labels or self.nth_units)


def _kind(word: str) -> str:
    return "figure" if word.lower().startswith("fig") else "table"


def _ordinal_value(word: str) -> int:
    """"second" -> 2, "12th" -> 12, "last" -> -1."""
    word = word.lower()
    return ORDINALS[word] if word in ORDINALS else int(word[:-2])


def question_references(question: str) -> References:
    pages: list[int] = []
    for m in PAGE_RE.finditer(question):
        a, b, c = (int(g) if g else None for g in m.groups())
        if b is not None and b >= a:
            if b - a < MAX_RANGE:
                pages.extend(range(a, b + 1))
        else:
            pages.append(a)
        if c is not None:
            pages.append(c)
    positions = [_ordinal_value(m.group(1)) for m in ORDINAL_PAGE_RE.finditer(question)]
    labels = [(_kind(m.group(1)), m.group(2).lower()) for m in LABEL_RE.finditer(question)]
    nth = [(_kind(m.group(2)), ORDINALS[m.group(1).lower()]) for m in ORDINAL_UNIT_RE.finditer(question)]
    return References(tuple(dict.fromkeys(p for p in pages if p > 0)), tuple(dict.fromkeys(positions)),
                      tuple(dict.fromkeys(labels)), tuple(dict.fromkeys(nth)))


def unit_label(text: str | None) -> tuple[str, str] | None:
    """("figure", "3b") for a unit labelled "Figure 3b" / "Fig. 3b:" ..., else None."""
    m = LABEL_TEXT_RE.match(text or "")
    return (_kind(m.group(1)), m.group(2).lower()) if m else None


# ---------------------------------------------------------------- placing them


def _doc_pages(corpus, doc_id: str, refs: References) -> list[tuple[int, str]]:
    """(position, why) of the pages `refs` names in one document, in the question's order."""
    n_pages = corpus.documents[doc_id].pages
    printed = corpus.printed_pages.get(doc_id, {})
    out: list[tuple[int, str]] = []
    for n in refs.pages:
        if 1 <= n <= n_pages:
            out.append((n, f"page {n} named in the question (its position in the file)"))
        for p in printed.get(n, ()):
            out.append((p, f"page {n} named in the question (printed number of the file's page {p})"))
    for k in refs.positions:
        p = n_pages if k == -1 else k
        if 1 <= p <= n_pages:
            out.append((p, f"the {_ordinal(k)} page named in the question"))
    return out


def _ordinal(k: int) -> str:
    """2 -> "second", 12 -> "12th", -1 -> "last"."""
    word = next((w for w, v in ORDINALS.items() if v == k), None)
    if word is not None:
        return word
    suffix = "th" if 10 <= k % 100 <= 20 else {1: "st", 2: "nd", 3: "rd"}.get(k % 10, "th")
    return f"{k}{suffix}"


def _doc_units(corpus, doc_id: str, refs: References) -> list[tuple[str, str]]:
    """(component id, why) of the labelled units `refs` names in one document."""
    if not refs.labels and not refs.nth_units:
        return []
    comps = sorted((corpus.nodes[c] for c in corpus.components_by_doc.get(doc_id, [])), key=lambda n: n.order)
    by_label: dict[tuple[str, str], str] = {}
    for n in comps:
        lab = unit_label(n.label)
        if lab is not None:
            by_label.setdefault(lab, n.id)
    out: list[tuple[str, str]] = []
    for lab in refs.labels:
        if lab in by_label:
            out.append((by_label[lab], f"{lab[0].title()} {lab[1]} named in the question"))
    for kind, k in refs.nth_units:
        # "the first figure" is Figure 1 when the document numbers its figures, else the first in reading order
        if k > 0 and (kind, str(k)) in by_label:
            out.append((by_label[(kind, str(k))], f"the {_ordinal(k)} {kind} named in the question ({kind.title()} {k})"))
            continue
        node_kind = NodeKind.FIGURE if kind == "figure" else NodeKind.TABLE
        units = [n for n in comps if n.kind == node_kind]
        if units and (k == -1 or k <= len(units)):
            out.append((units[k - 1 if k > 0 else -1].id, f"the {_ordinal(k)} {kind} named in the question (reading order)"))
    return out


def reference_words(question: str) -> str:
    """The words of the question that name places ("page 104", "the second page", "Figure 3"),
    joined: what a unit on a named page covers of the question (backend/reader/)."""
    spans = [m.group(0) for rx in (PAGE_RE, ORDINAL_PAGE_RE, LABEL_RE, ORDINAL_UNIT_RE) for m in rx.finditer(question)]
    return " ".join(spans)


def named_in(corpus, doc_id: str, refs: References) -> tuple[set[int], set[str]]:
    """(pages, component ids) of one document that `refs` names."""
    return {p for p, _ in _doc_pages(corpus, doc_id, refs)}, {u for u, _ in _doc_units(corpus, doc_id, refs)}


def _page_anchor(corpus, doc_id: str, page: int, rank_of: dict[str, int], question_vector: Callable[[], np.ndarray] | None) -> str | None:
    """The unit to stand for a named page: the strategy's best-ranked unit on it, else the page's
    component nearest the question, else its first in reading order."""
    on_page = [c for c in corpus.components_by_doc.get(doc_id, []) if corpus.nodes.page_of(c) == page]
    if not on_page:
        return None
    ranked = [c for c in on_page if c in rank_of]
    if ranked:
        return min(ranked, key=rank_of.__getitem__)
    dense = corpus.layers["components"].dense
    rows = [dense.row[c] for c in on_page if c in dense.row]
    if question_vector is not None and rows:
        sims = dense.scores_of(np.asarray(rows), question_vector())
        return dense.ids[rows[int(np.argmax(sims))]]
    return min(on_page, key=corpus.nodes.order_of)


def place_references(corpus, question: str, hits: list[ScoredNode], top_k: int, trace: Trace,
                     question_vector: Callable[[], np.ndarray] | None = None) -> list[ScoredNode]:
    """`hits` with the pages and units the question names placed first (see the module
    docstring); unchanged when the question names none, or none the ranked documents have.
    question_vector: the question in the components' space, asked for only when a named page
    has no ranked unit."""
    refs = question_references(question)
    if not refs or not hits:
        return hits
    rank_of = {h.node_id: i for i, h in enumerate(hits)}
    if question_vector is not None:
        question_vector = functools.cache(question_vector)  # encoded once, for all the named pages
    doc_order = list(dict.fromkeys(corpus.nodes.doc_of(h.node_id) for h in hits if h.node_id in corpus.nodes))
    anchors: dict[str, str] = {}  # unit -> why; the first mention wins
    docs: list[str] = []
    for doc_id in doc_order:
        found = list(_doc_units(corpus, doc_id, refs))
        for page, why in _doc_pages(corpus, doc_id, refs):
            a = _page_anchor(corpus, doc_id, page, rank_of, question_vector)
            if a is not None:
                found.append((a, why))
        if found:
            docs.append(doc_id)
            for a, why in found:
                anchors.setdefault(a, why)
        if len(docs) == REFERENCE_DOCS:
            break
    if not anchors:
        return hits
    top = hits[0].score
    placed = [ScoredNode(node_id=a, score=top, why=why) for a, why in list(anchors.items())[:MAX_ANCHORS]]
    kept = {p.node_id for p in placed}
    out = (placed + [h for h in hits if h.node_id not in kept])[:top_k]
    names = ", ".join(corpus.documents[d].file_name for d in docs)
    trace.add(RankStep(label=f"Pages and units the question names, in {names}", index="references", candidates=placed))
    trace.notes.append(
        f"The question names {_describe(refs)}: {len(placed)} unit(s) of {names} placed first (the first "
        f"{REFERENCE_DOCS} ranked document(s) that have them; a page number is read as the position in the file and as the printed number)."
    )
    return out


def _describe(refs: References) -> str:
    parts = [f"page {p}" for p in refs.pages] + [f"the {_ordinal(k)} page" for k in refs.positions]
    parts += [f"{k.title()} {n}" for k, n in refs.labels] + [f"the {_ordinal(k)} {kind}" for kind, k in refs.nth_units]
    return ", ".join(parts)


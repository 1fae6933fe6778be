"""Stage `statements`: the financial statement a question names. "Using the cash flow statement,
what is General Mills' FY2020 free cash flow?" is asked of the page that prints General Mills'
consolidated statement of cash flows, whatever other pages of the filing say about cash.

An analyst names the statement by its common name ("balance sheet", "P&L", "cash flow
statement"); the filing heads it with its formal one ("CONSOLIDATED STATEMENTS OF FINANCIAL
POSITION", "Consolidated Statements of Operations"). Neither a bag of words nor a vector ties
the two, and the statement's rows ("Purchases of property, plant and equipment") share few words
with the question. The structure does: a statement is a section whose heading is a statement's
title and that holds a table. STATEMENTS lists the three primary statements, what questions call
them and the titles filings give them (textbook names, not fitted to a collection).

Where it acts (backend/stages/__init__.py, after the documents the question names go first; every
corpus): when the question names a statement, the pages of that statement in the documents the
question names most (names.naming_strength), or else in the document of the method's first
result, go first: the statement's tables and rows join the hits where the method did not rank
them. A document holds a statement's page when a section headed by its title holds a table of
MIN_STATEMENT_ROWS rows or more (the statement itself, not a note that names it); of several,
the one with the most rows first, at most PAGES_PER_STATEMENT of them.
"""

from __future__ import annotations

import re
from collections import defaultdict

from backend.types import NodeKind, RankStep, ScoredNode, Trace

MIN_STATEMENT_ROWS = 8
PAGES_PER_STATEMENT = 2
# (statement, what a question calls it, how a filing titles it)
STATEMENTS: tuple[tuple[str, str, str], ...] = (
    ("balance sheet",
     r"balance sheets?|statements? of (?:consolidated )?financial (?:position|condition)|financial position",
     r"balance sheets?|statements? of (?:consolidated )?financial (?:position|condition)"),
    ("cash flow statement",
     r"cash[- ]?flows? statements?|statements? of (?:consolidated )?cash[- ]?flows?",
     r"statements? of (?:consolidated )?cash[- ]?flows?|cash[- ]?flows? statements?"),
    ("income statement",
     r"income statements?|p\s?&\s?l\b|profit (?:and|&) loss|statements? of (?:consolidated )?(?:comprehensive )?"
     r"(?:income|operations|earnings)",
     r"statements? of (?:consolidated )?(?:income|operations|earnings)|income statements?|profit (?:and|&) loss"),
)
_ASKED = tuple((name, re.compile(rf"\b(?:{asked})", re.IGNORECASE)) for name, asked, _ in STATEMENTS)
_TITLED = tuple((name, re.compile(rf"\b(?:{titled})", re.IGNORECASE)) for name, _, titled in STATEMENTS)
_NOT_PRIMARY = re.compile(r"\b(?:reconciliation|supplemental|obligor|parent company|guarantor|segment)", re.IGNORECASE)


def named_statements(question: str) -> list[str]:
    """The statements the question names, in the order of STATEMENTS."""
    return [name for name, pattern in _ASKED if pattern.search(question)]


def statement_pages(corpus) -> dict[tuple[str, str], list[int]]:
    """(document id, statement) -> the pages that print it, the one with the most table rows
    first (built once per corpus)."""
    return corpus.derived(_statement_pages)


def _statement_pages(corpus) -> dict[tuple[str, str], list[int]]:
    titled: dict[str, str] = {}
    for sec in corpus.sections.values():
        title = sec.path[-1] if sec.path else ""
        if len(title) > 160 or _NOT_PRIMARY.search(title):
            continue
        for name, pattern in _TITLED:
            if pattern.search(title):
                titled[sec.id] = name
                break
    rows: dict[tuple[str, str, int], int] = defaultdict(int)
    nodes = corpus.nodes
    for node_id in corpus.layers["components"].ids:
        if nodes.kind_of(node_id) != NodeKind.TABLE:
            continue
        name = titled.get(nodes.section_of(node_id) or "")
        if name is not None:
            rows[(nodes.doc_of(node_id), name, nodes.page_of(node_id))] += len(corpus.subcomponents(node_id))
    out: dict[tuple[str, str], list[tuple[int, int]]] = defaultdict(list)
    for (doc, name, page), n in rows.items():
        if n >= MIN_STATEMENT_ROWS:
            out[(doc, name)].append((n, page))
    return {key: [p for _, p in sorted(pages, key=lambda x: (-x[0], x[1]))][:PAGES_PER_STATEMENT] for key, pages in out.items()}


def statement_first(corpus, question: str, hits: list[ScoredNode], trace: Trace,
                    strength: dict[str, tuple[int, int, int]]) -> list[ScoredNode]:
    """`hits` with the units of the pages of the statements the question names first (see the
    module's docstring); unchanged when it names none or no such page is found. `strength`: the
    documents the question names and how strongly (names.naming_strength)."""
    asked = named_statements(question)
    if not asked or not hits:
        return hits
    nodes = corpus.nodes
    if strength:
        top = max(strength.values())
        docs = sorted(d for d, s in strength.items() if s == top)
    else:
        docs = [nodes.doc_of(hits[0].node_id)]
    by_doc = statement_pages(corpus)
    wanted = [(d, p) for name in asked for d in docs for p in by_doc.get((d, name), [])]
    if not wanted:
        return hits
    pages = set(wanted)
    seen = {h.node_id for h in hits}
    joined = [ScoredNode(node_id=t, score=hits[-1].score, why="a table of the statement the question names")
              for t in _tables_on(corpus, pages) if t not in seen]
    hits = hits + joined
    page_of = [(nodes.doc_of(h.node_id), nodes.page_of(h.node_id)) for h in hits]
    rank = {page: i for i, page in enumerate(wanted)}
    first = sorted((i for i, p in enumerate(page_of) if p in pages), key=lambda i: rank[page_of[i]])  # stable within a page
    files = sorted({corpus.documents[d].file_name for d, _ in wanted})
    found = (f"The question names the {' and the '.join(asked)}: {len(pages)} page(s) of {', '.join(files[:4])} print it "
             f"(a section titled so that holds a table)")
    if first == list(range(len(first))) and not joined:
        trace.notes.append(found + "; the strategy already ranked their units first.")
        return hits
    order = first + [i for i, p in enumerate(page_of) if p not in pages]
    out, floor = [], float("inf")
    for i in order:  # scores stay non-increasing
        floor = min(floor, hits[i].score)
        out.append(hits[i].model_copy(update={"score": floor}))
    trace.add(RankStep(label="Units of the statement the question names, first", index="statements", candidates=out[:len(first)][:30]))
    trace.notes.append(
        found + "; their units go first" + (f", {len(joined)} table(s) of them the strategy had not ranked." if joined else ".")
    )
    return out


def _tables_on(corpus, pages: set[tuple[str, int]]) -> list[str]:
    """The table components on the given (document, page)s, in reading order."""
    nodes = corpus.nodes
    docs = {d for d, _ in pages}
    return [c for d in sorted(docs) for c in corpus.components_by_doc.get(d, [])
            if nodes.kind_of(c) == NodeKind.TABLE and (d, nodes.page_of(c)) in pages]

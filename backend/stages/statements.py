"""Stage `statements`: the financial statements a question names or asks for. "Using the cash flow
statement, what is General Mills' FY2020 free cash flow?" is asked of the page that prints General
Mills' consolidated statement of cash flows, whatever other pages of the filing say about cash.

An analyst names the statement by its common name ("balance sheet", "P&L", "cash flow statement");
the filing heads it with its formal one ("CONSOLIDATED STATEMENTS OF FINANCIAL POSITION",
"Consolidated Statements of Operations"). Neither a bag of words nor a vector ties the two, and the
statement's rows ("Purchases of property, plant and equipment") share few words with the question.
The structure does: a statement is a table titled as one, by its own title lines, by the last
heading or title line above it on its page, or by its section's heading. STATEMENTS lists the three
primary statements, what questions call them and the titles filings give them (textbook names, not
fitted to a collection).

A question that asks for a figure without naming a statement ("Amazon's FY2017 days payable
outstanding", "EBITDA for Costco in FY2021") asks for what a statement prints: the line items of
the ratio (measures.MEASURES, each placed on its statement by ITEM_STATEMENT) or a figure a
statement prints as a row of its own (FIGURES: capital expenditure, revenue, total liabilities).

Where it acts (backend/stages/__init__.py, after the documents the question names go first; every
corpus): in the documents the question names most (names.naming_strength), or else in the
document of the method's first result, the pages of the statements the question names go first,
and the first page of each statement it implies goes after the method's first result (which may
be the page that answers in other words); the statements' tables join the hits where the method
did not rank them. A document holds a statement's page when such a table has MIN_STATEMENT_ROWS
rows or more (the statement itself, not a note that names it); of several, the one with the most
rows first, at most PAGES_PER_STATEMENT of them.
"""

from __future__ import annotations

import re
from collections import defaultdict

from backend.stages.measures import MEASURES
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
# Titles are matched with spaces and hyphens taken out: a filing's letter-spaced heading comes out
# of the PDF as "Statement of Cash Flow s" or "Equit y".
_TITLED = tuple((name, re.compile(titled.replace("[- ]?", "").replace(" ", ""), re.IGNORECASE))
                for name, _, titled in STATEMENTS)
# What may come before a statement's title on its line: the company's name ("The Kraft Heinz
# Company", "Amcor plc and Subsidiaries"), a part or item number, "(unaudited)".
_NAME_WORD = re.compile(r"(?:[A-Z0-9&(\-\u2013\u2014][\w.,&'\u2019()\-]*|and|of|plc|inc\.?|ltd\.?|llc|co\.?|corp\.?)$")

BALANCE, CASH_FLOW, INCOME = "balance sheet", "cash flow statement", "income statement"
# The statement that prints each line item of measures.MEASURES (textbook placement; depreciation
# and amortization and dividends paid as the statement of cash flows prints them).
ITEM_STATEMENT: dict[str, str] = {
    "total current assets": BALANCE, "total current liabilities": BALANCE, "cash and cash equivalents": BALANCE,
    "accounts receivable": BALANCE, "total debt": BALANCE, "long-term debt": BALANCE, "total equity": BALANCE,
    "total shareholders' equity": BALANCE, "total assets": BALANCE, "total liabilities": BALANCE,
    "inventories": BALANCE, "accounts payable": BALANCE,
    "net income": INCOME, "gross profit": INCOME, "revenue": INCOME, "net sales": INCOME, "cost of sales": INCOME,
    "operating income": INCOME, "interest expense": INCOME, "provision for income taxes": INCOME,
    "income before income taxes": INCOME,
    "depreciation and amortization": CASH_FLOW, "dividends": CASH_FLOW,
}
# Figures a question asks for by name that one statement prints as a row of its own.
FIGURES: tuple[tuple[str, tuple[str, ...]], ...] = (
    (r"ebitda", (INCOME, CASH_FLOW)),
    (r"capital expenditures?|capex|purchases? of property|free cash flows?|dividends? paid|"
     r"cash (?:flows? )?(?:from|provided by|used in) (?:operating|investing|financing)|operating cash flows?",
     (CASH_FLOW,)),
    (r"total (?:current )?(?:assets?|liabilit(?:y|ies))|(?:shareholders|stockholders)'? equity|working capital|"
     r"accounts (?:payable|receivable)|inventor(?:y|ies)|long[- ]term debt|total debt|cash balances?|"
     r"cash and cash equivalents", (BALANCE,)),
    (r"revenues?|(?:net )?sales|cost of (?:goods sold|sales|revenues?)|cogs|gross (?:profit|margin)|"
     r"operating (?:income|profit|margin)|"
     r"net (?:income|earnings|profit)|earnings per share|\beps\b|interest expense", (INCOME,)),
)
_FIGURES = tuple((re.compile(rf"\b(?:{pattern})", re.IGNORECASE), names) for pattern, names in FIGURES)
_NOT_PRIMARY = re.compile(r"\b(?:off[- ]?balance|consolidating|reconciliation|supplemental|obligor|parent company|"
                          r"guarantor|segment)", re.IGNORECASE)


def named_statements(question: str) -> list[str]:
    """The statements the question names, in the order of STATEMENTS."""
    return [name for name, pattern in _ASKED if pattern.search(question)]


def implied_statements(question: str) -> list[str]:
    """The statements that print what the question asks for without naming a statement: the line
    items of the ratios it names (measures.MEASURES) and the figures it names (FIGURES), in the
    order of STATEMENTS, the named statements left out."""
    found: set[str] = set()
    for pattern, items in MEASURES:
        if re.search(rf"\b(?:{pattern})", question, re.IGNORECASE):
            found.update(ITEM_STATEMENT[item] for item in items)
    for pattern, names in _FIGURES:
        if pattern.search(question):
            found.update(names)
    named = set(named_statements(question))
    return [name for name, _, _ in STATEMENTS if name in found and name not in named]


def statement_pages(corpus) -> dict[tuple[str, str], list[int]]:
    """(document id, statement) -> the pages that print it, the one with the most table rows
    first (built once per corpus)."""
    return corpus.derived(_statement_pages)


def statement_titled(title: str) -> str | None:
    """The primary statement a title line names ("3M Company and Subsidiaries Consolidated
    Statement of Cash Flow s Years ended December 31" -> "cash flow statement"), or None: not a
    title (a sentence: over 160 characters, ending in a period, or words other than a name before
    the statement's, as in "Derivative Impact on the Statements of Income") or not a primary
    statement (a reconciliation, a guarantor's consolidating or a segment's statement)."""
    title = title.strip()
    if not title or len(title) > 160 or title.endswith(".") or _NOT_PRIMARY.search(title):
        return None
    kept = [i for i, ch in enumerate(title) if not (ch.isspace() or ch == "-")]
    squashed = "".join(title[i] for i in kept)
    for name, pattern in _TITLED:
        match = pattern.search(squashed)
        if match and all(_NAME_WORD.match(w) for w in title[:kept[match.start()]].split()):
            return name
    return None


def _table_title(corpus, node_id: str) -> str | None:
    """The statement a table's own title lines name: its caption or the lines above it, or the
    cells of its first two lines (a statement's title drawn inside its frame)."""
    node = corpus.nodes[node_id]
    context = node.context or ""
    body = node.text[len(context):] if context and node.text.startswith(context) else node.text
    lines = context.splitlines() + [cell for line in body.strip().splitlines()[:2] for cell in line.split(" | ")]
    return next((name for name in map(statement_titled, lines) if name is not None), None)


def _titled_above(corpus, node_id: str, headings: dict[tuple[str, int], list[tuple[float, str]]]) -> str | None:
    """The statement named by the last heading or title line above the table on its page (a
    statement's title followed by its own "ASSETS" heading, or kept as a line of text)."""
    nodes = corpus.nodes
    bbox = nodes[node_id].bbox
    top = bbox[1] if bbox else float("inf")
    above = [(y, name) for y, name in headings.get((nodes.doc_of(node_id), nodes.page_of(node_id)), []) if y <= top]
    return max(above)[1] if above else None


def _statement_pages(corpus) -> dict[tuple[str, str], list[int]]:
    titled: dict[str, str] = {}
    headings: dict[tuple[str, int], list[tuple[float, str]]] = defaultdict(list)
    for sec in corpus.sections.values():
        name = statement_titled(sec.path[-1] if sec.path else "")
        if name is not None:
            titled[sec.id] = name
            headings[(sec.doc, sec.page)].append((sec.bbox[1] if sec.bbox else 0.0, name))
    nodes = corpus.nodes
    for node_id in corpus.layers["components"].ids:  # titles the parser kept as a line of text
        if nodes.kind_of(node_id) == NodeKind.PARAGRAPH and len(nodes.text_of(node_id)) <= 160:
            name = statement_titled(nodes.text_of(node_id))
            if name is not None:
                bbox = nodes[node_id].bbox
                headings[(nodes.doc_of(node_id), nodes.page_of(node_id))].append((bbox[1] if bbox else 0.0, name))
    rows: dict[tuple[str, str, int], int] = defaultdict(int)
    for node_id in corpus.layers["components"].ids:
        if nodes.kind_of(node_id) != NodeKind.TABLE:
            continue
        # The table's own title first (a statement set under the previous statement's heading, its
        # title drawn in the table's frame), then the last title above it on its page, then its section's.
        name = (_table_title(corpus, node_id) or _titled_above(corpus, node_id, headings)
                or titled.get(nodes.section_of(node_id) or ""))
        if name is not None:
            rows[(nodes.doc_of(node_id), name, nodes.page_of(node_id))] += len(corpus.subcomponents(node_id))
    out: dict[tuple[str, str], list[tuple[int, int]]] = defaultdict(list)
    for (doc, name, page), n in rows.items():
        if n >= MIN_STATEMENT_ROWS:
            out[(doc, name)].append((n, page))
    return {key: [p for _, p in sorted(pages, key=lambda x: (-x[0], x[1]))][:PAGES_PER_STATEMENT] for key, pages in out.items()}


def statement_first(corpus, question: str, hits: list[ScoredNode], trace: Trace,
                    strength: dict[str, tuple[int, int, int]]) -> list[ScoredNode]:
    """`hits` with the units of the pages of the statements the question names first, and those
    of the statements that print what it asks for after the strategy's first result (see the
    module's docstring); unchanged when it asks for none or no such page is found. `strength`:
    the documents the question names and how strongly (names.naming_strength)."""
    asked, implied = named_statements(question), implied_statements(question)
    if not (asked or implied) or not hits:
        return hits
    nodes = corpus.nodes
    if strength:
        top = max(strength.values())
        docs = sorted(d for d, s in strength.items() if s == top)
    else:
        docs = [nodes.doc_of(hits[0].node_id)]
    by_doc = statement_pages(corpus)
    named = [(d, p) for name in asked for d in docs for p in by_doc.get((d, name), [])]
    printed = [(d, by_doc[(d, name)][0]) for name in implied for d in docs if by_doc.get((d, name))]
    printed = [page for page in dict.fromkeys(printed) if page not in named]
    if not (named or printed):
        return hits
    wanted = named + printed
    pages = set(wanted)
    seen = {h.node_id for h in hits}
    joined = [ScoredNode(node_id=t, score=hits[-1].score, why="a table of the statement the question asks for")
              for t in _tables_on(corpus, pages) if t not in seen]
    hits = hits + joined
    page_of = [(nodes.doc_of(h.node_id), nodes.page_of(h.node_id)) for h in hits]
    rank = {page: i for i, page in enumerate(wanted)}
    on = sorted((i for i, p in enumerate(page_of) if p in pages), key=lambda i: rank[page_of[i]])  # stable within a page
    named_pages = set(named)
    first = [i for i in on if page_of[i] in named_pages]
    after = [i for i in on if page_of[i] not in named_pages]
    rest = [i for i, p in enumerate(page_of) if p not in pages]
    # A statement the question names outranks the strategy; one it implies comes after the
    # strategy's first result (which may be the page that answers in other words).
    order = first + rest[:1] + after + rest[1:] if after and not first else first + after + rest
    files = sorted({corpus.documents[d].file_name for d, _ in wanted})
    what = " and the ".join(asked + implied if asked else implied)
    found = (f"The question {'names' if asked else 'asks for what is printed in'} the {what}: {len(pages)} page(s) of "
             f"{', '.join(files[:4])} print it (a section or table titled so, holding a table)")
    if order == list(range(len(order))) and not joined:
        trace.notes.append(found + "; the strategy already ranked their units there.")
        return hits
    out, floor = [], float("inf")
    for i in order:  # scores stay non-increasing
        floor = min(floor, hits[i].score)
        out.append(hits[i].model_copy(update={"score": floor}))
    moved = len(first) + len(after) + (1 if after and not first else 0)
    trace.add(RankStep(label="Units of the statements the question asks for, first", index="statements",
                       candidates=out[:moved][:30]))
    trace.notes.append(
        found + ("; their units go first" if not after or first else "; their units go after the strategy's first result")
        + (f", {len(joined)} table(s) of them the strategy had not ranked." if joined else ".")
    )
    return out


def _tables_on(corpus, pages: set[tuple[str, int]]) -> list[str]:
    """The table components on the given (document, page)s, in reading order."""
    nodes = corpus.nodes
    docs = {d for d, _ in pages}
    return [c for d in sorted(docs) for c in corpus.components_by_doc.get(d, [])
            if nodes.kind_of(c) == NodeKind.TABLE and (d, nodes.page_of(c)) in pages]

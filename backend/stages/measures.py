"""The line items a financial ratio the question names is computed from: "What is the change in
current ratio from 2018 to 2019?" is answered from the rows "Total current assets" and "Total
current liabilities", and a report rarely writes the words "current ratio" beside them.

A real LLM asked to plan the search (LILaC's decomposition, FiF's planner) knows what a current
ratio or a return on assets is made of; the rules backend does not, and no similarity score
learns it from a question. This is the textbook definition of the common ratios and margins,
written once, used by every LLM backend alike: the items are searched for beside the question's
own words (they are appended to the text the strategy ranks by and the rows step reads), and the
trace says so. It never replaces a word of the question, so a report that writes a "Current
ratio" row is still found by it.

Only measures computed from other items are here. Line items that reports write as rows of their
own (EBITDA, free cash flow, capital expenditure, net debt) are not: appended to the question,
their parts pull other pages above the row itself. A measure of the table is not expanded either
where a table row of the corpus is labelled with it (`measures_in_rows`: "Gross margin",
"Working capital"): there the question's own words find the row, and the items would pull
look-alike statements above it. Measured in bench/RESULTS.md#stages.

Where it acts (stage `line_items`, backend/stages/__init__.py, before the method ranks): the text
the method ranks by, which the rows stage reads too.
"""

from __future__ import annotations

import re

from backend.llm.text import row_label
from backend.stages.rows import rows_by_doc
from backend.types import Trace

_REVENUE = ("revenue", "net sales")
_EQUITY = ("total equity", "total shareholders' equity")
# (what the question writes, the items the measure is computed from), the textbook definitions
MEASURES: tuple[tuple[str, tuple[str, ...]], ...] = (
    (r"current ratio", ("total current assets", "total current liabilities")),
    (r"working capital", ("total current assets", "total current liabilities")),
    (r"quick ratio|acid[- ]test", ("cash and cash equivalents", "accounts receivable", "total current liabilities")),
    (r"cash ratio", ("cash and cash equivalents", "total current liabilities")),
    (r"debt[- ]to[- ]equity|debt[- ]equity ratio|gearing ratio", ("total debt", "long-term debt", *_EQUITY)),
    (r"debt[- ]to[- ](?:total[- ])?assets?|debt ratio", ("total debt", "long-term debt", "total assets")),
    (r"liabilit(?:y|ies)[- ]to[- ](?:total[- ])?assets?", ("total liabilities", "total assets")),
    (r"equity ratio|equity[- ]to[- ](?:total[- ])?assets?", (*_EQUITY, "total assets")),
    (r"return on (?:total )?assets?|\broa\b", ("net income", "total assets")),
    (r"return on (?:shareholders'? |stockholders'? |common )?equity|\broe\b", ("net income", *_EQUITY)),
    (r"gross (?:profit )?margin", ("gross profit", *_REVENUE, "cost of sales")),
    (r"operating (?:profit |income )?margin", ("operating income", *_REVENUE)),
    (r"net (?:profit |income )?margin|\bprofit margin", ("net income", *_REVENUE)),
    (r"ebitda (?:%\s*)?margin", ("operating income", "depreciation and amortization", *_REVENUE)),
    (r"interest coverage|times interest earned", ("operating income", "interest expense")),
    (r"asset turnover", (*_REVENUE, "total assets")),
    (r"inventory turnover|days (?:of |in )?inventory", ("cost of sales", "inventories")),
    (r"receivables? turnover|days sales outstanding|\bdso\b", (*_REVENUE, "accounts receivable")),
    (r"payables? turnover|days payables? outstanding|\bdpo\b", ("cost of sales", "accounts payable")),
    (r"(?:dividend )?payout ratio", ("dividends", "net income")),
    (r"effective (?:income )?tax rate", ("provision for income taxes", "income before income taxes")),
)
_COMPILED = tuple((re.compile(rf"\b(?:{pattern})", re.IGNORECASE), items) for pattern, items in MEASURES)
_ANY = re.compile("|".join(rf"\b(?:{pattern})" for pattern, _ in MEASURES), re.IGNORECASE)


def line_items(question: str, rows: frozenset[int] = frozenset()) -> list[tuple[str, list[str]]]:
    """Each ratio the question names (as it writes it), with the items it is computed from that
    the question does not already write; not the measures numbered in `rows` (indexes into MEASURES)."""
    lowered, out, given = question.lower(), [], set()
    for i, (pattern, items) in enumerate(_COMPILED):
        match = pattern.search(question) if i not in rows else None
        if not match:
            continue
        new = [item for item in items if item not in lowered and item not in given]
        given.update(new)
        if new:
            out.append((match.group(0), new))
    return out


def measures_in_rows(corpus) -> frozenset[int]:
    """The MEASURES some table row of the corpus is labelled with ("Gross margin", "Working capital
    (2)"), as indexes (built once per corpus)."""
    found: set[int] = set()
    for rows in corpus.derived(rows_by_doc).values():
        for row_id in rows:
            label = row_label(corpus.nodes.row_of(row_id))
            if _ANY.search(label):
                found.update(i for i, (pattern, _) in enumerate(_COMPILED) if pattern.search(label))
    return frozenset(found)


def with_line_items(corpus, question: str, trace: Trace) -> str:
    """The text a structure-aware strategy ranks by: the question, and after it, in brackets, the
    line items of the ratios it names that no table row of the corpus is labelled with; the question
    itself when there are none. The trace says which, and which measures the corpus writes as rows."""
    rows = corpus.derived(measures_in_rows)
    found = line_items(question, rows)
    written = [match.group(0) for match in (_COMPILED[i][0].search(question) for i in sorted(rows)) if match]
    if written:
        trace.notes.append(f"The question names {', '.join(repr(w) for w in written)}, which tables of this corpus write "
                           "as a row of its own: its own words find it.")
    if not found:
        return question
    items = [item for _, new in found for item in new]
    trace.notes.append(
        "The question names " + "; ".join(f'"{name}", computed from {", ".join(new)}' for name, new in found)
        + ": those items are searched for beside the question's own words.")
    return f"{question} ({'; '.join(items)})"

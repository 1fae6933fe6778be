"""Stage `named_rows`: table rows the question names by their whole label. "What was the change in
operating expenses between 2018 and 2019?" is asked of the row labelled "Operating expenses", not
of "Other operating expenses" or "Total operating expense", whose pages hold every word of the
question as well.

A flat chunk knows no row, so this is a signal of the structure: a table's rows are
subcomponents, each with its first cell, the row's label (backend/ingest/components.py writes a
row as "Table 1: <first header>: <label>; <header>: <value>; ..."). Many of the questions a method
misses over a pile of reports are lexical ties: another report holds the same words, and the gold
page holds a row whose every label word the question writes (bench/RESULTS.md#stages).

Where it acts (backend/stages/__init__.py, after the novelty stage and before the documents the
question names go first; every corpus): the hits on pages that hold such a row (a row among the
hits, or a row of a table among them) go first, each part in the method's order, except that the
method's own first page keeps the second place, or the first when it holds more of the question's
words than the first named page.

Where the documents a question names decide (names.py: the `template` and `long_separate`
profile kinds), a named row the method did not rank joins the hits when it is in a document the
question names and on the only page of that document holding its label: "What is common equity
for COSTCO in FY2021?" is asked of the row "EQUITY" on the balance sheet of Costco's 10-K, a page
the routed ranking left below its first 30 units; "Total", on five pages of that 10-K, singles out
none of them.
"""

from __future__ import annotations

from backend.llm.text import QUESTION_WORDS, content_tokens, content_tokens_each, named_label, row_label
from backend.types import NodeKind, RankStep, ScoredNode, Trace


def named_rows_first(corpus, question: str, hits: list[ScoredNode], trace: Trace,
                     docs: frozenset[str] = frozenset()) -> list[ScoredNode]:
    """`hits` with those on the pages holding a row the question names by its whole label first,
    each part in the strategy's order; unchanged when no such page is among them. `docs`: the
    documents the question names, whose rows it names join the hits when the strategy missed them."""
    words = content_tokens(question) - QUESTION_WORDS
    if not words:
        return hits
    nodes = corpus.nodes
    joined = _rows_named_in(corpus, docs, words, {h.node_id for h in hits}, hits[-1].score) if docs and hits else []
    hits = hits + joined
    pages: dict[tuple[str, int], str] = {}
    for hit in hits:
        node = nodes[hit.node_id]
        if node.kind == NodeKind.ROW:
            rows = [hit.node_id]
        elif node.kind == NodeKind.TABLE:
            rows = corpus.subcomponents(hit.node_id)
        else:
            continue
        for row_id in rows:
            row = nodes[row_id]
            label = row_label(row.row)
            if named_label(label, words):
                pages.setdefault((row.doc, row.page), label)
    if not pages:
        return hits
    page_of = [(nodes.doc_of(h.node_id), nodes.page_of(h.node_id)) for h in hits]
    named = [i for i, page in enumerate(page_of) if page in pages]
    if len(named) == len(hits) or named == list(range(len(named))):
        return hits
    # The strategy's own first page keeps the second place: a label the question writes breaks a
    # tie between look-alike reports, but a generic one ("Total assets") also names pages that hold
    # nothing asked (measured against placing every named page first: bench/RESULTS.md#stages).
    # And it keeps the first place when it holds more of the question's words than the first named
    # page: then the label breaks no tie ("What was Autodesk's goodwill at the end of 2018?" is not
    # asked of another report's "Goodwill" row).
    lead = page_of[named[0]]
    kept = [] if page_of[0] in pages else [i for i, page in enumerate(page_of) if page == page_of[0]]
    leading = [i for i in named if page_of[i] == lead]
    stays = bool(kept) and _words_held(corpus, page_of[0], words) > _words_held(corpus, lead, words)
    order = ((kept + leading if stays else leading + kept) + [i for i in named if page_of[i] != lead]
             + [i for i, page in enumerate(page_of) if page not in pages and page != page_of[0]])
    out, floor = [], float("inf")
    for i in order:  # scores stay non-increasing
        floor = min(floor, hits[i].score)
        out.append(hits[i].model_copy(update={"score": floor}))
    labels = list(dict.fromkeys(pages.values()))
    placed = len(named) + len(kept)
    trace.add(RankStep(label="Units of the pages holding a row the question names, first", index="rows", candidates=out[:placed][:30]))
    trace.notes.append(
        f"The question names the whole label of {len(labels)} table row(s) ({', '.join(repr(lab) for lab in labels[:4])}"
        f"{' ...' if len(labels) > 4 else ''}) on {len(pages)} page(s); their units go first"
        + (", after the strategy's own first page, which holds more of the question's words." if stays
           else ", after the first such page the strategy's own first page." if kept else ".")
        + (f" {len(joined)} of those rows the strategy had not ranked: each is on the one page of a document the question"
           " names that holds its label." if joined else "")
    )
    return out


def _rows_named_in(corpus, docs: frozenset[str], words: set[str], seen: set[str], floor: float) -> list[ScoredNode]:
    """The rows of the documents `docs` whose whole label the question writes and no other page of
    their document holds, not among `seen`: "TOTAL LIABILITIES" singles out a 10-K's balance sheet,
    "Total", on five of its pages, singles out none."""
    by_doc, nodes, out = corpus.derived(rows_by_doc), corpus.nodes, []
    for doc in sorted(docs):
        by_label: dict[str, list[str]] = {}
        for row_id in by_doc.get(doc, ()):
            label = row_label(nodes.row_of(row_id))
            if named_label(label, words):
                by_label.setdefault(label.casefold(), []).append(row_id)
        for rows in by_label.values():
            if len({nodes.page_of(r) for r in rows}) == 1:
                out.extend(ScoredNode(node_id=r, score=floor, why="a row the question names, in a document it names")
                           for r in rows if r not in seen)
    return out


def rows_by_doc(corpus) -> dict[str, list[str]]:
    """Each document's table rows, in reading order (built once per corpus)."""
    out: dict[str, list[str]] = {}
    for node_id in corpus.layers["components"].ids:
        if corpus.nodes.kind_of(node_id) == NodeKind.TABLE:
            out.setdefault(corpus.nodes.doc_of(node_id), []).extend(corpus.subcomponents(node_id))
    return out


def _page_words(corpus) -> dict[tuple[str, int], set[str]]:
    """Each page's content tokens, over its components' texts (built once per corpus)."""
    comps, nodes = corpus.layers["components"], corpus.nodes
    out: dict[tuple[str, int], set[str]] = {}
    for node_id, tokens in zip(comps.ids, content_tokens_each([nodes.text_of(i) for i in comps.ids])):
        out.setdefault((nodes.doc_of(node_id), nodes.page_of(node_id)), set()).update(tokens)
    return out


def _words_held(corpus, page: tuple[str, int], words: set[str]) -> int:
    """How many of the question's content words the page holds."""
    return len(corpus.derived(_page_words).get(page, set()) & words)

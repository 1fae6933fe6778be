"""Stage `quoted`: the page the question quotes at length goes first. "Which years does the table
provide information for the long-term deferred tax assets and long-term deferred tax liabilities
for the company?" is asked of the report whose paragraph reads "The long-term deferred tax assets
and long-term deferred tax liabilities are as follows below:", ten content words in a row, while
the other reports among the hits hold at most three of them in a row ("deferred tax assets").

A question is often written from its evidence's own words. A run of the question's words that one
unit holds in the same order is evidence of a kind that neither a bag of words (BM25) nor a vector
keeps, and one page holding a much longer run than every other ranked page singles it out. The
structure gives the unit: the run is counted within one component (a paragraph, a table, a
caption), never across two, after BM25's tokenizer (stemmed, stop words out).

Where it acts (backend/stages/__init__.py, after the rows stage and before the documents the
question names go first): when the page holding the longest run holds at least QUOTE_MARGIN more
of the question's words in a row than any other ranked page, its units go first, in the method's
order. QUOTE_MARGIN is measured in bench/RESULTS.md#stages: a margin of 1 also moves pages that
are not the evidence, 3 leaves some quoting pages where they were.
"""

from __future__ import annotations

from backend.index.lexical import tokenize
from backend.llm.text import QUESTION_WORDS
from backend.types import RankStep, ScoredNode, Trace

QUOTE_MARGIN = 2  # tokens by which the quoting page's run must beat every other ranked page's


def quoted_page_first(corpus, question: str, hits: list[ScoredNode], trace: Trace) -> list[ScoredNode]:
    """`hits` with the units of the page that quotes the question at length first (see the module's
    docstring); unchanged when no page stands out so, or when it is first already."""
    asked = [t for t in tokenize([question])[0] if t not in QUESTION_WORDS]
    if len(asked) <= QUOTE_MARGIN or not hits:
        return hits
    nodes = corpus.nodes
    page_of = [(nodes.doc_of(h.node_id), nodes.page_of(h.node_id)) for h in hits]
    pages = list(dict.fromkeys(page_of))
    if len(pages) < 2:
        return hits
    runs = _longest_runs(corpus, asked, pages)
    best = max(range(len(pages)), key=runs.__getitem__)
    rest = max(run for i, run in enumerate(runs) if i != best)
    if best == 0 or runs[best] < rest + QUOTE_MARGIN:
        return hits
    lead = pages[best]
    order = [i for i, page in enumerate(page_of) if page == lead] + [i for i, page in enumerate(page_of) if page != lead]
    top = hits[0].score
    out = [hits[i].model_copy(update={"score": top}) if page_of[i] == lead else hits[i] for i in order]
    moved = sum(1 for page in page_of if page == lead)
    trace.add(RankStep(label="Units of the page the question quotes at length, first", index="quote", candidates=out[:30]))
    doc = corpus.documents[lead[0]].file_name
    trace.notes.append(
        f"Page {lead[1]} of {doc} holds {runs[best]} of the question's words in a row, the other ranked pages at most"
        f" {rest}: its {moved} unit(s) go first."
    )
    return out


def _longest_runs(corpus, asked: list[str], pages: list[tuple[str, int]]) -> list[int]:
    """For each page, the longest run of `asked` that one of its components holds in order."""
    by_page = corpus.derived(_page_components)
    ids = [by_page.get(page, []) for page in pages]
    flat = [c for group in ids for c in group]
    tokens = dict(zip(flat, tokenize([corpus.nodes.text_of(c) for c in flat]))) if flat else {}
    at: dict[str, list[int]] = {}
    for i, token in enumerate(asked):
        at.setdefault(token, []).append(i)
    return [max((_run(tokens[c], asked, at) for c in group), default=0) for group in ids]


def _run(held: list[str], asked: list[str], at: dict[str, list[int]]) -> int:
    """The longest stretch of `asked` that `held` writes in the same order, word for word."""
    best = 0
    for j, token in enumerate(held):
        for i in at.get(token, ()):
            k = 1
            while i + k < len(asked) and j + k < len(held) and asked[i + k] == held[j + k]:
                k += 1
            best = max(best, k)
    return best


def _page_components(corpus) -> dict[tuple[str, int], list[str]]:
    """Each page's components, in reading order (built once per corpus)."""
    nodes, out = corpus.nodes, {}
    for node_id in corpus.layers["components"].ids:
        out.setdefault((nodes.doc_of(node_id), nodes.page_of(node_id)), []).append(node_id)
    return out

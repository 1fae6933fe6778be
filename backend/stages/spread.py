"""Stage `spread`: the results spread over pages. A page's units beyond its first PAGE_HEAD_UNITS
wait until every ranked page has had its first ones. The pages keep the order of their first
units, so the page ranking is the same; only more pages fit in the first top_k results.

Why: the structure-aware stages move a page's units together (the rows stage and the quote stage
move "the units of the page", a routed report ranks its own paragraphs one after another), and on
a report of one page with seven paragraphs the first 10 results would cover two or three pages.
Two units of a page (its table and a paragraph, the evidence a report question joins) stay
together in the head, so the reader still gets both. PAGE_HEAD_UNITS is measured in
bench/RESULTS.md#stages. It runs before the named documents go first, so that their units all
stay ahead.
"""

from __future__ import annotations

from backend.types import RankStep, ScoredNode, Trace

PAGE_HEAD_UNITS = 2  # units of one page in the head of the results, before every page has had its own


def spread_over_pages(corpus, hits: list[ScoredNode], top_k: int, trace: Trace) -> list[ScoredNode]:
    """`hits` with each page's units beyond its first PAGE_HEAD_UNITS moved after every page's
    first ones, scores kept non-increasing; unchanged when that leaves the first `top_k` as they were."""
    nodes, seen = corpus.nodes, {}
    head, tail = [], []
    for hit in hits:
        page = (nodes.doc_of(hit.node_id), nodes.page_of(hit.node_id))
        (head if seen.get(page, 0) < PAGE_HEAD_UNITS else tail).append(hit)
        seen[page] = seen.get(page, 0) + 1
    out = head + tail
    if [h.node_id for h in out[:top_k]] == [h.node_id for h in hits[:top_k]]:
        return hits
    floor, spread = float("inf"), []
    for hit in out:
        floor = min(floor, hit.score)
        spread.append(hit if hit.score == floor else hit.model_copy(update={"score": floor}))
    trace.add(RankStep(label=f"Units spread over pages: at most {PAGE_HEAD_UNITS} of a page before every page has had its first",
                       index="pages", candidates=spread[:30]))
    trace.notes.append(f"The first {top_k} results hold {_pages(nodes, spread[:top_k])} pages, not {_pages(nodes, hits[:top_k])}:"
                       f" a page's units beyond its first {PAGE_HEAD_UNITS} come after every ranked page's first.")
    return spread


def _pages(nodes, ranked: list[ScoredNode]) -> int:
    return len({(nodes.doc_of(h.node_id), nodes.page_of(h.node_id)) for h in ranked})

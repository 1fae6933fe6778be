"""Stage `novelty`: in a web of pages, the ranked pages that hold a word of the question no page
above them holds go before those that add none. "The Vermont Catamounts men's soccer team currently
competes in a conference that was formerly known as what from 1988 to 1996?" is asked of the soccer
team's page and the conference's; a ranking may put several other Vermont Catamounts pages (the
ice hockey team, basketball seasons) between them, which hold nothing the question asks that the
pages above them lack.

A question over linked pages asks of a chain, and each page of it answers a part. A page whose
question words all stand on a page above it is a look-alike of that page, not the next hop, unless
a unit above it names its title or links to it: then it is the next hop, and an intermediate page
of a longer chain often holds none of the question's words.

Where it acts (backend/stages/__init__.py, right after the method ranked and before the rows
stage): only in a web of short pages (the `web_of_pages` profile kind: hop share >= HOP_SHARE, at
most SHORT_DOC_PAGES pages per document on average), where a page is one entity. In a pile of
separate reports a look-alike report is the usual gold page of a tie, and linked multi-page
reports are not a web of entities either (bench/RESULTS.md#stages). strata's inner HiKEY and
MMGraphRAG rankings are fused without it.
"""

from __future__ import annotations

from backend.llm.text import QUESTION_WORDS, content_tokens, content_tokens_each
from backend.retrieval.titles import title_index
from backend.retrieval.traits import is_web_of_pages
from backend.types import EdgeKind, RankStep, ScoredNode, Trace


def new_words_first(corpus, question: str, hits: list[ScoredNode], trace: Trace,
                    web_of_pages: bool | None = None) -> list[ScoredNode]:
    """`hits` with the units of the pages that add none of the question's words to the pages above
    them moved after all the others, each part in its order and scores kept non-increasing;
    unchanged outside a web of short pages, or when every page adds a word. `web_of_pages`: whether
    the corpus is one (the profile's word), None: measured (traits.is_web_of_pages)."""
    words = content_tokens(question) - QUESTION_WORDS
    if web_of_pages is None:
        web_of_pages = is_web_of_pages(corpus)
    if not hits or not words or not web_of_pages:
        return hits
    nodes = corpus.nodes
    page_of = [(nodes.doc_of(h.node_id), nodes.page_of(h.node_id)) for h in hits]
    held = _words_of(corpus, list(dict.fromkeys(page_of)))
    titles = title_index(corpus)
    covered: set[str] = set()
    named: set[str] = set()  # documents a unit above names: the next hops of the chain
    repeats: list[tuple[str, int]] = []
    seen: set[tuple[str, int]] = set()
    for hit, page in zip(hits, page_of):
        if page not in seen:
            seen.add(page)
            adds = ((held.get(page, set()) | content_tokens(corpus.documents[page[0]].title)) & words) - covered
            if covered and not adds and page[0] not in named:
                repeats.append(page)
            covered |= adds
        named.update(titles.mentioned(nodes.text_of(hit.node_id), exclude=page[0]))
        named.update(e.dst for e in corpus.edges.out_of(hit.node_id, (EdgeKind.LINK,)))
    if not repeats:
        return hits
    later = set(repeats)
    order = [i for i, p in enumerate(page_of) if p not in later] + [i for i, p in enumerate(page_of) if p in later]
    if order == list(range(len(hits))):
        return hits
    out, floor = [], float("inf")
    for i in order:
        floor = min(floor, hits[i].score)
        out.append(hits[i].model_copy(update={"score": floor}))
    names = [f"{corpus.documents[d].file_name} p{p}" for d, p in repeats[:4]]
    trace.add(RankStep(label="Pages that add a word of the question first", index="novelty", candidates=out[:30]))
    trace.notes.append(
        f"{len(repeats)} ranked page(s) hold no word of the question that a page above them lacks "
        f"({', '.join(names)}{' ...' if len(repeats) > 4 else ''}): they come after the pages that do.")
    return out


def _words_of(corpus, pages: list[tuple[str, int]]) -> dict[tuple[str, int], set[str]]:
    """Each ranked page's content tokens over its components' texts, tokenized per question (a
    table of every page's tokens cost 0.1 s per 2,000 pages, on a big web's first question)."""
    nodes = corpus.nodes
    units = [(page, c) for page in pages for c in corpus.components_by_doc.get(page[0], ()) if nodes.page_of(c) == page[1]]
    out: dict[tuple[str, int], set[str]] = {page: set() for page in pages}
    for (page, _), tokens in zip(units, content_tokens_each([nodes.text_of(c) for _, c in units])):
        out[page] |= tokens
    return out

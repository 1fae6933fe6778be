"""In a web of short pages, the pages that add a word of the question go before the look-alikes that
add none (backend/stages/novelty.py); not in a pile of separate documents, nor among linked
reports of many pages; the query pipeline runs it after every method but the flat floors."""

from __future__ import annotations

from backend.stages.novelty import new_words_first
from backend.retrieval.traits import hop_share, is_separate_corpus, is_web_of_pages
from backend.types import ScoredNode, Trace
from tests.fakes import build_corpus, doc_of

# Three teams of one club hold the club's name; only the soccer team's page names the conference,
# and only the conference's page holds the rest of the question's words.
CLUB = {
    "Vale_Rovers_men_s_soccer.pdf": ["The Vale Rovers men's soccer team competes in the Northern Shore Conference."],
    "Vale_Rovers_men_s_ice_hockey.pdf": ["The Vale Rovers men's ice hockey team plays its home games at Lindon Arena."],
    "Vale_Rovers_men_s_basketball.pdf": ["The Vale Rovers men's basketball team plays its home games at Lindon Hall."],
    "Northern_Shore_Conference.pdf": ["The Northern Shore Conference was formerly known as the Coastal Athletic League from "
                                      "1988 to 1996."],
}
QUESTION = "The Vale Rovers men's soccer team competes in a conference that was formerly known as what from 1988 to 1996?"
RANKED = ["Vale_Rovers_men_s_soccer.pdf", "Vale_Rovers_men_s_ice_hockey.pdf", "Vale_Rovers_men_s_basketball.pdf",
          "Northern_Shore_Conference.pdf"]


def _reordered(corpus, ranked: list[str]) -> tuple[list[str], Trace]:
    unit = {doc_of(corpus, c): c for c in corpus.layers["components"].ids}
    hits = [ScoredNode(node_id=unit[name], score=1.0 - i / 10, why="") for i, name in enumerate(ranked)]
    trace = Trace(method="mmgraph", llm_backend="rules")
    out = new_words_first(corpus, QUESTION, hits, trace)
    assert all(a.score >= b.score for a, b in zip(out, out[1:]))
    return [doc_of(corpus, h.node_id) for h in out], trace


def test_look_alike_pages_wait_after_the_page_that_adds_a_word_of_the_question(service):
    corpus = build_corpus(service, CLUB)
    assert not is_separate_corpus(corpus), f"the soccer page names the conference: hop share {hop_share(corpus)}"
    names, trace = _reordered(corpus, RANKED)
    assert names == ["Vale_Rovers_men_s_soccer.pdf", "Northern_Shore_Conference.pdf", "Vale_Rovers_men_s_ice_hockey.pdf",
                     "Vale_Rovers_men_s_basketball.pdf"]
    assert any(getattr(s, "index", None) == "novelty" for s in trace.steps)
    assert any(n.startswith("2 ranked page(s) hold no word of the question that a page above them lacks") for n in trace.notes)
    # already in that order, or every page adds a word: nothing moves and nothing is said
    names, trace = _reordered(corpus, ["Vale_Rovers_men_s_soccer.pdf", "Northern_Shore_Conference.pdf"])
    assert names == ["Vale_Rovers_men_s_soccer.pdf", "Northern_Shore_Conference.pdf"] and not trace.notes


def test_separate_documents_keep_their_order(service):
    """The same pages without the soccer page's mention of the conference: no page leads to
    another, look-alikes are the usual ties of separate reports, and the order stays."""
    separate = {**CLUB, "Vale_Rovers_men_s_soccer.pdf": ["The Vale Rovers men's soccer team competes in a regional league."]}
    corpus = build_corpus(service, separate)
    assert is_separate_corpus(corpus)
    names, trace = _reordered(corpus, RANKED)
    assert names == RANKED and not trace.notes


def test_linked_reports_of_many_pages_keep_their_order(service):
    """The same linked pages as documents of four pages each: reports that cite one another, not a
    web of one-entity pages."""
    corpus = build_corpus(service, CLUB, pages=4)
    assert not is_separate_corpus(corpus) and not is_web_of_pages(corpus)
    names, trace = _reordered(corpus, RANKED)
    assert names == RANKED and not trace.notes


def test_a_page_a_unit_above_names_or_links_is_the_next_hop_not_a_look_alike(service):
    """On a longer chain the conference's page holds none of the question's words beyond the
    soccer page's, and Lindon's page adds "formerly known". Named by the soccer page's text, or
    linked from it, the conference's page is the next hop and keeps its place; named by nothing
    above it, it waits after Lindon's."""
    question = "What was the Vale Rovers men's soccer team's league formerly known as?"
    pages = {"Northern_Shore_Conference.pdf": ["The Northern Shore Conference is a college athletic league."],
             "Lindon.pdf": ["Lindon, formerly known as Lind, is a town in the history of the Northern Shore Conference."]}
    ranked = ["Vale_Rovers_men_s_soccer.pdf", "Northern_Shore_Conference.pdf", "Lindon.pdf"]
    plain = ["The Vale Rovers men's soccer team plays in a league."]
    for soccer, links, expected in (
        (["The Vale Rovers men's soccer team plays in the Northern Shore Conference league."], [], ranked),
        (plain, [("Vale_Rovers_men_s_soccer.pdf", 0, "Northern_Shore_Conference.pdf")], ranked),
        (plain, [], ["Vale_Rovers_men_s_soccer.pdf", "Lindon.pdf", "Northern_Shore_Conference.pdf"]),
    ):
        corpus = build_corpus(service, {"Vale_Rovers_men_s_soccer.pdf": soccer, **pages}, links=links)
        assert not is_separate_corpus(corpus), "Lindon's page names the conference"
        unit = {doc_of(corpus, c): c for c in corpus.layers["components"].ids}
        hits = [ScoredNode(node_id=unit[name], score=1.0 - i / 10, why="") for i, name in enumerate(ranked)]
        names = [doc_of(corpus, h.node_id) for h in new_words_first(corpus, question, hits, Trace(method="mmgraph"))]
        assert names == expected, (soccer, links)


def test_the_structure_aware_methods_take_the_step_and_the_flat_floors_do_not(service, strata_settings, tmp_path_factory,
                                                                             monkeypatch):
    """The step's reordering is tested above; here, who runs it: the query pipeline's default
    stages, after every method but the three flat ones (a spy in the stages' namespace), over a
    workspace ingested for real; with stages "none", after none."""
    import backend.stages as stages
    from tests.fakes import ingest_drawn

    calls: list[int] = []

    def spy(corpus, question, hits, trace, web_of_pages=None):
        calls.append(len(hits))
        return new_words_first(corpus, question, hits, trace, web_of_pages)

    def prose(text):
        return lambda page: page.insert_text((72, 72), text, fontsize=11)

    ws = ingest_drawn(service, strata_settings.workspace_root / "novelty_club", tmp_path_factory.mktemp("novelty_club"),
                      {name: prose(paragraphs[0]) for name, paragraphs in CLUB.items()})
    monkeypatch.setattr(stages, "new_words_first", spy)
    monkeypatch.setattr(service.settings.retrieval, "profile", "web_of_pages")  # the stage acts in a web of pages
    for method in ("strata", "lilac", "fif", "mirag", "mmgraph", "hikey"):
        calls.clear()
        result = service.ask(ws, QUESTION, method=method, top_k=5)
        assert len(calls) == 1 and calls[0] > 0, method
        assert "novelty" in result.stages and result.label == f"{method} + stages"
    for method in ("bm25", "dense", "hybrid"):
        calls.clear()
        service.ask(ws, QUESTION, method=method, top_k=5)
        assert calls == [], method
    calls.clear()
    service.ask(ws, QUESTION, method="strata", top_k=5, stages="none")
    assert calls == []

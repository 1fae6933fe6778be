"""Strata's corpus-aware modes on small hand-built corpora."""

from __future__ import annotations

from backend.retrieval.strata import hop_share, template_share
from backend.types import BeamStep, FuseStep, RankStep, Trace
from tests.fakes import FILMS, build_corpus, doc_of
from tests.fakes import FILMS_QUESTION as QUESTION

BOILERPLATE = [
    "The Company is exposed to market risks, including changes in interest rates and foreign currency exchange rates.",
    "Net sales increased compared with the same quarter of the prior year, driven by higher demand.",
    "The Company repurchased shares of its common stock under the authorised repurchase program.",
]


def _run(service, corpus, query, top_k=6, params=None):
    trace = Trace(method="strata")
    return service.retriever("strata", corpus).retrieve(query, top_k, dict(params or {}), trace), trace


def test_template_corpus_is_detected_and_results_spread_over_filings(service):
    filings = {f"2023_Q{q}_{co}.pdf": [f"{co} quarterly report for quarter {q}."] + BOILERPLATE for co in ("ACME", "GLOBEX") for q in (1, 2)}
    corpus = build_corpus(service, filings)
    assert template_share(corpus) >= 0.3
    hits, trace = _run(service, corpus, "Did the company repurchase shares of its common stock?", 4)
    assert trace.params["mode"] == "template"
    assert len({doc_of(corpus, h.node_id) for h in hits}) == 4, "one unit per filing before any filing gets a second"
    assert any(isinstance(s, RankStep) for s in trace.steps)


def test_linked_corpus_places_the_partner_after_its_anchor(service):
    corpus = build_corpus(service, FILMS, links=[("Moonlit_Harbor.pdf", 0, "Elena_Varga.pdf")])
    assert template_share(corpus) < 0.3
    hits, trace = _run(service, corpus, QUESTION, 4)
    assert trace.params["mode"] == "hikey"
    docs = [doc_of(corpus, h.node_id) for h in hits]
    assert docs.index("Elena_Varga.pdf") == docs.index("Moonlit_Harbor.pdf") + 1, docs
    beam = next(s for s in trace.steps if isinstance(s, BeamStep))
    assert any(doc_of(corpus, e.dst) == "Elena_Varga.pdf" for e in beam.edges)
    assert any(isinstance(s, FuseStep) for s in trace.steps)
    assert Trace.model_validate_json(trace.model_dump_json()) == trace
    no_walk, _ = _run(service, corpus, QUESTION, 4, {"partners": 0})
    assert "linked from" not in " ".join(h.why for h in no_walk)


def test_a_bridge_page_named_in_the_text_is_reached_without_any_pdf_link(service):
    """No link annotations at all: the anchor names the bridge page's title ("directed by Elena
    Varga"), and the title hop places that page right after it (edge kind 'mention')."""
    corpus = build_corpus(service, FILMS)
    assert hop_share(corpus) > 0, "Moonlit Harbor's paragraph names another document"
    hits, trace = _run(service, corpus, QUESTION, 4)
    docs = [doc_of(corpus, h.node_id) for h in hits]
    assert docs.index("Elena_Varga.pdf") == docs.index("Moonlit_Harbor.pdf") + 1, docs
    beam = next(s for s in trace.steps if isinstance(s, BeamStep))
    assert any(e.edge_kind == "mention" and doc_of(corpus, e.dst) == "Elena_Varga.pdf" for e in beam.edges)
    no_mentions, trace0 = _run(service, corpus, QUESTION, 4, {"mentions": 0, "compose": 0})  # the title hop alone
    beam0 = next(s for s in trace0.steps if isinstance(s, BeamStep))
    assert not beam0.edges and "linked from" not in " ".join(h.why for h in no_mentions)


def test_where_units_rarely_name_another_document_a_name_is_not_a_hop(service):
    """The same anchor in a corpus of separate reports (hop share under the threshold): its
    mention of another title is incidental and earns no partner."""
    filler = {f"Report_{i:02d}.pdf": [f"Report {i} covers quarterly revenue of plant {i}.",
                                      f"Costs at plant {i} rose with energy prices.",
                                      f"Plant {i} staff numbers were unchanged."] for i in range(20)}
    corpus = build_corpus(service, {**FILMS, **filler})
    assert hop_share(corpus) < 0.1
    hits, trace = _run(service, corpus, QUESTION, 4)
    beam = next(s for s in trace.steps if isinstance(s, BeamStep))
    assert not any(e.edge_kind == "mention" for e in beam.edges)


def test_a_partner_leads_one_hop_further_when_that_adds_to_a_subquery(service):
    """A 3-hop question: the film's page names its director, her page names the town she grew up
    in, the town's page names the river. One hop stops at the director; with chain 1 her page
    leads on to the town's, placed right after it, while the page that only shares the question's
    word "river" stays behind it."""
    docs = {**FILMS,
            "Kestrel_Falls.pdf": ["Kestrel Falls is a former mining town on the river Osk, in the north of the country."],
            "River_Guide.pdf": ["A guide to rivers: the Danube, the Tisza and the Drava run through many towns."]}
    corpus = build_corpus(service, docs)
    question = "Which river runs through the town where the director of the film Moonlit Harbor grew up?"
    one_hop, _ = _run(service, corpus, question, 6, {"chain": 0})
    assert "Kestrel_Falls.pdf" not in [doc_of(corpus, h.node_id) for h in one_hop]
    hits, trace = _run(service, corpus, question, 6, {"chain": 1})
    docs_ranked = [doc_of(corpus, h.node_id) for h in hits]
    assert docs_ranked[:3] == ["Moonlit_Harbor.pdf", "Elena_Varga.pdf", "Kestrel_Falls.pdf"], docs_ranked
    elena = hits[1].node_id
    assert hits[2].why == f"linked from {elena}"
    beam = next(s for s in trace.steps if isinstance(s, BeamStep))
    assert any(e.src == elena and doc_of(corpus, e.dst) == "Kestrel_Falls.pdf" and not e.one_sided for e in beam.edges)


def test_chains_reach_the_fourth_page_of_a_four_hop_question(service):
    """Film -> director -> the town she grew up in -> the river through it: the river's page is
    named only by the town's page, two hops past the first partner. The default chain (2) walks
    there; chain 1 stops at the town."""
    docs = {**FILMS,
            "Kestrel_Falls.pdf": ["Kestrel Falls is a former mining town on the River Osk, in the north of the country."],
            "River_Osk.pdf": ["The River Osk rises in the Tarn Mountains and flows north past old mining towns."],
            "Mountain_Guide.pdf": ["A guide to mountains: the Alps, the Tatra and the Carpathians rise above many rivers."],
            "River_Sources.pdf": ["Which mountains do rivers rise in? Most rivers of the north rise in high mountains."],
            "Town_Rivers.pdf": ["Every mining town grew up on a river; the rivers rise in the mountains above the towns."]}
    corpus = build_corpus(service, docs)
    question = "In which mountains does the river of the town where the director of the film Moonlit Harbor grew up rise?"
    short, _ = _run(service, corpus, question, 6, {"chain": 1})
    assert "River_Osk.pdf" not in [doc_of(corpus, h.node_id) for h in short[:4]]
    hits, _ = _run(service, corpus, question, 6, {})
    docs_ranked = [doc_of(corpus, h.node_id) for h in hits]
    assert docs_ranked[:4] == ["Moonlit_Harbor.pdf", "Elena_Varga.pdf", "Kestrel_Falls.pdf", "River_Osk.pdf"], docs_ranked
    assert hits[3].why == f"linked from {hits[2].node_id}"


SCHOOLS = {
    "Westminster_School,_Adelaide.pdf": [
        "Westminster School is a boarding school opened by the Prime Minister Robert Menzies in 1961 and named after "
        "Westminster School in London. It is located at Marion, South Australia."],
    "Marion,_South_Australia.pdf": ["Marion is a local government area whose council sits at Sturt, south of Adelaide."],
    "Scotch_College.pdf": ["Scotch College is a boarding school in Perth, opened in 1897 by the Presbyterian church."],
    "Menzies_Lectures.pdf": ["The Prime Minister gave lectures on schools and boarding in London and Australia."],
    "City_Founding.pdf": ["Many Australian cities were founded in the nineteenth century by settlers from London."],
}
SCHOOLS_QUESTION = "Which city contains the boarding school opened by a Prime Minister and named after a school in London?"


def test_a_named_page_is_placed_after_its_anchor_even_when_the_anchor_matches_every_subquery_best(service):
    """The rules decomposition leaves most of the question in each part, and the school's page
    matches both parts best, so the city's page adds to neither; in a web of pages the hop the
    school's page makes (it names "Marion, South Australia") places the city right after it."""
    corpus = build_corpus(service, SCHOOLS)
    hits, trace = _run(service, corpus, SCHOOLS_QUESTION, 4)
    docs = [doc_of(corpus, h.node_id) for h in hits]
    assert docs.index("Marion,_South_Australia.pdf") == docs.index("Westminster_School,_Adelaide.pdf") + 1, docs
    beam = next(s for s in trace.steps if isinstance(s, BeamStep))
    (edge,) = [e for e in beam.edges if doc_of(corpus, e.dst) == "Marion,_South_Australia.pdf"]
    assert edge.one_sided, "the city adds to no subquery: placed on the hop alone"
    assert len(edge.matches) > 1, "the question was decomposed"


def test_a_leading_result_placed_as_a_partner_still_makes_its_own_first_hop(service):
    """The remake's page names the 1974 special, a leading result of its own, which is placed right
    after the remake; the special names its producer, which adds to no subquery but is its first
    hop, so it follows the special as it would have followed the special ranked on its own."""
    docs = {
        "The_Year_Without_a_Santa_Claus_(2006_film).pdf": [
            "The Year Without a Santa Claus is a 2006 television film, a remake of The Year Without a Santa Claus."],
        "The_Year_Without_a_Santa_Claus.pdf": [
            "The Year Without a Santa Claus is a 1974 Christmas stop motion television special produced by Rankin/Bass Productions."],
        "Rankin/Bass_Productions.pdf": ["Rankin/Bass Productions is an American company in New York founded in 1960."],
        "Santa_Claus_in_film.pdf": ["Santa Claus appears in many Christmas films and television specials every year."],
        "Christmas_Specials.pdf": ["A list of the best known Christmas television specials and the work of their producers."],
    }
    corpus = build_corpus(service, docs)
    question = "For what type of work is the production company for The Year Without a Santa Claus best known?"
    hits, trace = _run(service, corpus, question, 5)
    ranked = [doc_of(corpus, h.node_id) for h in hits]
    special = ranked.index("The_Year_Without_a_Santa_Claus.pdf")
    assert ranked[special + 1] == "Rankin/Bass_Productions.pdf", ranked
    assert hits[special + 1].why == f"linked from {hits[special].node_id}"


def test_homonyms_named_by_one_mention_take_one_partner_place(service):
    """The sitcom's page names its writer and "The Young Ones", the title of two pages (the TV
    series and the video game). The two homonyms are one hop, not two: one of them is placed, and
    the writer's page takes the anchor's other partner place (the three hops tie, and the homonyms'
    pages come first in the corpus)."""
    docs = {
        "Filthy_Rich_and_Catflap.pdf": [
            "Filthy Rich and Catflap is a BBC sitcom broadcast in 1987. It was written by Ben Elton and starred three "
            "former co-stars of The Young Ones."],
        "The_Young_Ones_(TV_series).pdf": ["The Young Ones is a British sitcom broadcast on BBC2 from 1982 to 1984 in two series."],
        "The_Young_Ones_(video_game).pdf": ["The Young Ones is a video game of 1986 based on the British sitcom broadcast on BBC2."],
        "Ben_Elton.pdf": ["Ben Elton is an English comedian and author who wrote for series such as Blackadder."],
        "Blackadder.pdf": ["Blackadder is a series of four BBC sitcoms broadcast from 1983 to 1989."],
        "Comedy_on_BBC2.pdf": ["Many sitcoms were broadcast on BBC2 in the 1980s, most of them in series of six episodes."],
    }
    corpus = build_corpus(service, docs)
    question = "During which years was the first series named among the writing credits of the writer of Filthy Rich and Catflap broadcast?"
    hits, trace = _run(service, corpus, question, 6, {"chain": 0})
    anchor = next(h.node_id for h in hits if doc_of(corpus, h.node_id) == "Filthy_Rich_and_Catflap.pdf")
    partners = [doc_of(corpus, h.node_id) for h in hits if h.why == f"linked from {anchor}"]
    assert "Ben_Elton.pdf" in partners, partners
    assert len([d for d in partners if d.startswith("The_Young_Ones")]) == 1, partners


ALBUMS = {
    "Cedar_Line.pdf": ["Cedar Line is a song co-written by Alan Brook and Rena Vale, and performed by Brook. "
                       "It was the first single from his album Open Range."],
    "Rena_Vale.pdf": ["Rena Vale is an American country singer and songwriter from Tulsa."],
    "Lantern_Road.pdf": ["Lantern Road is the third studio album by country singer Rena Vale. It came out on May 2, 1990."],
    "Gray_Mile.pdf": ["Gray Mile is a band whose third studio album was released in 1994 on Cedar Records."],
    "Harbor_Lights.pdf": ["Harbor Lights is the third studio album by the band Gray Mile, released in 1988."],
    "Open_Range.pdf": ["Open Range is the second studio album by Alan Brook, released in 1992."],
    "Silver_Creek.pdf": ["Silver Creek is the third studio album by Tom Reyes, released in 1979."],
}
ALBUMS_QUESTION = "When was the third studio album of Alan Brook's co-writer on Cedar Line released?"


def test_a_composed_hop_reaches_a_page_that_names_the_bridge_but_is_not_its_own(service):
    """MuSiQue's second page is often not the bridge entity's own: Rena Vale's third studio album is
    named on Lantern Road's page, which no page names by title. The leading unit that best matches
    the first subquery (Cedar Line) names the bridge, "the third studio album of Rena Vale" is
    searched, and its best unit joins the partners Cedar Line may place. Without it the page
    sits below the albums the question's own words match."""
    corpus = build_corpus(service, ALBUMS)
    hits, trace = _run(service, corpus, ALBUMS_QUESTION, 4)
    docs = list(dict.fromkeys(doc_of(corpus, h.node_id) for h in hits))
    assert "Lantern_Road.pdf" in docs[:3], docs
    beam = next(s for s in trace.steps if isinstance(s, BeamStep))
    assert any(e.edge_kind == "composed" and doc_of(corpus, e.dst) == "Lantern_Road.pdf" for e in beam.edges)
    assert any(isinstance(s, FuseStep) and "Rena Vale" in " ".join(s.inputs) for s in trace.steps)
    plain, _ = _run(service, corpus, ALBUMS_QUESTION, 4, {"compose": 0})
    assert "Lantern_Road.pdf" not in list(dict.fromkeys(doc_of(corpus, h.node_id) for h in plain))[:3]


TEAMMATES = {
    "Tomas_Brandt.pdf": ["Tomas Brandt is a retired quarterback who played college football at Ridgeway State beside Aaron Pike."],
    "Aaron_Pike.pdf": ["Aaron Pike is a former quarterback. His daughter Mira Pike is a high jumper at Saint Brigid Academy."],
    **{f"{name.replace(' ', '_')}.pdf": [
        f"{name} is a Catholic high school. The Catholic diocese of {see} administers the high school, which sends "
        "many a daughter of its families to college."]
       for name, see in (("Saint Anne High School", "Lorne"), ("Holy Cross High School", "Varden"),
                         ("Mount Carmel High School", "Oster"), ("Saint Jude High School", "Pell"))},
    "Catholic_Schools.pdf": ["Which Catholic diocese administers a high school? Each diocese administers its Catholic schools."],
}
TEAMMATES_QUESTION = "Which Catholic diocese administers the high school of the daughter of Tomas Brandt's college teammate?"


def test_the_page_a_question_names_leads_even_when_the_last_hop_s_words_match_other_pages(service):
    """MuSiQue names only where a chain starts ("Tomas Brandt"); the rest of the question is the
    last hop's words, which every Catholic school's page matches better than the start page. The
    documents whose title the question names are a ranking of their own in the base fusion, so
    the start page leads, and its hop to the teammate follows it; without it neither is in the
    top four. A question that names no title is ranked as before."""
    corpus = build_corpus(service, TEAMMATES)
    assert hop_share(corpus) >= 0.1
    plain, _ = _run(service, corpus, TEAMMATES_QUESTION, 4, {"named": 0})
    assert "Tomas_Brandt.pdf" not in [doc_of(corpus, h.node_id) for h in plain]
    hits, trace = _run(service, corpus, TEAMMATES_QUESTION, 4)
    docs = [doc_of(corpus, h.node_id) for h in hits]
    assert docs.index("Aaron_Pike.pdf") == docs.index("Tomas_Brandt.pdf") + 1, docs
    fuse = next(s for s in trace.steps if isinstance(s, FuseStep) and "named documents" in s.inputs)
    assert [doc_of(corpus, h.node_id) for h in fuse.inputs["named documents"]] == ["Tomas_Brandt.pdf"]
    unnamed = "Which Catholic diocese administers the high school of the daughter of the quarterback?"
    default, trace0 = _run(service, corpus, unnamed, 4)
    assert not any(isinstance(s, FuseStep) and "named documents" in s.inputs for s in trace0.steps)
    assert [h.node_id for h in default] == [h.node_id for h in _run(service, corpus, unnamed, 4, {"named": 0})[0]]


GAMES = {
    "Tessa_Fenn.pdf": ["Tessa Fenn is the heroine of the video game Crypt Runner, where she is voiced by Mara Quill."],
    "Mara_Quill.pdf": ["Mara Quill is a French actress who has voiced characters in films and video games."],
    "Crypt_Runner.pdf": ["Crypt Runner is an action video game developed by Halcyon Works and released in 2013."],
    "Halcyon_Works.pdf": ["Halcyon Works is a video game developer based in Lyon."],
    "Star_Drift.pdf": ["Star Drift is a video game developed by Orbit Forge, in which the voice cast includes many actors."],
}
GAMES_QUESTION = "Mara Quill is the voice of Tessa Fenn in a video game developed by which company?"


def test_a_name_the_dependent_subquery_writes_is_not_its_bridge(service):
    """The rules split the question into "the voice of Tessa Fenn" and "Mara Quill is the voice in a
    video game developed by which company". Tessa Fenn's page names Mara Quill first, but the second
    subquery already writes her: filling her in ("Mara Quill is Mara Quill in a video game ...")
    searches for nothing new. The bridge is the next name the page gives, the game."""
    corpus = build_corpus(service, GAMES)
    hits, trace = _run(service, corpus, GAMES_QUESTION, 4)
    hops = [text for s in trace.steps if isinstance(s, FuseStep) and s.label.startswith("composed hops") for text in s.inputs]
    assert hops and all("Mara Quill is Mara Quill" not in t for t in hops), hops
    assert any("Crypt Runner" in t for t in hops), hops

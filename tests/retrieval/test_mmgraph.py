"""MMGraphRAG's Entity2Entity retrieval on a small hand-built corpus where the bridge is known: the
question names a film, the answer is in the document of the film's star, which never names the
film."""

from __future__ import annotations

import hashlib
import json
import re

import pytest

from backend.graph.corpus import Corpus
from backend.graph.entities import entity_index_text, extract_document_entities
from backend.llm.rules import RulesBackend
from backend.types import Document, Edge, EdgeKind, EntityStep, Layer, Node, NodeKind, Section, Trace

FILMS = {
    "Kiss_and_Tell_1945_film.pdf": [
        "Kiss and Tell is a 1945 American comedy film starring Shirley Temple as Corliss Archer. "
        "The film was directed by Richard Wallace."
    ],
    "Shirley_Temple.pdf": [
        "Shirley Temple was an American actress and diplomat. She held the post of Chief of Protocol of the United States."
    ],
    "Protocol_Office.pdf": ["The government office of protocol advises on positions held by diplomats abroad."],
    "Government_Posts.pdf": ["Government positions were held by the stars of many comedy films, this guide says."],
    "Tell_City.pdf": ["Tell City is a town in Indiana. Its government post office was held by a film star."],
    "Radio_Days.pdf": ["Radio Days is a comedy about a family who listen to the radio. Its star held no position."],
    "Film_Stars_in_Office.pdf": ["Film stars who held a government position are rare; a star may hold office after retiring."],
    "Positions_Guide.pdf": ["What position a star held in government is a question this film society answers."],
}
TITLES = {"Kiss_and_Tell_1945_film.pdf": "Kiss and Tell (1945 film)"}  # as Wikipedia titles it
QUESTION = "What government position was held by the star of Kiss and Tell?"
BRIDGE_DOC = "Shirley_Temple.pdf"


def _id(*parts: str) -> str:
    return hashlib.sha1("/".join(parts).encode()).hexdigest()[:12]


def build_corpus(service, docs: dict[str, list[str]], *, with_entities: bool = True, titles: dict[str, str] | None = None,
                 pages: dict[str, int] | None = None) -> Corpus:
    """docs: file name -> paragraphs (each split into sentences); entities by the rules extractor,
    encoded as at ingest (name + description in the subcomponent space); pages: a document's page
    count where it is not 1."""
    documents, sections, nodes, edges = [], [], [], []
    text_ids, text_texts, sub_ids, sub_texts = [], [], [], []
    for name, paragraphs in docs.items():
        doc_id = _id(name)
        title = (titles or {}).get(name) or name.removesuffix(".pdf").replace("_", " ")
        documents.append(Document(
            id=doc_id, file_name=name, title=title, pages=(pages or {}).get(name, 1), sha256=_id(name, "sha"), bytes=1, card=title,
            hierarchy_source="flat", page_sizes=[(612.0, 792.0)],
        ))
        sec_id = f"{doc_id}:s0"
        sections.append(Section(id=sec_id, doc=doc_id, title=title, level=0, parent=None, path=[title], page=1, bbox=None,
                                confidence=1.0, source="root"))
        doc_nodes = [Node(id=doc_id, layer=Layer.DOCUMENT, kind=NodeKind.DOCUMENT, doc=doc_id, text=title),
                     Node(id=sec_id, layer=Layer.DOCUMENT, kind=NodeKind.SECTION, doc=doc_id, text=title, section=sec_id)]
        edges.append(Edge(src=doc_id, dst=sec_id, kind=EdgeKind.CONTAINS))
        text_ids += [doc_id, sec_id]
        text_texts += [title, title]
        for i, para in enumerate(paragraphs):
            pid = f"{doc_id}:p{i}"
            doc_nodes.append(Node(id=pid, layer=Layer.COMPONENT, kind=NodeKind.PARAGRAPH, doc=doc_id, text=para,
                                  section=sec_id, parent=sec_id, role="paragraph", order=i))
            edges.append(Edge(src=sec_id, dst=pid, kind=EdgeKind.CONTAINS))
            text_ids.append(pid)
            text_texts.append(para)
            for j, sent in enumerate(s for s in re.split(r"(?<=[.!?])\s+", para) if s.strip()):
                sid = f"{pid}.{j}"
                doc_nodes.append(Node(id=sid, layer=Layer.SUBCOMPONENT, kind=NodeKind.SENTENCE, doc=doc_id, text=sent,
                                      section=sec_id, parent=pid, order=i))
                edges.append(Edge(src=pid, dst=sid, kind=EdgeKind.CONTAINS))
                sub_ids.append(sid)
                sub_texts.append(sent)
        if with_entities:
            found = extract_document_entities(doc_id, title, doc_nodes, RulesBackend())
            doc_nodes += found.nodes
            edges += found.edges
            sub_ids += [n.id for n in found.nodes]
            sub_texts += [entity_index_text(n) for n in found.nodes]
        nodes += doc_nodes
    embeddings = dict(zip(text_ids, service.encoders.text.encode(text_texts)))
    embeddings.update(zip(sub_ids, service.encoders.sub.encode(sub_texts)))
    text_dim, sub_dim = service.encoders.text.dim, service.encoders.sub.dim
    dims = {"documents": text_dim, "sections": text_dim, "components": text_dim, "subcomponents": sub_dim}
    return Corpus(documents, sections, nodes, embeddings, edges, [], dims=dims)


@pytest.fixture(scope="module")
def films(service) -> Corpus:
    return build_corpus(service, FILMS, titles=TITLES)


def _run(service, corpus, method, top_k=6, params=None, query=QUESTION):
    retriever = service.retriever(method, corpus)
    trace = Trace(method=method)
    return retriever.retrieve(query, top_k, dict(params or {}), trace), trace


def _docs(corpus, hits) -> list[str]:
    return [corpus.documents[corpus.nodes[h.node_id].doc].file_name for h in hits]


def _entity(corpus, name) -> str:
    return next(n.id for n in corpus.nodes.values() if n.kind == NodeKind.ENTITY and n.text == name)


def test_the_film_and_its_star_are_related_entities(films):
    film, star = _entity(films, "Kiss and Tell"), _entity(films, "Shirley Temple")
    assert star in {other for _e, other in films.neighbours(film, (EdgeKind.RELATION,))}
    # The star is one node for both documents, and it is mentioned by the bridge document.
    mentioned = {films.nodes[films.component_of(u)].doc for _e, u in films.neighbours(star, (EdgeKind.MENTIONS,))}
    assert {films.documents[d].file_name for d in mentioned} == {"Kiss_and_Tell_1945_film.pdf", BRIDGE_DOC}


def test_a_question_naming_the_film_reaches_the_stars_document(service, films):
    """The entity path lifts the star's page above its dense rank. At weight 0.3: at the default
    0.1 (chosen on the dev tune halves) the entity term on this six-page toy corpus does not lift it."""
    dense, _ = _run(service, films, "dense")
    hits, trace = _run(service, films, "mmgraph", params={"entity_weight": 0.3})
    dense_rank, rank = _docs(films, dense).index(BRIDGE_DOC), _docs(films, hits).index(BRIDGE_DOC)
    assert rank < dense_rank, (_docs(films, hits), _docs(films, dense))
    bridge = hits[rank]
    assert "Shirley Temple" in bridge.why and "Kiss and Tell" in bridge.why, bridge.why
    step = next(s for s in trace.steps if isinstance(s, EntityStep))
    assert step.mode == "broad" and step.entities[0].name == "Kiss and Tell"


def test_broad_follows_edges_out_of_the_matched_entities_and_narrow_does_not(service, films):
    params = {"top_entities": 1}
    broad_hits, broad_trace = _run(service, films, "mmgraph", top_k=len(FILMS), params={**params, "broad": 1})
    narrow_hits, narrow_trace = _run(service, films, "mmgraph", top_k=len(FILMS), params={**params, "broad": 0})
    broad = next(s for s in broad_trace.steps if isinstance(s, EntityStep))
    narrow = next(s for s in narrow_trace.steps if isinstance(s, EntityStep))
    assert (broad.mode, narrow.mode) == ("broad", "narrow")
    assert [e.name for e in broad.entities] == [e.name for e in narrow.entities] == ["Kiss and Tell"]
    anchor = broad.entities[0].node_id
    # Narrow: only edges with both ends among the matched entities (none, with one entity).
    assert narrow.edges == []
    # Broad: every relation of the matched entity, one hop.
    assert broad.edges and all(anchor in (e.src, e.dst) for e in broad.edges)
    assert _entity(films, "Shirley Temple") in {e.dst for e in broad.edges} | {e.src for e in broad.edges}
    reached_broad = {films.documents[films.nodes[c.node_id].doc].file_name for c in broad.components}
    reached_narrow = {films.documents[films.nodes[c.node_id].doc].file_name for c in narrow.components}
    assert BRIDGE_DOC in reached_broad and BRIDGE_DOC not in reached_narrow
    assert _docs(films, broad_hits).index(BRIDGE_DOC) < _docs(films, narrow_hits).index(BRIDGE_DOC)


def test_narrow_keeps_the_edges_among_the_matched_entities(service, films):
    _hits, trace = _run(service, films, "mmgraph", params={"top_entities": 4, "broad": 0})
    step = next(s for s in trace.steps if isinstance(s, EntityStep))
    matched = {e.node_id for e in step.entities}
    assert step.edges, "expected a relation among the matched entities"
    assert all(e.src in matched and e.dst in matched for e in step.edges)


def test_trace_round_trips_through_json(service, films):
    hits, trace = _run(service, films, "mmgraph", top_k=4)
    data = json.loads(trace.model_dump_json())
    again = Trace.model_validate(data)
    assert again == trace
    step = next(s for s in again.steps if isinstance(s, EntityStep))
    assert step.entities and step.edges and step.components
    assert all(e.relation for e in step.edges)
    assert trace.params["top_entities"] == 10 and trace.params["broad"] == 1
    assert len({h.node_id for h in hits}) == len(hits) == 4


def test_without_entities_it_is_the_hybrid_ranking_and_says_so(service):
    plain = build_corpus(service, FILMS, with_entities=False, titles=TITLES)
    assert plain.layers["entities"].ids == []
    hits, trace = _run(service, plain, "mmgraph", params={"alpha": 0.5})
    hybrid, _ = _run(service, plain, "hybrid")
    assert [h.node_id for h in hits] == [h.node_id for h in hybrid]
    assert any("no entities" in note for note in trace.notes)
    assert isinstance(trace.steps[0], EntityStep) and trace.steps[0].entities == []


def test_an_entity_many_components_mention_lends_each_of_them_less(service):
    """A fan club's 40 paragraphs all name Shirley Temple: she is mentioned by 42 components, so each
    gets sqrt(25 / 42) of her score as entity evidence (as a hub anchor passes on along its
    relations); a component none of whose entities is a hub keeps its score to the digit."""
    fan_club = [f"Shirley Temple fan club meeting {i} was held in hall {i} of the city." for i in range(40)]
    corpus = build_corpus(service, {**FILMS, "Shirley_Temple_Fan_Club.pdf": fan_club}, titles=TITLES)
    star = _entity(corpus, "Shirley Temple")
    mentions = {corpus.component_of(u) for u in corpus.neighbour_ids(star, (EdgeKind.MENTIONS,))}
    assert len(mentions) == 42  # the film, her own page and the 40 meetings
    query = "What government position did Shirley Temple hold?"

    def run(damp: int) -> tuple[dict[str, float], dict[str, str], dict[str, float]]:
        hits, trace = _run(service, corpus, "mmgraph", top_k=60, params={"damp_mentions": damp, "entity_weight": 0.2}, query=query)
        assert trace.params["damp_mentions"] == damp and len(hits) == len(FILMS) + len(fan_club)
        step = next(s for s in trace.steps if isinstance(s, EntityStep))
        return {h.node_id: h.score for h in hits}, {h.node_id: h.why for h in hits}, {e.node_id: e.score for e in step.entities}

    full, why, matched = run(0)
    damped, damped_why, _ = run(1)
    assert star in matched
    # A fan-club paragraph states no relation and names no other entity: the drop is the rule's.
    club = [c for c in mentions if why[c] == "mentions Shirley Temple (matched)"
            and corpus.documents[corpus.nodes.doc_of(c)].file_name == "Shirley_Temple_Fan_Club.pdf"]
    assert len(club) >= 20
    for c in club:
        assert full[c] - damped[c] == pytest.approx(0.2 * matched[star] * (1 - (25 / 42) ** 0.5), abs=2e-6)
        assert damped_why[c] == "mentions Shirley Temple (matched); a hub: 42 components name it, each gets 0.77 of its score"
    others = [c for c in full if c not in mentions]
    assert len(others) == len(FILMS) - 2 and all(damped[c] == full[c] for c in others)


def test_entities_are_matched_to_the_names_the_question_writes(service, films):
    """The paper matches the query's entities to the graph's. The question names "Kiss and Tell";
    matched whole, its words "government position" also lift "Chief of Protocol", which the
    question only describes (the answer, which no match should give away)."""
    def anchors(by_names: int, query: str = QUESTION) -> tuple[dict[str, float], Trace]:
        _hits, trace = _run(service, films, "mmgraph", params={"by_names": by_names}, query=query)
        step = next(s for s in trace.steps if isinstance(s, EntityStep))
        return {e.name: e.score for e in step.entities}, trace

    whole, whole_trace = anchors(0)
    named, named_trace = anchors(1)
    assert named_trace.params["by_names"] == 1
    assert any("names the question writes: Kiss and Tell" in n for n in named_trace.notes), named_trace.notes
    assert not any("names the question writes" in n for n in whole_trace.notes)
    assert max(named, key=named.get) == max(whole, key=whole.get) == "Kiss and Tell"
    assert named.get("Chief of Protocol", 0.0) < whole["Chief of Protocol"]
    # A question that writes no name is matched whole, as before.
    unnamed = "what government position was held by the star of the comedy?"
    assert anchors(1, unnamed)[0] == anchors(0, unnamed)[0]


def test_the_mention_index_holds_what_reading_each_mention_gives(service, films):
    """The components an entity is mentioned in, from the corpus-wide index (array maths once per
    corpus), are the ones reading its MENTIONS edges one by one gives: a sentence's mention counts
    for its paragraph."""
    from backend.retrieval.mmgraph import mention_index

    index = mention_index(films)
    comps = films.layers["components"]
    entities = [n for n in films.nodes if films.nodes.kind_of(n) == NodeKind.ENTITY]
    assert entities
    for ent in entities:
        by_reading = sorted({comps.dense.row[c] for c in (films.component_of(u) for u in films.neighbour_ids(ent, (EdgeKind.MENTIONS,)))
                             if c in comps.dense.row})
        assert index.of(films.nodes.rows[ent]).tolist() == by_reading, films.nodes.text_of(ent)
    star = films.nodes.rows[_entity(films, "Shirley Temple")]
    assert {films.nodes.doc_of(comps.ids[r]) for r in index.of(star)} == {
        d for d, doc in films.documents.items() if doc.file_name in ("Kiss_and_Tell_1945_film.pdf", BRIDGE_DOC)}
    # A node that mentions nothing (a paragraph) has no components.
    assert index.of(films.nodes.rows[comps.ids[0]]).tolist() == []


def test_the_trace_s_reached_components_are_the_best_by_rounded_score_ties_by_id():
    import heapq

    import numpy as np

    from backend.retrieval.mmgraph import Evidence

    final = np.array([0.5, 0.7000001, 0.7, 0.1, 0.7000004, 0.3, 0.69999995], dtype=np.float32)
    ids = ["g", "f", "e", "d", "c", "b", "a"]
    reached = [0, 1, 2, 4, 5, 6]
    evidence = Evidence(np.array(reached), np.array(reached) + 100)
    for k in (1, 3, 4, 10):
        expected = heapq.nsmallest(k, ((-round(float(final[r]), 6), ids[r]) for r in reached))
        assert [(score, ids[r]) for score, r in evidence.best(final, ids, k)] == [(-neg, i) for neg, i in expected], k
    assert evidence.entity_of(4) == 104 and evidence.entity_of(3) is None and evidence.entity_of(99) is None
    assert Evidence(np.zeros(0, dtype=np.int64), np.zeros(0, dtype=np.int64)).best(final, ids, 5) == []


def test_the_components_stating_a_followed_relation_are_those_mentioning_both_of_its_ends():
    """Looked up from each relation's end with fewer mentions (one hub, many partners; an entity
    that mentions nothing), the marking gives what intersecting the two ends' components for every
    relation gives, a relation of an entity with itself included."""
    import numpy as np

    from backend.retrieval.mmgraph import MMGraphRetriever

    rng = np.random.default_rng(7)
    n_comps, n_ents = 200, 40
    mentioned = [np.unique(rng.integers(0, n_comps, rng.integers(0, 30))).astype(np.int64) for _ in range(n_ents)]
    mentioned[3] = mentioned[3][:0]
    names = [f"e{i}" for i in range(n_ents)]
    position = {e: i for i, e in enumerate(names)}
    followed = {("e0", f"e{j}", "rel"): 0.5 for j in range(1, 25)}  # a hub
    followed |= {(f"e{i}", f"e{i + 1}", "next"): 0.1 for i in range(25, 39)}  # a chain
    followed |= {("e30", "e30", "self"): 0.2, ("e7", "e0", "back"): 0.3, ("e3", "e0", "empty"): 0.1}
    expected = np.zeros(n_comps, dtype=bool)
    for s, d, _rel in followed:
        expected[np.intersect1d(mentioned[position[s]], mentioned[position[d]])] = True
    pairs = np.array(sorted({(position[s], position[d]) for s, d, _rel in followed}))
    who = np.repeat(np.arange(n_ents), [len(m) for m in mentioned])
    got = MMGraphRetriever._stating(who, np.concatenate(mentioned), pairs, n_comps)
    assert expected.any() and (got == expected).all()


def test_followed_edges_keep_each_edge_once_with_its_best_score_and_order_as_the_trace_did():
    import numpy as np

    from backend.graph.edges import EdgeTable
    from backend.retrieval.mmgraph import Followed
    from backend.types import Edge

    names = ["a", "b", "c", "d"]
    table = EdgeTable([Edge(src=s, dst=d, kind=EdgeKind.RELATION, provenance=r)
                       for s, d, r in [("a", "b", "x"), ("a", "b", "y"), ("c", "a", "x"), ("d", "d", "z")]], names)
    src, dst, prov = (np.array(v) for v in ([0, 0, 2, 3, 0], [1, 1, 0, 3, 1], [0, 1, 0, 2, 0]))
    followed = Followed.of([(src[:3], dst[:3], prov[:3], np.full(3, 0.2)), (src[3:], dst[3:], prov[3:], np.array([0.2, 0.5]))])
    reference: dict[tuple[str, str, str], float] = {}
    for s, d, p, sc in [("a", "b", "x", 0.2), ("a", "b", "y", 0.2), ("c", "a", "x", 0.2), ("d", "d", "z", 0.2), ("a", "b", "x", 0.5)]:
        reference[(s, d, p)] = max(reference.get((s, d, p), 0.0), sc)
    for k in (1, 2, 3, 10):
        expected = [(s, d, r, sc) for (s, d, r), sc in sorted(reference.items(), key=lambda kv: (-kv[1], kv[0]))[:k]]
        assert followed.best(table, k) == expected, k
    order = np.array([3, 2, 0, 1])  # node rows of the reached entities, in their order
    assert set(map(tuple, followed.pairs(order).tolist())) == {(2, 3), (1, 2), (0, 0)}
    assert Followed.of([]).best(table, 5) == [] and Followed.of([]).pairs(order).shape == (0, 2)


PAGES = {
    "DISCLOSE_Act.pdf": ["The DISCLOSE Act was a bill introduced in the U.S. House of Representatives by Chris Van Hollen on "
                         "April 29, 2010. It would have amended campaign finance law."],
    "Chris_Van_Hollen.pdf": ["Chris Van Hollen is an American politician serving as the junior United States Senator from "
                             "Maryland since 2017."],
    "Darlings_Waterfront_Pavilion.pdf": ["Darling's Waterfront Pavilion is an open-air amphitheatre located in Bangor, Maine."],
    "Bangor_Maine.pdf": ["Bangor is a city in the U.S. state of Maine, known as the Queen City."],
    "Maine.pdf": ["Maine is the northernmost state in New England."],
    "Senate_Careers.pdf": ["Many a political position is held by a senator before another political position."],
    "Political_Offices.pdf": ["Other political positions include governor, mayor and member of the House."],
    "Nicknames.pdf": ["The nickname of a city is often given by its residents, such as the Windy City."],
}
PAGE_TITLES = {"Bangor_Maine.pdf": "Bangor, Maine", "Darlings_Waterfront_Pavilion.pdf": "Darling's Waterfront Pavilion"}
INTRODUCED = "What other political position did the person who introduced the DISCLOSE Act hold?"


@pytest.fixture(scope="module")
def pages(service) -> Corpus:
    return build_corpus(service, PAGES, titles=PAGE_TITLES)


def _rank(corpus, hits, file_name) -> int:
    return _docs(corpus, hits).index(file_name)


def test_the_page_of_the_matched_entity_names_whom_no_extracted_relation_reaches(service, pages):
    """The DISCLOSE Act's page names Chris Van Hollen, but the rules extractor relates him to the
    House, not to the act: only the act's own page reaches him, and then his own page is lifted."""
    act, him = _entity(pages, "DISCLOSE Act"), _entity(pages, "Chris Van Hollen")
    assert him not in {other for _e, other in pages.neighbours(act, (EdgeKind.RELATION,))}
    plain, _ = _run(service, pages, "mmgraph", top_k=len(PAGES), params={"homes": 0}, query=INTRODUCED)
    hits, trace = _run(service, pages, "mmgraph", top_k=len(PAGES), query=INTRODUCED)
    assert trace.params["homes"] == 0.3
    assert _rank(pages, hits, "Chris_Van_Hollen.pdf") < _rank(pages, plain, "Chris_Van_Hollen.pdf")
    him_hit = hits[_rank(pages, hits, "Chris_Van_Hollen.pdf")]
    before = plain[_rank(pages, plain, "Chris_Van_Hollen.pdf")]
    step = next(s for s in trace.steps if isinstance(s, EntityStep))
    assert step.entities[0].name == "DISCLOSE Act" and step.entities[0].score == 1.0
    # His own page gets 0.3 * DECAY * the act's match, on top of what it had.
    assert him_hit.score - before.score == pytest.approx(0.3 * 0.8 * 1.0, abs=2e-6)
    why = him_hit.why
    assert why.endswith("the page of Chris Van Hollen (named on the page of DISCLOSE Act)"), why
    note = next(n for n in trace.notes if n.startswith("Own pages of the reached entities"))
    assert note.index("DISCLOSE Act (1.00)") < note.index("Chris Van Hollen (0.80)"), note
    # Without the term nothing says "the page of".
    assert not any("the page of" in h.why for h in plain)


def test_a_name_before_its_qualifier_is_that_page_only_while_the_qualifier_is_reached_too(pages):
    """"Bangor" alone is no hop to "Bangor, Maine" (mentions.py asks for the qualifier written
    beside it); reached with Maine it is."""
    import numpy as np

    from backend.retrieval.mmgraph import entity_homes

    homes = entity_homes(pages)
    bangor, maine = (pages.nodes.rows[_entity(pages, n)] for n in ("Bangor", "Maine"))

    def found(rows, values):
        return {pages.documents[homes.doc_ids[d]].file_name: (score, pages.nodes.text_of(pages.nodes.ids[e]))
                for score, d, e in homes.best(np.array(rows), np.array(values))}

    assert found([bangor], [0.9]) == {}
    assert found([bangor, maine], [0.9, 0.5]) == {"Bangor_Maine.pdf": (0.9, "Bangor"), "Maine.pdf": (0.5, "Maine")}
    assert found([maine], [0.5]) == {"Maine.pdf": (0.5, "Maine")}


def test_the_city_a_pavilion_is_in_is_reached_as_its_own_page(service, pages):
    query = "What is the nickname of the city where Darling's Waterfront Pavilion is located?"
    plain, _ = _run(service, pages, "mmgraph", top_k=len(PAGES), params={"homes": 0}, query=query)
    hits, _ = _run(service, pages, "mmgraph", top_k=len(PAGES), query=query)
    assert _rank(pages, hits, "Bangor_Maine.pdf") == 1 < _rank(pages, plain, "Bangor_Maine.pdf")
    assert "the page of Bangor (related to Darling's Waterfront Pavilion)" in hits[1].why, hits[1].why


def test_a_long_document_is_no_entity_s_own_page(service):
    """A 40-page document titled "DISCLOSE Act" (a filing that names it on every page) says nothing
    about which of its pages answers: it gets no own-page term, and its page names no one."""
    corpus = build_corpus(service, PAGES, titles=PAGE_TITLES, pages={"DISCLOSE_Act.pdf": 40})
    plain, _ = _run(service, corpus, "mmgraph", top_k=len(PAGES), params={"homes": 0}, query=INTRODUCED)
    hits, trace = _run(service, corpus, "mmgraph", top_k=len(PAGES), query=INTRODUCED)
    act = next(h for h in hits if _docs(corpus, [h]) == ["DISCLOSE_Act.pdf"])
    assert "the page of" not in act.why
    assert not any("named on the page of" in h.why for h in hits)
    assert act.score == next(h.score for h in plain if h.node_id == act.node_id)


CEO_PAGES = {
    "Bordan_Tkachuk.pdf": ["Bordan Tkachuk is a British business executive, the former CEO of Viglen, also known from his "
                           "appearances on the BBC version of The Apprentice."],
    "Viglen.pdf": ["Viglen Ltd provides IT products and services, including storage systems, servers and desktops."],
    "Nerdist_Industries.pdf": ["Nerdist Industries is a company that provides podcasts and videos."],
    "Canyon_Creek.pdf": ["Canyon Creek Food Company provides frozen products to grocers."],
    "Apprentice.pdf": ["The Apprentice is a BBC reality show in which candidates compete for a job with Lord Sugar."],
}
CEO_QUESTION = "Bordan Tkachuk was the CEO of a company that provides what sort of products?"


def test_a_page_whose_title_the_matched_entity_s_page_writes_is_reached_when_no_entity_names_it(service):
    """The rules extractor takes "CEO of Viglen" on Bordan Tkachuk's page as one entity, whose own
    page there is none, so the entities his page names do not lead to Viglen's page; the title index reads "Viglen" on Bordan Tkachuk's
    page all the same, and Viglen's page is reached as its entity would be (DECAY * the match)
    (dev-hotpot-pdf tune: mmgraph R@5 0.833 -> 0.844, All@10 0.885 -> 0.917)."""
    corpus = build_corpus(service, CEO_PAGES)
    page = next(n for n in corpus.nodes.values()
                if n.layer == Layer.COMPONENT and corpus.documents[n.doc].file_name == "Bordan_Tkachuk.pdf")
    named = {corpus.nodes.text_of(e) for e in corpus.neighbour_ids(page.id, (EdgeKind.MENTIONS,))}
    assert "CEO of Viglen" in named and "Viglen" not in named, sorted(named)
    hits, trace = _run(service, corpus, "mmgraph", top_k=len(CEO_PAGES), query=CEO_QUESTION)
    assert trace.params["broad"] == 1
    plain, _ = _run(service, corpus, "mmgraph", top_k=len(CEO_PAGES), params={"homes": 0}, query=CEO_QUESTION)
    assert _rank(corpus, hits, "Viglen.pdf") < _rank(corpus, plain, "Viglen.pdf"), (_docs(corpus, hits), _docs(corpus, plain))
    viglen = hits[_rank(corpus, hits, "Viglen.pdf")]
    assert viglen.why.endswith("a page whose title the page of Bordan Tkachuk writes"), viglen.why
    assert any(n.startswith("Pages whose title a matched entity's own page writes:") and "Viglen (0.80)" in n
               for n in trace.notes), trace.notes
    before = next(h for h in plain if h.node_id == viglen.node_id)
    assert viglen.score - before.score == pytest.approx(0.3 * 0.8 * 1.0, abs=2e-6)

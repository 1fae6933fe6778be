"""Evidence packing under a token budget (HiKEY Algorithm 1) and the reader's answers."""

from __future__ import annotations

import re

import pytest

from backend.packing import TokenBudgetPacker
from backend.retrieval.base import get_retriever_class
from backend.types import Layer, NodeKind, Trace

QUESTION = "Which district had the largest canopy gain?"


@pytest.fixture(scope="module")
def ranked(sample_corpus, service):
    retriever = get_retriever_class("hikey")(sample_corpus, service.encoder, service.settings)
    hits = retriever.retrieve(QUESTION, 10, {}, Trace(method="hikey"))
    assert len(hits) == 10
    return hits


@pytest.fixture(scope="module")
def packer(sample_corpus, service):
    return TokenBudgetPacker(sample_corpus, service.encoder.count_tokens, service.settings.reader.associates_per_anchor)


def _chain(corpus, node_id: str) -> list[str]:
    """Section ids from the document root down to the node's section."""
    chain, sec = [], corpus.nodes[node_id].section
    while sec:
        chain.append(sec)
        sec = corpus.sections[sec].parent
    return chain[::-1]


@pytest.mark.parametrize("budget", [0, 60, 200, 600, 2048, 8000])
def test_pack_respects_the_budget(budget, packer, ranked, sample_corpus):
    pack = packer.pack(QUESTION, ranked, budget)
    assert pack.budget == budget
    assert pack.tokens <= budget
    assert pack.tokens == sum(u.tokens for u in pack.units)
    ids = [u.node_id for u in pack.units]
    assert len(ids) == len(set(ids)), "a unit is packed once"
    if budget == 0:
        assert pack.units == [] and pack.tokens == 0
    for u in pack.units:
        if u.role == "header":
            assert u.node_id in sample_corpus.sections
        else:
            assert sample_corpus.nodes[u.node_id].layer == Layer.COMPONENT
            assert u.path == sample_corpus.section_path(u.node_id)


def test_bigger_budgets_pack_more(packer, ranked):
    sizes = [len(packer.pack(QUESTION, ranked, b).units) for b in (200, 600, 2048, 8000)]
    assert sizes == sorted(sizes) and sizes[0] < sizes[-1]
    assert sizes[0] > 0


@pytest.mark.parametrize("budget", [300, 2048])
def test_anchors_come_with_their_headers_and_siblings_share_their_section(budget, packer, ranked, sample_corpus):
    pack = packer.pack(QUESTION, ranked, budget)
    anchors = [u for u in pack.units if u.role == "anchor"]
    assert anchors
    # Anchors follow the ranking (a subcomponent hit stands for its component).
    ranked_components = []
    for h in ranked:
        c = sample_corpus.component_of(h.node_id)
        if c not in ranked_components:
            ranked_components.append(c)
    order = [ranked_components.index(a.node_id) for a in anchors]
    assert order == sorted(order)
    headers_so_far: set[str] = set()
    for u in pack.units:
        if u.role == "header":
            headers_so_far.add(u.node_id)
        elif u.role == "anchor":
            missing = set(_chain(sample_corpus, u.node_id)) - headers_so_far
            assert not missing, f"anchor {u.node_id} packed without its headers {missing}"
        elif u.role == "sibling":
            assert u.anchor is not None
            assert sample_corpus.nodes[u.node_id].section == sample_corpus.nodes[u.anchor].section
        elif u.role == "associate":
            assert sample_corpus.nodes[u.node_id].doc == sample_corpus.nodes[u.anchor].doc
            assert sample_corpus.nodes[u.node_id].kind in (NodeKind.TABLE, NodeKind.FIGURE)


def test_every_ranked_anchor_is_packed_before_the_context_of_a_better_one(packer, ranked, sample_corpus):
    """A budget that holds the ranked anchors and their headers, and little more, holds them all:
    the first anchor's siblings do not crowd out the third (two manuals in one workspace put
    R-intro's "2.1 Vectors and assignment" third, a near tie, and its answer never reached the reader)."""
    anchors = list(dict.fromkeys(sample_corpus.component_of(h.node_id) for h in ranked))
    headers = dict.fromkeys(s for a in anchors for s in _chain(sample_corpus, a))
    need = sum(packer._unit_tokens(a) for a in anchors) + sum(
        packer.count_tokens(sample_corpus.sections[h].title) + 4 for h in headers)
    smallest_sibling = min(packer._unit_tokens(s) for a in anchors
                           for s in sample_corpus.section_members(sample_corpus.nodes[a].section or "") if s not in anchors)
    pack = packer.pack(QUESTION, ranked, need + smallest_sibling)
    assert [u.node_id for u in pack.units if u.role == "anchor"] == anchors
    assert any(u.role == "sibling" for u in pack.units)  # what is left goes to the context, anchor by anchor
    # Listed anchor by anchor: an anchor's siblings and associates come after it and before the next anchor.
    current = None
    for u in pack.units:
        if u.role == "anchor":
            current = u.node_id
        elif u.role in ("sibling", "associate"):
            assert u.anchor == current


def test_serialised_pack_follows_the_hikey_format(packer, ranked, sample_corpus):
    pack = packer.pack(QUESTION, ranked, 2048)
    text = pack.text
    assert text.startswith("# Global Context\n[DOC_META]\nID: ")
    assert "[SCOPE] " in text
    units = [u for u in pack.units if u.role != "header"]
    for u in units:
        node = sample_corpus.nodes[u.node_id]
        doc = sample_corpus.documents[node.doc]
        assert re.search(rf"\[UNIT id={re.escape(u.node_id)} \| Type=(Text|Table|Figure) \| Page={node.page}\]", text), u.node_id
        assert f"ID: {doc.file_name} | Title: {doc.title}" in text
    assert text.count("[UNIT id=") == len(units)
    assert text.count("# Hierarchy Anchor") == sum(1 for u in units if u.role == "anchor")
    # Tables carry their caption line.
    tables = [u for u in units if sample_corpus.nodes[u.node_id].kind == NodeKind.TABLE]
    for u in tables:
        assert f"Caption: {sample_corpus.nodes[u.node_id].context}" in text


@pytest.mark.parametrize(
    "question, number",
    [
        ("How many hours above 30 °C did the Old Quay sensors record in July 2023?", "96"),
        ("How many heat-related ambulance call-outs were there in summer 2022?", "232"),
    ],
)
def test_reader_answers_a_number_and_cites_where_it_is(service, sample_workspace, sample_corpus, question, number):
    result = service.ask(sample_workspace, question, method="hikey", top_k=10)
    answer = result.answer
    assert not answer.abstained
    assert re.search(rf"(?<![\d.,]){number}(?![\d.,]*\d)", answer.text), answer.text
    assert answer.citations
    cited = [c for c in answer.citations if re.search(rf"\b{number}\b", c.text)]
    assert cited, [c.text for c in answer.citations]
    for c in answer.citations:
        node = sample_corpus.nodes[c.node_id]
        assert node.kind in (NodeKind.SENTENCE, NodeKind.ROW, NodeKind.OBJECT)
        assert c.text == node.text and c.page == node.page and c.bbox == node.bbox
        assert c.doc == sample_corpus.documents[node.doc].file_name
        assert c.section_path == sample_corpus.section_path(c.node_id)
    assert [c.n for c in answer.citations] == list(range(1, len(answer.citations) + 1))


def test_reader_abstains_on_an_unrelated_question(service, sample_workspace):
    result = service.ask(sample_workspace, "Who won the 1998 FIFA World Cup final?", method="hikey", top_k=10)
    assert result.answer.abstained is True
    assert result.answer.text == "not enough evidence"
    assert result.answer.citations == []
    assert result.results, "retrieval still shows what it found"


def test_ask_result_round_trips_through_json(service, sample_workspace):
    from backend.types import AskResult

    result = service.ask(sample_workspace, QUESTION, method="hybrid", top_k=5)
    assert AskResult.model_validate_json(result.model_dump_json()) == result
    assert [r.rank for r in result.results] == list(range(1, len(result.results) + 1))
    assert result.pack.tokens <= result.pack.budget
    assert set(result.timings_ms) >= {"retrieve", "pack", "read", "total"}


BRIDGE_DOCS = {
    "Paper_Lanterns.pdf": ["Paper Lanterns is a 1951 American comedy film starring then 19-year-old Odile Marchetti as Mina "
                           "Corvell. In the film, two sisters cause their parents much concern when they start to become "
                           "interested in boys."],
    "Odile_Marchetti.pdf": ["Odile Marchetti Vance (May 2, 1932 – June 8, 2011) was an American actress, singer and diplomat. "
                            "As an adult, she was named ambassador to Iceland and later served as Chief of Protocol of the "
                            "United States."],
    "Mina_Corvell_Returns.pdf": ["Mina Corvell Returns is a 1953 American comedy film directed by Harlan Brisk. It is a sequel "
                                 "to the 1951 film Paper Lanterns."],
    "Harlan_Brisk.pdf": ["Harlan Brisk was an American film director born in Ohio."],
}
BRIDGE_QUESTION = "What government position was held by the woman who portrayed Mina Corvell in the film Paper Lanterns?"


@pytest.mark.parametrize("method", ["strata", "lilac"])
def test_a_bridge_question_is_answered_from_the_page_its_first_hop_names(service, method):
    """The rules split the question in two; the first hop's best sentence names Odile Marchetti, and
    the reader reads the asking subquery on her page (reader.on_bridge_pages), whose sentence about
    the post shares no word with the question. Before, it answered "Odile Marchetti" from the film's page."""
    from backend.reader import subqueries_of
    from tests.fakes import build_corpus, pipeline_for

    corpus = build_corpus(service, BRIDGE_DOCS)
    pipeline = pipeline_for(service, corpus)
    result = pipeline.run(service.retriever(method, corpus, pipeline.llm), method, BRIDGE_QUESTION, 10, {}, 2048)
    assert len(subqueries_of(result.trace)) == 2
    answer = result.answer
    assert not answer.abstained and "Marchetti" not in answer.text, answer.text
    assert answer.citations[0].doc == "Odile_Marchetti.pdf" and "Chief of Protocol" in answer.citations[0].text


UNSPLIT_DOCS = {
    "Lantern_Song.pdf": ["Lantern Song is a play by Harlan Brisk and Edith Rowe. The comedy follows a clerk who finds he can "
                         "pick the winning horse as long as he never bets."],
    "Harlan_Brisk.pdf": ["Harlan Brisk (June 25, 1887 – January 31, 1960) was an American theatre producer, director and "
                         "playwright whose career spanned seven decades."],
    "Milo_Fenner.pdf": ["Milo Fenner (born September 3, 1967) is a playwright born in Roanoke, Virginia."],
    "Ada_Quint.pdf": ["Ada Quint is an English playwright born in Birkenhead on 3 August 1972."],
    "Paper_Lanterns.pdf": BRIDGE_DOCS["Paper_Lanterns.pdf"],
    "Odile_Marchetti.pdf": BRIDGE_DOCS["Odile_Marchetti.pdf"],
}


def test_a_question_left_unsplit_is_read_on_the_page_its_best_unit_names_when_that_unit_lacks_the_answer(service):
    """"... a play by a playwright born in which year?" is not split by the rules. Its best sentence
    names Harlan Brisk but holds no date; other playwrights' pages hold dates and score better than
    Brisk's page, which shares few words with the question. The reader reads the named page
    (reader.on_bridge_pages with no subqueries). When the best unit holds the asked type itself
    ("When was Paper Lanterns released?"), a page it names is no hop: Odile Marchetti's birth date
    is not the film's year."""
    from backend.reader import subqueries_of
    from tests.fakes import build_corpus, pipeline_for

    corpus = build_corpus(service, UNSPLIT_DOCS)
    pipeline = pipeline_for(service, corpus)
    retriever = service.retriever("strata", corpus, pipeline.llm)
    result = pipeline.run(retriever, "strata", "Lantern Song is a play by a playwright born in which year?", 10, {}, 2048)
    assert len(subqueries_of(result.trace)) < 2
    assert result.answer.text == "1887" and result.answer.citations[0].doc == "Harlan_Brisk.pdf", result.answer
    assert "read on the page of Harlan Brisk" in result.answer.reason
    released = pipeline.run(retriever, "strata", "In which year was the film Paper Lanterns released?", 10, {}, 2048)
    assert released.answer.text == "1951" and released.answer.citations[0].doc == "Paper_Lanterns.pdf", released.answer


ROLE_DOCS = {
    "Mira_Tolson.pdf": ["Mira Tolson is an American actress, comedian and writer. Tolson is also currently a writer for the "
                        "streaming comedy series Harbour Lights, produced by Ada Rowe."],
    "Harbour_Lights.pdf": ["Harbour Lights is an American television sitcom created by Ada Rowe, starring Nell Quade in the "
                           "title role, that has streamed since March 6, 2015."],
    "Nell_Quade.pdf": ["Nell Quade (born May 2, 1980) is an American actress and comedian. She gained prominence as a "
                       "receptionist on a workplace comedy for five seasons."],
    "Ada_Rowe.pdf": ["Ada Rowe (born June 1, 1962) is an American writer and producer."],
}


def test_a_role_the_asking_subquery_asks_about_is_read_one_page_past_the_bridge(service):
    """"When was the star of the comedy series that Mira Tolson writes for born?": the first hop
    names Harbour Lights (the bridge), whose page holds a date of its own and names its star
    ("starring Nell Quade"); the asking subquery asks the star's birth, read on her page
    (reader.role_pages)."""
    from backend.reader import subqueries_of
    from tests.fakes import build_corpus, pipeline_for

    corpus = build_corpus(service, ROLE_DOCS)
    pipeline = pipeline_for(service, corpus)
    result = pipeline.run(service.retriever("strata", corpus, pipeline.llm), "strata",
                          "When was the star of the comedy series that Mira Tolson writes for born?", 10, {}, 2048)
    assert len(subqueries_of(result.trace)) == 2
    assert result.answer.text == "May 2, 1980" and result.answer.citations[0].doc == "Nell_Quade.pdf", result.answer
    # The bridge page's units name the star after "starring"; a role that is itself what is asked
    # ("Who is the star of the comedy series") is no hop past the bridge.
    from backend.reader import EvidenceUnit
    from backend.reader import EvidenceReader
    from backend.retrieval.titles import title_index

    reader = EvidenceReader(corpus, pipeline.llm, 0.35)
    docs = {doc.file_name: d for d, doc in corpus.documents.items()}
    bridge = {docs["Harbour_Lights.pdf"]: "Harbour Lights"}
    units = [EvidenceUnit(id=n.id, kind=n.kind.value, text=n.text, score=0.5, cosine=0.5, coverage=0.2, role="anchor")
             for n in corpus.nodes.values() if n.doc == docs["Harbour_Lights.pdf"] and n.text]
    titles = title_index(corpus)
    assert reader.role_pages("When was the star of the comedy series born", units, bridge, titles) == [docs["Nell_Quade.pdf"]]
    assert reader.role_pages("Who is the star of the comedy series", units, bridge, titles) == []

"""A question asked of chosen documents only (backend/stages/scope.py), through the query
pipeline every entry point uses: the results come from those documents whatever the method, the
method's own order first, and a name the workspace does not hold is refused with a message."""

from __future__ import annotations

import pytest

from backend.errors import StrataError
from backend.retrieval.base import get_retriever_class, method_names
from backend.stages.scope import within_scope
from backend.types import Trace
from backend.query import MAX_SCOPE, checked_scope
from tests.fakes import FILMS, FILMS_QUESTION, build_corpus, doc_of, pipeline_for, with_approximate_layer

GREY = "Grey_Morning.pdf"


@pytest.fixture(scope="module")
def films(service):
    return build_corpus(service, FILMS)


def _ask(service, corpus, method: str, scope: frozenset[str], top_k: int = 5):
    pipeline = pipeline_for(service, corpus)
    retriever = get_retriever_class(method)(corpus, service.encoder, service.settings, sub_encoder=service.encoders.sub,
                                            llm=pipeline.llm)
    return pipeline.run(retriever, method, FILMS_QUESTION, top_k, {}, 512, scope)


def test_documents_are_named_by_file_name_or_id_and_an_unknown_one_is_refused(films):
    by_name = {d.file_name: d.id for d in films.documents.values()}
    assert checked_scope(films, None) == frozenset() == checked_scope(films, ["", "  "])
    assert checked_scope(films, [GREY, by_name["Red_Valley.pdf"], GREY]) == {by_name[GREY], by_name["Red_Valley.pdf"]}
    with pytest.raises(StrataError, match=r"Not in this workspace: 'Blue_Hour.pdf'\. Name documents by their file name"):
        checked_scope(films, [GREY, "Blue_Hour.pdf"])
    with pytest.raises(StrataError, match="at most"):
        checked_scope(films, [f"d{i}.pdf" for i in range(MAX_SCOPE + 1)])


@pytest.mark.parametrize("method", method_names())
def test_every_method_answers_from_the_chosen_documents_only(service, films, method):
    whole = _ask(service, films, method, frozenset())
    assert {r.doc for r in whole.results} != {GREY}  # asked of everything, the film's own pages lead
    scope = checked_scope(films, [GREY])
    scoped = _ask(service, films, method, scope)
    assert scoped.results and {r.doc for r in scoped.results} == {GREY}
    assert {c.doc for c in scoped.answer.citations} <= {GREY}
    assert any("Asked of 1 chosen document(s)" in n for n in scoped.trace.notes)
    step = next(s for s in scoped.trace.steps if getattr(s, "index", "") == "scope")
    assert [h.node_id for h in step.candidates] == [r.node_id for r in scoped.results]


def test_the_methods_own_order_comes_first_and_the_scopes_hybrid_ranking_fills_the_rest(service, films):
    names = ["Moonlit_Harbor.pdf", "Elena_Varga.pdf", GREY]
    scope = checked_scope(films, names)
    whole = _ask(service, films, "hybrid", frozenset(), top_k=50)
    scoped = _ask(service, films, "hybrid", scope, top_k=50)
    in_scope = [r.node_id for r in whole.results if doc_of(films, r.node_id) in names]
    assert [r.node_id for r in scoped.results][: len(in_scope)] == in_scope
    # Every component of the chosen documents is reachable, each once.
    comps = [c for c in films.layers["components"].ids if doc_of(films, c) in names]
    assert sorted(r.node_id for r in scoped.results) == sorted(comps)


def test_the_fill_reads_the_chosen_rows_exact_cosines_on_an_approximate_layer(service, films):
    # A 100k-page workspace's layer is approximate: outside its few dense candidates a row's cosine
    # is a floor, so a fill from the layer's own scores would rank the scope by BM25 alone.
    approx = with_approximate_layer(films, "components", candidates=1)
    question = "Which war drama was filmed in the north?"
    scope = checked_scope(films, [GREY, "Red_Valley.pdf", "Night_Train.pdf", "Cinema_Guide.pdf"])
    qvec = service.encoder.encode([question])[0]
    got = within_scope(approx, [], scope, question, qvec, 10, Trace(method="hybrid"))
    exact = within_scope(films, [], scope, question, qvec, 10, Trace(method="hybrid"))
    assert [h.node_id for h in got] == [h.node_id for h in exact]
    assert [h.score for h in got] == pytest.approx([h.score for h in exact], abs=0.01)  # its stored vectors are compressed

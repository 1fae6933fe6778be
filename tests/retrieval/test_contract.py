"""The one contract every registered retrieval method keeps (run over the whole registry), alone
and through the query pipeline with its stages, plus known answers on the sample corpus and the
errors for empty workspaces and unknown methods."""

from __future__ import annotations

import json

import pytest

from backend.errors import EmptyCorpusError, UnknownMethodError
from backend.graph.store import WorkspaceStore
from backend.retrieval.base import get_retriever_class, method_names
from backend.stages import select_stages
from backend.types import Layer, ProfileStep, StageStep, Trace

METHODS = method_names()
QUERIES = [
    "How many Landsat scenes were used?",
    "Which district had the largest canopy gain?",
    "tree survival after the first summer",
    "What budget was proposed for the second phase?",
]


def _retrieve(corpus, service, method: str, query: str, top_k: int, params: dict | None = None):
    retriever = service.retriever(method, corpus)
    trace = Trace(method=method)
    return retriever.retrieve(query, top_k, dict(params or {}), trace), trace


def test_the_registry_is_not_empty():
    assert {"bm25", "dense", "hybrid", "hikey", "lilac", "fif", "mirag", "mmgraph", "strata"} <= set(METHODS)
    assert len(METHODS) == len(set(METHODS))


@pytest.mark.parametrize("method", METHODS)
def test_retriever_contract(method, sample_corpus, service):
    cls = get_retriever_class(method)
    assert cls.name == method and cls.description
    for query in QUERIES:
        for top_k in (1, 5, 12):
            hits, trace = _retrieve(sample_corpus, service, method, query, top_k)
            assert 0 < len(hits) <= top_k, (method, query, top_k)
            ids = [h.node_id for h in hits]
            assert len(ids) == len(set(ids)), f"{method}: duplicate ids"
            scores = [h.score for h in hits]
            assert all(a >= b for a, b in zip(scores, scores[1:])), f"{method}: scores not descending {scores}"
            for h in hits:
                node = sample_corpus.nodes.get(h.node_id)
                assert node is not None, h.node_id
                assert node.layer in (Layer.COMPONENT, Layer.SUBCOMPONENT), node.kind
            assert trace.method == method and trace.steps, f"{method}: empty trace"
            assert Trace.model_validate_json(trace.model_dump_json()) == trace
            json.loads(trace.model_dump_json())


STAGE_QUERIES = QUERIES + [
    "What does Table 2 on page 3 of the data annex show?",  # a page and a labelled unit named
    "What does \"Larkhaven City Council\" say about tree canopy in the policy brief?",
]


def _check_moves(step: StageStep, before: list[str], after: list[str]) -> None:
    """The step's moves are the units whose order changed between the rankings it stood between:
    each at its recorded rank in each, and the units it does not list in the same order in both."""
    moved = {m.node_id for m in step.moves}
    for m in step.moves:
        assert (m.from_rank is None) == (m.node_id not in before), (step.name, m)
        assert (m.to_rank is None) == (m.node_id not in after), (step.name, m)
        assert m.from_rank is None or before[m.from_rank - 1] == m.node_id, (step.name, m)
        assert m.to_rank is None or after[m.to_rank - 1] == m.node_id, (step.name, m)
    assert [n for n in before if n not in moved] == [n for n in after if n not in moved], step.name
    assert set(before) - moved == set(after) - moved, step.name


@pytest.mark.parametrize("method", METHODS)
def test_every_method_runs_through_the_query_pipeline_with_stages_none_and_default(method, sample_corpus, service, monkeypatch):
    """The whole pipeline, as the app runs it: with stages none the trace holds no stage step (nor a
    profile) but the scope filter's, when documents are chosen; with default each stage that moved a unit has its step, whose moves are consistent
    with the rankings before and after it (a spy records them)."""
    import backend.query as query

    seen: list[tuple[str, list[str], list[str]]] = []
    real = query.run_stage

    def spy(stage, context, hits):
        out = real(stage, context, hits)
        seen.append((stage.name, [h.node_id for h in hits], [h.node_id for h in out]))
        return out

    monkeypatch.setattr(query, "run_stage", spy)
    pipeline = service._pipeline(sample_corpus, None, None)
    cls = get_retriever_class(method)
    for query_text in STAGE_QUERIES:
        for scope in (frozenset(), frozenset(list(sample_corpus.documents)[:1])):
            seen.clear()
            hits, trace = pipeline.retrieve(service.retriever(method, sample_corpus, pipeline.llm), method, query_text, 10, {},
                                            scope, "none")
            assert hits and trace.steps
            # none: no stage and no profile; the user's own filter to chosen documents still shows
            assert {s.name for s in trace.steps if isinstance(s, (StageStep, ProfileStep))} <= ({"scope"} if scope else set())
            assert [name for name, _, _ in seen] == (["scope"] if scope else [])
            seen.clear()
            hits, trace = pipeline.retrieve(service.retriever(method, sample_corpus, pipeline.llm), method, query_text, 10, {},
                                            scope, "default")
            assert hits and isinstance(trace.steps[0], ProfileStep)
            expected = [s.name for s in select_stages("default", cls.follows_references) if not s.before_retrieval]
            assert [name for name, before, _ in seen if before] == expected + (["scope"] if scope else [])
            steps = {s.name: s for s in trace.steps if isinstance(s, StageStep)}
            for name, before, after in seen:
                if before and before != after:
                    assert name in steps, (method, name)
                    _check_moves(steps[name], before, after)
                elif before:
                    assert name not in steps, (method, name)
            assert Trace.model_validate_json(trace.model_dump_json()) == trace


@pytest.mark.parametrize("method", METHODS)
def test_retriever_is_deterministic(method, sample_corpus, service):
    for query in QUERIES[:2]:
        first, trace1 = _retrieve(sample_corpus, service, method, query, 8)
        second, trace2 = _retrieve(sample_corpus, service, method, query, 8)
        assert first == second
        assert trace1 == trace2


@pytest.mark.parametrize("method", METHODS)
def test_larger_k_extends_the_ranking(method, sample_corpus, service):
    small, _ = _retrieve(sample_corpus, service, method, QUERIES[1], 3)
    large, _ = _retrieve(sample_corpus, service, method, QUERIES[1], 10)
    assert [h.node_id for h in large[: len(small)]] == [h.node_id for h in small]


@pytest.mark.parametrize("method", METHODS)
def test_parameters_are_within_their_declared_range(method):
    for spec in get_retriever_class(method).params:
        assert spec.minimum <= spec.default <= spec.maximum, spec
        assert spec.description


def _pages(corpus, hits, k=5) -> set[tuple[str, int]]:
    return {(corpus.documents[corpus.nodes[h.node_id].doc].file_name, corpus.nodes[h.node_id].page) for h in hits[:k]}


@pytest.mark.parametrize("method", ["hikey", "hybrid"])
@pytest.mark.parametrize(
    "question, doc, page",
    [
        ("How many Landsat scenes were used?", "methods_appendix.pdf", 2),
        ("What height threshold defines tree canopy?", "methods_appendix.pdf", 1),
        ("How many hours above 30 °C did the Old Quay sensors record in July 2023?", "data_annex.pdf", 2),
    ],
)
def test_known_answers_are_in_the_top_5(method, question, doc, page, sample_corpus, service):
    hits, _ = _retrieve(sample_corpus, service, method, question, 10)
    assert (doc, page) in _pages(sample_corpus, hits), _pages(sample_corpus, hits, 10)


def test_hikey_trace_records_routing_and_sections(sample_corpus, service):
    hits, trace = _retrieve(sample_corpus, service, "hikey", QUERIES[0], 5, {"docs": 2})
    kinds = [s.kind for s in trace.steps]
    assert "route_docs" in kinds and "rank_sections" in kinds
    route = next(s for s in trace.steps if s.kind == "route_docs")
    assert route.kept == 2
    kept_docs = {d.doc_id for d in route.docs[:2]}
    assert {sample_corpus.nodes[h.node_id].doc for h in hits} <= kept_docs
    assert trace.params["docs"] == 2


def test_empty_workspace_raises(service, tmp_path):
    empty = tmp_path / "empty_ws"
    WorkspaceStore(empty, create=True).close()
    with pytest.raises(EmptyCorpusError):
        service.ask(empty, "How many trees were planted?", method="hikey")


def test_unknown_method_names_the_valid_ones(service, sample_workspace):
    with pytest.raises(UnknownMethodError) as err:
        service.ask(sample_workspace, "How many trees were planted?", method="pagerank-magic")
    message = str(err.value)
    assert "pagerank-magic" in message
    for name in METHODS:
        assert name in message

"""The results spread over pages (backend/stages/spread.py): a page's units beyond its first two
wait until every ranked page has had its first ones; the pages keep their order; the query
pipeline does it for the structure-aware methods, not for the flat floors."""

from __future__ import annotations

import pytest

from backend.stages.spread import PAGE_HEAD_UNITS, spread_over_pages
from backend.types import ScoredNode, Trace
from tests.fakes import build_corpus, pipeline_for

DOCS = {
    "report.pdf": [f"Paragraph {i} of the report on operating expenses." for i in range(5)],
    "second.pdf": ["The second report's operating expenses."],
    "third.pdf": ["The third report's operating expenses."],
    "fourth.pdf": ["The fourth report's operating expenses."],
}


@pytest.fixture(scope="module")
def reports(service):
    return build_corpus(service, DOCS)


def _units(corpus) -> dict[str, list[str]]:
    out: dict[str, list[str]] = {}
    for node_id in corpus.layers["components"].ids:
        out.setdefault(corpus.documents[corpus.nodes.doc_of(node_id)].file_name, []).append(node_id)
    return out


def _ranked(corpus, order: list[tuple[str, int]]) -> list[ScoredNode]:
    units = _units(corpus)
    return [ScoredNode(node_id=units[name][i], score=1.0 - n / 20, why="") for n, (name, i) in enumerate(order)]


def _names(corpus, hits) -> list[str]:
    return [corpus.documents[corpus.nodes.doc_of(h.node_id)].file_name for h in hits]


def test_a_pages_units_beyond_its_first_two_wait_for_every_pages_first(reports):
    assert PAGE_HEAD_UNITS == 2
    hits = _ranked(reports, [("report.pdf", i) for i in range(5)] + [("second.pdf", 0), ("third.pdf", 0), ("fourth.pdf", 0)])
    trace = Trace(method="strata", llm_backend="rules")
    out = spread_over_pages(reports, hits, 5, trace)
    assert _names(reports, out) == ["report.pdf", "report.pdf", "second.pdf", "third.pdf", "fourth.pdf",
                                    "report.pdf", "report.pdf", "report.pdf"]
    assert [h.node_id for h in out[5:]] == [h.node_id for h in hits[2:5]]  # the waiting units keep their order
    assert sorted(h.node_id for h in out) == sorted(h.node_id for h in hits)
    assert all(a.score >= b.score for a, b in zip(out, out[1:]))
    assert any(getattr(s, "index", None) == "pages" for s in trace.steps)
    assert any(n.startswith("The first 5 results hold 4 pages, not 1") for n in trace.notes), trace.notes


def test_results_already_spread_over_their_pages_are_left_as_they_are(reports):
    hits = _ranked(reports, [("report.pdf", 0), ("second.pdf", 0), ("report.pdf", 1), ("third.pdf", 0), ("report.pdf", 2)])
    trace = Trace(method="strata", llm_backend="rules")
    assert spread_over_pages(reports, hits, 4, trace) == hits and not trace.notes
    # a third unit of a page past the first top_k changes nothing the caller sees
    assert spread_over_pages(reports, hits, 4, trace) == hits


class _Ranked:
    def __init__(self, hits: list[ScoredNode], follows_references: bool) -> None:
        self.hits, self.follows_references = hits, follows_references

    def retrieve(self, query, top_k, params, trace):
        return list(self.hits)


def test_the_query_pipeline_spreads_the_structure_aware_methods_results_only(service, reports):
    hits = _ranked(reports, [("report.pdf", i) for i in range(5)] + [("second.pdf", 0), ("third.pdf", 0), ("fourth.pdf", 0)])
    pipeline = pipeline_for(service, reports)
    question = "What were the operating expenses?"
    spread, trace = pipeline.retrieve(_Ranked(hits, True), "strata", question, 5, {})
    assert _names(reports, spread) == ["report.pdf", "report.pdf", "second.pdf", "third.pdf", "fourth.pdf"]
    flat, _ = pipeline.retrieve(_Ranked(hits, False), "hybrid", question, 5, {})
    assert _names(reports, flat) == ["report.pdf"] * 5

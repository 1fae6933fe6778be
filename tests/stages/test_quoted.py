"""The page a question quotes at length goes first (backend/stages/quoted.py): the run of the
question's words one component holds in order, the margin over every other ranked page, and the
step in the real query pipeline, over one-page reports ingested for real."""

from __future__ import annotations

from pathlib import Path

import pytest

from backend.stages.quoted import _run, quoted_page_first
from backend.types import NodeKind, ScoredNode, Trace
from tests.fakes import ingest_drawn

# Four one-page extracts of annual reports; each writes "deferred tax assets". The first quotes the
# question's ten content words in a row; the last does too, in other words around them.
REPORTS = {
    "quoting.pdf": "The long-term deferred tax assets and long-term deferred tax liabilities are as follows below:",
    "assets.pdf": "Deferred tax assets of the company rose during the year under review.",
    "set_off.pdf": "Deferred tax assets and deferred tax liabilities are set off where the law allows it.",
    "also_quoting.pdf": "Long-term deferred tax assets and long-term deferred tax liabilities, in thousands of dollars:",
}
QUESTION = ("Which years does the table provide information for the long-term deferred tax assets and "
            "long-term deferred tax liabilities for the company?")


@pytest.fixture(scope="module")
def quoted_workspace(service, strata_settings, tmp_path_factory) -> Path:
    def prose(text):
        return lambda page: page.insert_text((72, 72), text, fontsize=11)

    return ingest_drawn(service, strata_settings.workspace_root / "quoted_reports", tmp_path_factory.mktemp("quoted_reports"),
                        {name: prose(text) for name, text in REPORTS.items()})


def _units(corpus) -> dict[str, str]:
    return {corpus.documents[n.doc].file_name: nid for nid, n in corpus.nodes.items() if n.kind == NodeKind.PARAGRAPH}


def _reordered(corpus, ranked: list[str], question: str = QUESTION) -> tuple[list[str], Trace]:
    units = _units(corpus)
    hits = [ScoredNode(node_id=units[name], score=1.0 - i / 10, why="") for i, name in enumerate(ranked)]
    trace = Trace(method="strata", llm_backend="rules")
    out = quoted_page_first(corpus, question, hits, trace)
    assert all(a.score >= b.score for a, b in zip(out, out[1:]))
    return [corpus.documents[corpus.nodes.doc_of(h.node_id)].file_name for h in out], trace


def test_a_run_is_counted_word_for_word_in_order():
    asked = ["long", "term", "defer", "tax", "asset", "long", "term", "defer", "tax", "liabil"]
    at: dict[str, list[int]] = {}
    for i, token in enumerate(asked):
        at.setdefault(token, []).append(i)
    assert _run(["defer", "tax", "asset", "rose"], asked, at) == 3
    assert _run(["long", "term", "defer", "tax", "asset", "long", "term", "defer", "tax", "liabil", "follow"], asked, at) == 10
    assert _run(["tax", "defer", "asset"], asked, at) == 1  # the same words out of order are no run
    assert _run([], asked, at) == 0


def test_the_page_the_question_quotes_at_length_goes_first(service, quoted_workspace):
    corpus = service.corpus(quoted_workspace)
    assert set(_units(corpus)) == set(REPORTS)
    names, trace = _reordered(corpus, ["assets.pdf", "set_off.pdf", "quoting.pdf"])
    assert names == ["quoting.pdf", "assets.pdf", "set_off.pdf"]
    assert any(getattr(s, "index", None) == "quote" for s in trace.steps)
    assert any("holds 10 of the question's words in a row, the other ranked pages at most 3" in n for n in trace.notes), trace.notes


def test_nothing_moves_without_a_margin_or_when_the_quoting_page_is_first(service, quoted_workspace):
    corpus = service.corpus(quoted_workspace)
    # two ranked pages quote the same ten words: neither is singled out
    names, trace = _reordered(corpus, ["assets.pdf", "quoting.pdf", "also_quoting.pdf"])
    assert names == ["assets.pdf", "quoting.pdf", "also_quoting.pdf"] and not trace.notes
    # a question no page quotes beyond a word or two
    names, trace = _reordered(corpus, ["assets.pdf", "set_off.pdf", "quoting.pdf"], "What rose during the period?")
    assert names == ["assets.pdf", "set_off.pdf", "quoting.pdf"] and not trace.notes
    names, trace = _reordered(corpus, ["quoting.pdf", "assets.pdf"])
    assert names == ["quoting.pdf", "assets.pdf"] and not trace.notes


class _Ranked:
    """A strategy that ranked the given units in order."""

    def __init__(self, units: list[str], follows_references: bool) -> None:
        self.units, self.follows_references = units, follows_references

    def retrieve(self, query, top_k, params, trace):
        return [ScoredNode(node_id=u, score=0.9 - i / 10, why="") for i, u in enumerate(self.units)]


def test_the_query_pipeline_moves_the_quoting_page_for_the_structure_aware_methods_only(service, quoted_workspace):
    corpus = service.corpus(quoted_workspace)
    units = _units(corpus)
    ranked = [units["assets.pdf"], units["set_off.pdf"], units["quoting.pdf"]]
    pipeline = service._pipeline(corpus, None, None)
    hits, trace = pipeline.retrieve(_Ranked(ranked, True), "strata", QUESTION, 5, {})
    assert hits[0].node_id == units["quoting.pdf"]
    assert any(getattr(s, "index", None) == "quote" for s in trace.steps)
    # the flat floors (bm25, dense, hybrid) keep their own order
    hits, trace = pipeline.retrieve(_Ranked(ranked, False), "hybrid", QUESTION, 5, {})
    assert [h.node_id for h in hits] == ranked

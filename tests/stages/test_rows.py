"""Table rows a question names by their whole label (backend/stages/rows.py): the label read
from a row, the words that must be written, and the pages holding such a row placed first, through
the real ingest (ruled tables that pymupdf finds) and the real query pipeline."""

from __future__ import annotations

from pathlib import Path

import pymupdf
import pytest

from backend.llm.text import named_label, row_label
from backend.stages.rows import named_rows_first
from backend.retrieval.traits import is_long_separate_corpus
from backend.types import Cell, NodeKind, ScoredNode, TableRow, Trace
from tests.fakes import drawn_report, ingest_drawn, ruled_table


def test_a_rows_label_is_its_first_cell():
    assert row_label(TableRow(table="Table 1", cells=(Cell("column 1", "Operating expenses"), Cell("2019", "261,264")))) \
        == "Operating expenses"
    assert row_label(TableRow(table=None, cells=(Cell("(In Millions)", "Data Center Group"), Cell("Dec 28, 2019", "$7,155")))) \
        == "Data Center Group"
    assert row_label(TableRow(table="Table 2", cells=())) == "" and row_label(None) == ""  # no cells, or a row stored without them


def test_every_word_of_the_label_must_be_written_but_not_what_it_says_in_brackets():
    words = {"chang", "oper", "expens"}  # content_tokens of "change in operating expenses"
    assert named_label("Operating expenses", words)
    assert named_label("Operating expenses (in thousands)", words)
    assert named_label("Operating expenses(1)", words)
    assert not named_label("Other operating expenses", words)
    assert not named_label("Total operating expense", {"total"})
    assert not named_label("2019", {"2019"})  # a label of figures names nothing
    assert not named_label("(in millions)", words)


# Three one-page extracts of annual reports, each with the words "operating expenses", "2018"
# and "2019"; only the first has a row labelled "Operating expenses".
REPORTS = {
    "harbour_extract.pdf": ("The harbour company reports its results for the year.",
                            [["", "2019", "2018"], ["Operating expenses", "261,264", "194,054"], ["Revenue", "500,100", "480,000"]]),
    "quarry_extract.pdf": ("Operating expenses of the quarry rose in 2019 against 2018, as the table shows.",
                           [["", "2019", "2018"], ["Other operating expenses", "27.0", "33.7"], ["Total operating expense", "166.3", "513.3"]]),
    "mill_extract.pdf": ("The mill's operating expenses in 2019 and 2018 are set out below.",
                         [["", "2019", "2018"], ["Staff costs", "12.5", "11.0"], ["Total operating expense", "31.9", "18.6"]]),
}
QUESTION = "What was the change in operating expenses between 2018 and 2019?"


@pytest.fixture(scope="module")
def reports_workspace(service, strata_settings, tmp_path_factory) -> Path:
    return ingest_drawn(service, strata_settings.workspace_root / "row_reports", tmp_path_factory.mktemp("row_reports"),
                        {name: drawn_report(prose, rows) for name, (prose, rows) in REPORTS.items()})


def test_the_pages_holding_a_row_the_question_names_go_first(service, reports_workspace):
    corpus = service.corpus(reports_workspace)
    tables = {corpus.documents[n.doc].file_name: nid for nid, n in corpus.nodes.items() if n.kind == NodeKind.TABLE}
    assert set(tables) == set(REPORTS), "find_tables read every ruled table"
    # the strategy ranked the look-alike reports first
    hits = [ScoredNode(node_id=tables[name], score=1.0 - i / 10, why="") for i, name in
            enumerate(["quarry_extract.pdf", "mill_extract.pdf", "harbour_extract.pdf"])]
    trace = Trace(method="strata", llm_backend="rules")
    out = named_rows_first(corpus, QUESTION, hits, trace)
    assert [corpus.documents[corpus.nodes.doc_of(h.node_id)].file_name for h in out] == \
        ["harbour_extract.pdf", "quarry_extract.pdf", "mill_extract.pdf"]
    assert all(a.score >= b.score for a, b in zip(out, out[1:]))
    assert any(getattr(s, "index", None) == "rows" for s in trace.steps)
    assert any("'Operating expenses'" in n for n in trace.notes)
    # a question that names no row's whole label leaves the order as it was
    assert named_rows_first(corpus, "What was the change in expenses between 2018 and 2019?", hits, Trace(method="strata",
                            llm_backend="rules")) == hits


def _reordered(corpus, ranked: list[str], question: str) -> tuple[list[str], list[str]]:
    """The rows step over one table hit per report, ranked in the given order: the reports' order
    after it, and the trace's notes. Scores must stay non-increasing."""
    tables = {corpus.documents[n.doc].file_name: nid for nid, n in corpus.nodes.items() if n.kind == NodeKind.TABLE}
    hits = [ScoredNode(node_id=tables[name], score=1.0 - i / 10, why="") for i, name in enumerate(ranked)]
    trace = Trace(method="strata", llm_backend="rules")
    out = named_rows_first(corpus, question, hits, trace)
    assert all(a.score >= b.score for a, b in zip(out, out[1:]))
    return [corpus.documents[corpus.nodes.doc_of(h.node_id)].file_name for h in out], trace.notes


def test_the_strategys_own_first_page_keeps_the_second_place(service, reports_workspace):
    # Two reports hold a row the question names; the strategy ranked a third first. The first named
    # page goes first, the strategy's own first page second, then the other named page: a generic
    # label ("Total assets") names pages that hold nothing asked, and the strategy's best guess stays
    # in reach (dev-tatqa-pdf tune: +0.003 to +0.007 page R@5 for every structure-aware method).
    names, notes = _reordered(service.corpus(reports_workspace), ["quarry_extract.pdf", "harbour_extract.pdf", "mill_extract.pdf"],
                              "What was the change in Revenue and Staff costs between 2018 and 2019?")
    assert names == ["harbour_extract.pdf", "quarry_extract.pdf", "mill_extract.pdf"]
    assert any("the strategy's own first page" in n for n in notes)


def test_the_strategys_first_page_stays_first_when_it_holds_more_of_the_question(service, reports_workspace):
    # "the quarry's operating expenses" names the quarry, whose page holds no row labelled
    # "Operating expenses"; the harbour's does, but holds fewer of the question's words. The label
    # breaks no tie there, so the strategy's first page keeps the first place and the named page
    # comes second (dev-tatqa-pdf tune: R@1 0.681 -> 0.718, R@5 the same).
    names, notes = _reordered(service.corpus(reports_workspace), ["quarry_extract.pdf", "mill_extract.pdf", "harbour_extract.pdf"],
                              "What was the change in the quarry's operating expenses between 2018 and 2019?")
    assert names == ["quarry_extract.pdf", "harbour_extract.pdf", "mill_extract.pdf"]
    assert any("holds more of the question's words" in n for n in notes)


def test_the_structure_aware_methods_read_the_rows_and_the_flat_floors_do_not(service, reports_workspace):
    for method in ("strata", "fif", "lilac", "mirag", "mmgraph"):
        result = service.ask(reports_workspace, QUESTION, method=method, top_k=5)
        assert result.results[0].doc == "harbour_extract.pdf", (method, [r.doc for r in result.results])
    flat = service.ask(reports_workspace, QUESTION, method="hybrid", top_k=5)
    assert not any(getattr(s, "index", None) == "rows" for s in flat.trace.steps)


# Three reports of four pages each, so that the documents a question names decide (long documents
# that do not lead to one another). Each report's first page holds "Total liabilities" and a
# "Total", its second page another "Total".
LEDGERS = ("ACME", "GLOBEX", "INITECH")


@pytest.fixture(scope="module")
def ledger_workspace(service, strata_settings, tmp_path_factory) -> Path:
    folder = tmp_path_factory.mktemp("ledgers")
    paths = []
    for co in LEDGERS:
        doc = pymupdf.open()
        pages = [(f"The balance sheet of {co} at the end of the year is set out below.",
                  [["", "2021", "2020"], ["Cash", "11,258", "12,277"], ["Total liabilities", "41,190", "36,851"],
                   ["Total", "59,268", "55,556"]]),
                 (f"Revenue of {co} by its sources for the year, in millions of dollars, follows here.",
                  [["", "2021", "2020"], ["Membership fees", "3,877", "3,541"], ["Total", "195,929", "166,761"]]),
                 (f"{co} opened new warehouses in three countries during the year.", None),
                 (f"The board of {co} met eleven times and approved the dividend.", None)]
        for prose, rows in pages:
            page = doc.new_page()
            page.insert_text((72, 72), prose, fontsize=11)
            if rows:
                ruled_table(page, 120, rows)
        doc.save(folder / f"{co}_annual_report.pdf")
        paths.append(folder / f"{co}_annual_report.pdf")
    ws = strata_settings.workspace_root / "ledgers"
    report = service.ingest(ws, paths)
    assert not report.failed, report.failed
    return ws


class _SecondPageOnly:
    """A strategy that ranked the prose of ACME's second page and nothing else."""

    follows_references = True

    def __init__(self, unit: str) -> None:
        self.unit = unit

    def retrieve(self, query, top_k, params, trace):
        return [ScoredNode(node_id=self.unit, score=0.9, why="")]


def test_a_row_the_question_names_in_a_document_it_names_joins_the_hits(service, ledger_workspace):
    # The strategy ranked the prose of ACME's second page only. ACME's first page holds "Total
    # liabilities", on no other page of ACME's report, so that row joins the hits and its page goes
    # first; "Total", on both table pages, singles out neither and joins nothing; GLOBEX's report,
    # which the question does not name, gives nothing (dev-mmlongbench tune: strata 0.597 -> 0.621).
    corpus = service.corpus(ledger_workspace)
    assert is_long_separate_corpus(corpus)
    acme = next(d for d, doc in corpus.documents.items() if doc.file_name == "ACME_annual_report.pdf")
    prose = {n.page: nid for nid, n in corpus.nodes.items() if n.kind == NodeKind.PARAGRAPH and n.doc == acme}
    assert set(prose) == {1, 2, 3, 4}
    pipeline = service._pipeline(corpus, None, None)
    hits, trace = pipeline.retrieve(_SecondPageOnly(prose[2]), "strata", "What were the total liabilities of ACME in 2021?", 5, {})
    assert [(corpus.nodes.doc_of(h.node_id), corpus.nodes.page_of(h.node_id)) for h in hits] == [(acme, 1), (acme, 2)]
    assert row_label(corpus.nodes.row_of(hits[0].node_id)) == "Total liabilities"
    assert all(a.score >= b.score for a, b in zip(hits, hits[1:]))
    assert any("1 of those rows the strategy had not ranked" in n for n in trace.notes), trace.notes
    hits, _ = pipeline.retrieve(_SecondPageOnly(prose[2]), "strata", "What was the total of ACME in 2021?", 5, {})
    assert [corpus.nodes.page_of(h.node_id) for h in hits] == [2]
    # without a document named, nothing joins
    hits, _ = pipeline.retrieve(_SecondPageOnly(prose[2]), "strata", "What were the total liabilities in 2021?", 5, {})
    assert [corpus.nodes.page_of(h.node_id) for h in hits] == [2]

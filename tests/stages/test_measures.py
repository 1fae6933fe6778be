"""The line items of a ratio the question names (backend/stages/measures.py): which ratios are
read and which are not, the text the strategies rank by, and the step in the real query pipeline
over one-page reports ingested for real."""

from __future__ import annotations

from pathlib import Path

import pytest

from backend.stages.measures import MEASURES, line_items, measures_in_rows, with_line_items
from backend.types import Trace
from tests.fakes import drawn_report, ingest_drawn


def test_a_named_ratio_gives_the_items_it_is_computed_from():
    assert line_items("What is the change in current ratio from 2018 to 2019?") == [
        ("current ratio", ["total current assets", "total current liabilities"])]
    assert line_items("what is Amazon's FY2017 return on asset ?") == [("return on asset", ["net income", "total assets"])]
    assert line_items("What is the liability to asset ratio as of December 31, 2019?") == [
        ("liability to asset", ["total liabilities", "total assets"])]
    # items the question already writes are not repeated, nor an item two ratios share
    assert line_items("What is the debt to assets ratio, given total assets of 5,000?") == [
        ("debt to assets", ["total debt", "long-term debt"])]
    assert [items for _, items in line_items("Compare the ROA and the ROE.")] == [
        ["net income", "total assets"], ["total equity", "total shareholders' equity"]]


def test_a_line_item_of_its_own_and_a_question_without_a_ratio_are_left_alone():
    for question in ("How is EBITDA calculated?", "What was the 2019 free cash flow?", "What were capital expenditures in 2019?",
                     "Which city hosted the 1990 games?", "What is the ratio of the two segments' goodwill?",
                     "How many currents flow through the circuit?"):
        assert line_items(question) == [], question
    # a measure the corpus writes as a row of its own (its index in MEASURES) is not expanded
    assert line_items("What is the change in current ratio?", frozenset({0})) == []


# Three one-page extracts of annual reports with the words "current", "ratio", "2018" and "2019";
# only the ledger holds what a current ratio is computed from, and it never writes "ratio".
REPORTS = {
    "ledger_extract.pdf": ("The balance sheet of the company at the end of the year is set out below.",
                           [["", "2019", "2018"], ["Total current assets", "121,041", "73,202"],
                            ["Total current liabilities", "154,619", "90,392"], ["Total equity", "228,144", "243,668"]]),
    "staff_extract.pdf": ("The ratio of current staff to contractors changed from 2018 to 2019, as the table shows.",
                          [["", "2019", "2018"], ["Current staff", "1,200", "1,100"], ["Contractors", "300", "280"]]),
    "fleet_extract.pdf": ("The change in the ratio of current vessels to those on order from 2018 to 2019 follows.",
                          [["", "2019", "2018"], ["Current vessels", "42", "40"], ["Vessels on order", "6", "9"]]),
}
QUESTION = "What is the change in current ratio from 2018 to 2019?"


@pytest.fixture(scope="module")
def ratio_workspace(service, strata_settings, tmp_path_factory) -> Path:
    return ingest_drawn(service, strata_settings.workspace_root / "ratio_reports", tmp_path_factory.mktemp("ratio_reports"),
                        {name: drawn_report(prose, rows, fontsize=10) for name, (prose, rows) in REPORTS.items()})


def test_the_structure_aware_methods_find_the_ratio_s_items_and_the_flat_floors_do_not(service, ratio_workspace):
    flat = service.ask(ratio_workspace, QUESTION, method="hybrid", top_k=5)
    assert flat.results[0].doc != "ledger_extract.pdf", "the question's own words point at the look-alikes"
    assert not any("computed from" in n for n in flat.trace.notes)
    for method in ("strata", "fif", "lilac", "mirag", "mmgraph", "hikey"):
        result = service.ask(ratio_workspace, QUESTION, method=method, top_k=5)
        assert result.results[0].doc == "ledger_extract.pdf", (method, [r.doc for r in result.results])
        assert any('"current ratio", computed from total current assets' in n for n in result.trace.notes), method
        assert result.question == QUESTION, "the question asked is the one shown and read"


def test_the_text_ranked_by_keeps_the_question_and_adds_the_items(service, ratio_workspace):
    corpus = service.corpus(ratio_workspace)
    assert measures_in_rows(corpus) == frozenset(), "no row of these reports is labelled with a ratio"
    trace = Trace(method="strata", llm_backend="rules")
    text = with_line_items(corpus, QUESTION, trace)
    assert text == "What is the change in current ratio from 2018 to 2019? (total current assets; total current liabilities)"
    assert trace.notes == ['The question names "current ratio", computed from total current assets, total current liabilities: '
                           "those items are searched for beside the question's own words."]
    trace = Trace(method="strata", llm_backend="rules")
    assert with_line_items(corpus, "Which city hosted the 1990 games?", trace) == "Which city hosted the 1990 games?"
    assert not trace.notes


def test_a_ratio_the_corpus_writes_as_a_row_is_found_by_its_own_words(service, strata_settings, tmp_path_factory):
    """Where a table of the corpus has a row labelled with the measure ("Current ratio"), the
    question's own words find that row, and the items would pull the look-alike balance sheets
    above it: nothing is added, and the trace says why."""
    draw = drawn_report("Liquidity of the company at the end of the year.",
                        [["", "2019", "2018"], ["Current ratio", "0.78", "0.81"], ["Quick ratio", "0.52", "0.60"]], fontsize=10)
    ws = ingest_drawn(service, strata_settings.workspace_root / "ratio_rows", tmp_path_factory.mktemp("ratio_rows"),
                      {"liquidity_extract.pdf": draw})
    corpus = service.corpus(ws)
    assert {MEASURES[i][0] for i in measures_in_rows(corpus)} == {"current ratio", "quick ratio|acid[- ]test"}
    trace = Trace(method="strata", llm_backend="rules")
    assert with_line_items(corpus, QUESTION, trace) == QUESTION
    assert trace.notes == ["The question names 'current ratio', which tables of this corpus write as a row of its own: its own "
                           "words find it."]

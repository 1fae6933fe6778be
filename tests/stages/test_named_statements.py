"""The statement a question names (backend/stages/statements.py): filings written as PDFs here and
ingested, their statements set with white space as real filings set them. "Using the cash flow
statement ..." is asked of the page that prints the statement of cash flows of the filing the
question names, not of the pages that talk about cash flows."""

from __future__ import annotations

import pymupdf
import pytest

from backend.stages.statements import (implied_statements, named_statements, statement_first, statement_pages,
                                       statement_titled)
from backend.stages.measures import MEASURES
from backend.stages.statements import ITEM_STATEMENT
from backend.types import ScoredNode, Trace

PROSE = ("Liquidity and capital resources. Our cash flows from operating activities funded our capital expenditures, "
         "and we expect cash flows to fund purchases of property and equipment next year. Free cash flow is a "
         "measure we use to judge the cash our operations provide after capital expenditures.")
BALANCE = ["Cash and cash equivalents", "Accounts receivable", "Inventories", "Total current assets", "Property and equipment, net",
           "Total assets", "Accounts payable", "Total current liabilities", "Long-term debt", "Total liabilities"]
CASH = ["Net income", "Depreciation and amortization", "Stock-based compensation", "Changes in inventories",
        "Net cash provided by operating activities", "Purchases of property and equipment", "Acquisitions",
        "Net cash used in investing activities", "Dividends paid", "Net cash used in financing activities"]


def _statement(page, title: str, year: int, labels: list[str], title_font: tuple[str, int] = ("hebo", 12)) -> None:
    page.insert_text((200, 60), title, fontname=title_font[0], fontsize=title_font[1])
    if title_font[0] != "hebo":  # a units line between the title and the table, as Kraft Heinz sets it
        page.insert_text((200, 74), "(in millions, except per share data)", fontname="helv", fontsize=9)
    for x, text in ((455, str(year)), (540, str(year - 1))):
        page.insert_text((x, 90), text, fontname="helv", fontsize=9)
    for i, label in enumerate(labels):
        y = 110 + 14 * i
        page.insert_text((40, y), label, fontname="helv", fontsize=9)
        for right, value in ((480, f"{(i + 3) * 1117:,}"), (565, f"{(i + 2) * 1013:,}")):
            text = value
            page.insert_text((right - pymupdf.get_text_length(text, fontname="helv", fontsize=9), y), text,
                             fontname="helv", fontsize=9)


def _filing(path, company: str, year: int) -> None:
    doc = pymupdf.open()
    for _ in range(2):  # discussion pages that write "cash flows" more often than the statement does
        page = doc.new_page(width=612, height=792)
        page.insert_text((200, 60), "Management's Discussion and Analysis", fontname="hebo", fontsize=12)
        page.insert_textbox(pymupdf.Rect(40, 80, 570, 700), (f"{company} " + PROSE + " ") * 4, fontname="helv", fontsize=10)
    page = doc.new_page(width=612, height=792)
    if company == "INITECH":  # the statement's rows under a heading of their own, below its title
        page.insert_text((200, 30), "CONSOLIDATED BALANCE SHEETS", fontname="hebo", fontsize=12)
        _statement(page, "ASSETS AND LIABILITIES", year, BALANCE)
    else:
        _statement(page, "CONSOLIDATED BALANCE SHEETS", year, BALANCE)
    if company == "GLOBEX":  # the title set as a line of body text, so no heading: a paragraph above the table
        _statement(doc.new_page(width=612, height=792), "Globex Inc. Consolidated Statements of Cash Flows", year, CASH,
                   ("helv", 10))
    else:
        _statement(doc.new_page(width=612, height=792), "CONSOLIDATED STATEMENTS OF CASH FLOWS", year, CASH)
    doc.save(path)


@pytest.fixture(scope="module")
def filings(service, tmp_path_factory):
    folder = tmp_path_factory.mktemp("filings")
    paths = []
    # Two years of three companies: a year in half the file names still names (MAX_DOC_SHARE), so
    # "FY2020" picks ACME's 2020 filing over its 2019 one.
    for company, year in (("ACME", 2019), ("ACME", 2020), ("GLOBEX", 2019), ("GLOBEX", 2020), ("INITECH", 2019),
                          ("INITECH", 2020)):
        path = folder / f"{company}_{year}_10K.pdf"
        _filing(path, company, year)
        paths.append(path)
    ws = folder / "ws"
    report = service.ingest(ws, paths)
    assert not report.failed, report.failed
    return service.corpus(ws)


def test_what_questions_call_the_statements():
    assert named_statements("Using the cash flow statement, what is the FCF?") == ["cash flow statement"]
    assert named_statements("From the statement of financial position and the P&L, what is ROA?") == ["balance sheet",
                                                                                                       "income statement"]
    assert named_statements("What is the total debt?") == []


def test_a_filing_s_statements_are_its_sections_titled_so_that_hold_a_table(filings):
    pages = statement_pages(filings)
    by_file = {(filings.documents[d].file_name, name): p for (d, name), p in pages.items()}
    assert by_file[("ACME_2020_10K.pdf", "cash flow statement")] == [4]
    assert by_file[("ACME_2020_10K.pdf", "balance sheet")] == [3]
    # Its title above a heading of its own ("ASSETS AND LIABILITIES") on the same page.
    assert by_file[("INITECH_2019_10K.pdf", "balance sheet")] == [3]
    assert by_file[("GLOBEX_2020_10K.pdf", "cash flow statement")] == [4]  # its title a line of text above it
    assert not any(name == "income statement" for _, name in by_file)  # no page prints one


def test_a_statement_title_is_a_title_line_however_the_pdf_spaced_it():
    assert statement_titled("3M Company and Subsidiaries Consolidated Statement of Cash Flow s Years ended December 31") == (
        "cash flow statement")
    assert statement_titled("CONSOLIDATED STATEMENTS OF FINANCIAL POSITION") == "balance sheet"
    assert statement_titled("Consolidated Statements of Operations (in millions)") == "income statement"
    assert statement_titled("The Kraft Heinz Company Consolidated Statements of Income") == "income statement"
    assert statement_titled("Amcor plc and Subsidiaries Condensed Consolidated Balance Sheets (Unaudited)") == "balance sheet"
    assert statement_titled("The following table summarizes our consolidated statements of cash flows.") is None  # a sentence
    assert statement_titled("Derivative Impact on the Statements of Income:") is None  # a note's heading that cites it
    assert statement_titled("Total amounts presented in the consolidated statements of income in which effects were recorded") is None
    assert statement_titled("The Kraft Heinz Company Condensed Consolidating Balance Sheets") is None  # a guarantor's schedule
    assert statement_titled("Off-Balance Sheet Arrangements") is None
    assert statement_titled("Condensed Consolidating Statements of Cash Flows - Guarantor Subsidiaries") is None
    assert statement_titled("Consolidated Statement of Changes in Equit y") is None


def test_a_figure_asked_for_without_its_statement_implies_the_statement_that_prints_it():
    assert {item for _, items in MEASURES for item in items} <= set(ITEM_STATEMENT)  # every ratio's items placed
    assert implied_statements("What is Amazon's FY2017 days payable outstanding (DPO)?") == ["balance sheet", "income statement"]
    assert implied_statements("What is EBITDA for Costco in FY2021?") == ["cash flow statement", "income statement"]
    assert implied_statements("What were 3M's FY2018 capital expenditures?") == ["cash flow statement"]
    assert implied_statements("Using the balance sheet, what is the current ratio?") == []  # named, not implied
    assert implied_statements("Who audits the company?") == []


def test_the_named_statement_of_the_named_filing_comes_first(service, filings):
    question = "Using the cash flow statement, what were ACME's FY2020 purchases of property and equipment?"
    pipeline = service._pipeline(filings, None, None)
    hits, trace = pipeline.retrieve(service.retriever("strata", filings), "strata", question, 6, {})
    first = filings.nodes[hits[0].node_id]
    assert (filings.documents[first.doc].file_name, first.page) == ("ACME_2020_10K.pdf", 4)
    # The stage says what it found whether or not the stages before it had already put those units first.
    assert any(n.startswith("The question names the cash flow statement") for n in trace.notes)
    plain, plain_trace = pipeline.retrieve(service.retriever("strata", filings), "strata", question, 6, {}, stages="none")
    assert not any(getattr(s, "index", None) == "statements" for s in plain_trace.steps)
    assert not any(n.startswith("The question names the cash flow statement") for n in plain_trace.notes)


def test_the_statement_s_units_move_ahead_of_the_pages_that_talk_about_it(filings):
    question = "Using the cash flow statement, what were ACME's FY2020 purchases of property and equipment?"
    acme = next(d for d, doc in filings.documents.items() if doc.file_name == "ACME_2020_10K.pdf")
    talk = [c for c in filings.components_by_doc[acme] if filings.nodes[c].page in (1, 2)]
    assert talk
    hits = [ScoredNode(node_id=c, score=1.0 - i / 100) for i, c in enumerate(talk)]
    trace = Trace(method="test")
    out = statement_first(filings, question, hits, trace, {acme: (1, 1, 1)})
    assert [filings.nodes[h.node_id].page for h in out[:1]] == [4]
    assert {h.node_id for h in hits} <= {h.node_id for h in out}  # nothing dropped, the statement's table joined
    assert all(a.score >= b.score for a, b in zip(out, out[1:]))
    step = next(s for s in trace.steps if getattr(s, "index", None) == "statements")
    assert [c.node_id for c in step.candidates] == [h.node_id for h in out if filings.nodes[h.node_id].page == 4]
    assert any("1 table(s) of them the strategy had not ranked" in n for n in trace.notes)


def test_a_statement_the_question_implies_comes_after_the_strategy_s_first_result(filings):
    question = "What was GLOBEX's FY2019 days payable outstanding?"
    globex = next(d for d, doc in filings.documents.items() if doc.file_name == "GLOBEX_2019_10K.pdf")
    talk = [c for c in filings.components_by_doc[globex] if filings.nodes[c].page in (1, 2)]
    hits = [ScoredNode(node_id=c, score=1.0 - i / 100) for i, c in enumerate(talk)]
    trace = Trace(method="test")
    out = statement_first(filings, question, hits, trace, {globex: (1, 1, 1)})
    assert out[0].node_id == hits[0].node_id  # the strategy's first result keeps its place
    assert filings.nodes[out[1].node_id].page == 3  # then the balance sheet that prints accounts payable
    assert {h.node_id for h in hits} <= {h.node_id for h in out}
    assert any("asks for what is printed in the balance sheet" in n and "after the strategy's first result" in n
               for n in trace.notes)

"""Pages and labelled units a question names (backend/stages/references.py): parsing the
question, fitting printed page numbers to page positions, and placing the named pages first,
through the real ingest and the real query pipeline."""

from __future__ import annotations

from pathlib import Path

import pymupdf
import pytest

from backend.ingest.layout import printed_page_map
from backend.stages.references import References, place_references, question_references, unit_label
from backend.types import ScoredNode, Trace
from tests.fakes import build_corpus

COLOURS = ["red", "blue", "green", "yellow", "white", "black", "orange", "purple", "grey", "pink", "brown", "silver"]
STATIONS = ["Alder", "Birch", "Cedar", "Dune", "Elm", "Fir", "Gorse", "Heath", "Ivy", "Juniper", "Kelp", "Larch"]


# ---------------------------------------------------------------- the question


@pytest.mark.parametrize(("question", "expected"), [
    ("How many people with scarf are there in  Page 5?", References(pages=(5,))),
    ("How many figures are provided in Pages 51-53?", References(pages=(51, 52, 53))),
    ("How many colors are in the slide 14?", References(pages=(14,))),
    ("What is on pages 3 and 7?", References(pages=(3, 7))),
    ("What date is mentioned on the second page?", References(positions=(2,))),
    ("Who signed on the last page?", References(positions=(-1,))),
    ("What is the title of the 12th slide?", References(positions=(12,))),
    ("What are the axes of Figure 3 and Fig. 4b?", References(labels=(("figure", "3"), ("figure", "4b")))),
    ("For the papers in Table 2, how many use Self-Refine?", References(labels=(("table", "2"),))),
    ("How many green boxes are in the first figure of the paper?", References(nth_units=(("figure", 1),))),
    ("What is the total in the last table?", References(nth_units=(("table", -1),))),
])
def test_the_question_says_which_pages_and_units_it_means(question, expected):
    assert question_references(question) == expected


@pytest.mark.parametrize("question", [
    "How many figures are provided in Pages 400-640?",  # a part of a book: too wide to place first
    "Which newspaper column is called Page Six?",
    "How many pages does the report have?",
    "Where was the director of the film Moonlit Harbor born?",
    "Who was the first figure skater to land a quadruple jump?",
    "Which club did the first table tennis world champion play for?",
])
def test_questions_that_name_no_page_or_unit_name_none(question):
    assert not question_references(question)


def test_unit_labels_are_read_from_the_label_text():
    assert unit_label("Figure 3b: Accuracy by model") == ("figure", "3b")
    assert unit_label("Fig. 12") == ("figure", "12")
    assert unit_label("TABLE 2") == ("table", "2")
    assert unit_label("Overview of the system") is None
    assert unit_label(None) is None


# ---------------------------------------------------------------- printed page numbers


def test_printed_numbers_fit_an_offset_and_fill_the_pages_whose_folio_was_missed():
    # A journal paper printed as pages 6981-: page-number blocks on every page but page 3.
    rows = [(p, "page_number", str(6980 + p)) for p in (1, 2, 4, 5, 6)]
    assert printed_page_map(rows, pages=6) == {6980 + p: (p,) for p in range(1, 7)}


def test_running_header_folios_count_through_the_fit_only():
    # A manual: "28 Chapter 2" in the header of the file's 29th page; a year in one header is not a page number.
    rows = [(p, "header", f"{p - 1} Chapter 2: Operating the Device") for p in range(20, 30)] + [(5, "header", "Annual report 2019")]
    mapped = printed_page_map(rows, pages=40)
    assert mapped[28] == (29,) and 2019 not in mapped and 4 not in mapped  # outside the fitted run


def test_two_page_spreads_show_two_numbers():
    # A brochure scanned as spreads: the left page's footer reads 2p - 4.
    rows = [(p, "footer", f"{2 * p - 4} Graduate Studies & Professional Learning") for p in (3, 5, 6, 7, 8, 12)]
    mapped = printed_page_map(rows, pages=17)
    assert mapped[16] == (10,) and mapped[17] == (10,)  # page 10's footer was not recognised: fitted
    assert mapped[5] == (4,)


def test_too_few_agreeing_pages_give_no_fit_but_page_number_blocks_stand():
    rows = [(2, "footer", "Company confidential 7"), (9, "page_number", "9")]
    assert printed_page_map(rows, pages=10) == {9: (9,)}


# ---------------------------------------------------------------- placing them, on a hand-built corpus


@pytest.fixture(scope="module")
def papers(service):
    corpus = build_corpus(service, {
        "results_paper.pdf": ["Figure 1: The pipeline of the system.", "Table 2: Accuracy of every model.", "We thank the reviewers."],
        "other_paper.pdf": ["Table 2: Latency of every model.", "Related work on retrieval."],
    }, labels=True)
    return corpus


def _ids(corpus, file_name: str) -> list[str]:
    doc = next(d for d in corpus.documents.values() if d.file_name == file_name)
    return corpus.components_by_doc[doc.id]


def test_a_named_label_is_taken_from_the_first_ranked_documents_and_placed_first(papers):
    results, other = _ids(papers, "results_paper.pdf"), _ids(papers, "other_paper.pdf")
    hits = [ScoredNode(node_id=n, score=1.0 - i / 10) for i, n in enumerate([results[2], other[1], results[0]])]
    trace = Trace(method="strata")
    out = place_references(papers, "Which model is the most accurate in Table 2?", hits, 10, trace)
    assert [h.node_id for h in out[:2]] == [results[1], other[0]]  # each ranked document's Table 2, in document order
    assert [h.node_id for h in out[2:]] == [h.node_id for h in hits]
    assert [s.index for s in trace.steps] == ["references"] and "Table 2" in trace.notes[-1]
    assert all(a.score >= b.score for a, b in zip(out, out[1:]))


def test_a_position_past_the_tenth_is_described_in_the_trace(papers):
    results = _ids(papers, "results_paper.pdf")
    trace = Trace(method="strata")
    hits = [ScoredNode(node_id=results[2], score=0.9)]
    assert place_references(papers, "What is on the 12th page?", hits, 5, trace) == hits  # one-page documents
    first = place_references(papers, "What is on the 1st page?", hits, 5, trace)[0]
    assert first.node_id == results[2] and "the first page named" in first.why  # the ranked unit on that page stands for it
    assert "the first page" in trace.notes[-1]


def test_the_first_figure_is_figure_1_and_nothing_changes_without_a_reference(papers):
    results = _ids(papers, "results_paper.pdf")
    hits = [ScoredNode(node_id=results[2], score=0.9)]
    assert place_references(papers, "What is in the first figure?", hits, 5, Trace(method="lilac"))[0].node_id == results[0]
    trace = Trace(method="lilac")
    assert place_references(papers, "Who are the reviewers?", hits, 5, trace) == hits and not trace.steps


# ---------------------------------------------------------------- through ingest and the query pipeline


def _lighthouse_report(path: Path, first_printed: int) -> Path:
    """12 pages, one lighthouse colour each, the printed page number centred in the footer; no
    other number on the page, so only the page number can tell the pages apart."""
    pdf = pymupdf.open()
    for i, (colour, station) in enumerate(zip(COLOURS, STATIONS, strict=True)):
        page = pdf.new_page(width=612, height=792)
        page.insert_text((72, 90), f"Lighthouse survey, {station} station", fontsize=16)
        page.insert_textbox(pymupdf.Rect(72, 120, 540, 300),
                            f"The lighthouse at this station is painted {colour}. Keepers repaint it every few years "
                            "after the winter storms, and the lamp is serviced each spring.", fontsize=11)
        page.insert_text((300, 760), str(first_printed + i), fontsize=10)
    pdf.save(path)
    return path


@pytest.fixture(scope="module")
def numbered_workspace(service, strata_settings, tmp_path_factory) -> Path:
    folder = tmp_path_factory.mktemp("numbered")
    ws = strata_settings.workspace_root / "numbered"
    report = service.ingest(ws, [_lighthouse_report(folder / "lighthouse_survey.pdf", first_printed=101)])
    assert not report.failed, [(f.file_name, f.reason) for f in report.failed]
    return ws


def test_a_named_page_is_found_by_its_position_and_by_its_printed_number(service, numbered_workspace):
    corpus = service.corpus(numbered_workspace)
    doc = next(iter(corpus.documents.values()))
    assert corpus.printed_pages[doc.id][104] == (4,)  # fitted from the footers the layout stage marked
    by_position = service.ask(numbered_workspace, "What colour is the lighthouse on page 7?", method="strata", top_k=5)
    assert by_position.results[0].page == 7 and "page 7" in by_position.results[0].why
    assert any("names page 7" in n for n in by_position.trace.notes)
    by_print = service.ask(numbered_workspace, "What colour is the lighthouse on page 104?", method="hikey", top_k=5)
    assert by_print.results[0].page == 4 and "printed number" in by_print.results[0].why
    # the reader answers from the named page: the words "page 104" are what its units cover
    assert "yellow" in by_print.answer.text and [c.page for c in by_print.answer.citations] == [4]


def test_the_flat_baselines_do_not_follow_references(service, numbered_workspace):
    """hybrid is the floor the structure-aware methods are measured against: it stays flat."""
    result = service.ask(numbered_workspace, "What colour is the lighthouse on page 7?", method="hybrid", top_k=12)
    assert not any("names page" in n for n in result.trace.notes)
    assert not any("named in the question" in r.why for r in result.results)

"""A session's own documents (its uploads, apart from the sample corpus) and example questions
made from their headings by rules (issue 48 item 5): the Ask tab asks the uploads by default and
offers these questions in place of the sample corpus's."""

from __future__ import annotations

import pymupdf
import pytest

from backend.starter_questions import clean_heading, starter_questions
from backend.types import Document, Section
from tests.ui.helpers import FILLER


@pytest.mark.parametrize(("heading", "topic"), [
    ("2.1 Replacing the battery", "replacing the battery"),
    ("Chapter 3: Cleaning the filter", "cleaning the filter"),
    ("USB charging", "USB charging"),
    ("Safety instructions .......... 12", "safety instructions"),
    ("Introduction", None),
    ("1 Contents", None),
    ("12", None),
    ("A heading far too long to read as one topic of a document at all", None),
])
def test_a_heading_becomes_a_topic_or_is_left_out(heading, topic):
    assert clean_heading(heading) == topic


def _doc(doc_id: str, title: str, file_name: str) -> Document:
    return Document(id=doc_id, file_name=file_name, title=title, pages=3, sha256=doc_id * 8, bytes=1, card="", hierarchy_source="font",
                    page_sizes=[(612.0, 792.0)] * 3)


def _section(doc: str, n: int, title: str, level: int = 1, page: int = 1) -> Section:
    return Section(id=f"{doc}:s{n}", doc=doc, title=title, level=level, parent=None, path=[title], page=page, bbox=None,
                   confidence=0.9, source="font")


def test_questions_are_taken_from_each_document_in_turn():
    a, b = _doc("a", "Acme X200 Vacuum Manual", "x200.pdf"), _doc("b", "", "notes.pdf")
    sections = {
        "a": [_section("a", 0, "Acme X200 Vacuum Manual", level=0), _section("a", 1, "Introduction"),
              _section("a", 2, "2 Emptying the dust bin", page=4), _section("a", 3, "1 Charging the battery", page=2)],
        "b": [],
    }
    assert starter_questions([a, b], sections, limit=3) == [
        "What does x200.pdf say about charging the battery?",  # the title would make it too long to show whole
        "What is notes.pdf about?",
        "What does x200.pdf say about emptying the dust bin?",
    ]
    short = _doc("c", "Pump Manual", "c.pdf")
    assert starter_questions([short], {"c": [_section("c", 1, "3 Winter storage")]}) == [
        "What does “Pump Manual” say about winter storage?"]
    long_topic = "Attaching the extended hose reel to the rear mounting bracket"
    assert starter_questions([short], {"c": [_section("c", 1, long_topic)]}) == ["Attaching the extended hose reel to the rear mounting bracket?"]
    assert all(len(q) <= 62 for q in starter_questions([a], sections))


@pytest.mark.slow
def test_uploads_are_told_apart_from_the_sample_and_give_questions(service, sample_workspace, workspace_copy, tmp_path):
    assert service.own_documents(sample_workspace) == [] and service.own_documents(workspace_copy) == []
    pdf = tmp_path / "pump_manual.pdf"
    with pymupdf.open() as out:
        page = out.new_page()
        page.insert_text((72, 80), "Garden Pump GP-7 Manual", fontsize=22, fontname="hebo")
        y = 130
        for heading in ("1 Priming the pump", "2 Winter storage"):
            page.insert_text((72, y), heading, fontsize=15, fontname="hebo")
            page.insert_textbox(pymupdf.Rect(72, y + 12, 540, y + 140), FILLER * 2, fontsize=10)
            y += 170
        out.save(pdf)
    report = service.ingest(workspace_copy, [pdf])
    assert report.files[0].status == "ingested", report
    own = service.own_documents(workspace_copy)
    assert [d.file_name for d in own] == ["pump_manual.pdf"]
    questions = service.starter_questions(workspace_copy, own)
    assert any("priming the pump" in q for q in questions), questions
    assert all("pump_manual" in q or "Garden Pump" in q for q in questions), questions

"""Navigation pages and option lists at parse time, on a small manual built here with PyMuPDF:
a title page, a table of contents with dot leaders, content pages with an option list set in
two columns (as texinfo sets `--help` output), and a back-of-book index.

- TOC lines and index entries stay visible as blocks (kind toc / index) but are not units, so
  no index or packer ever sees them as evidence.
- Each option of an option list is one unit (term + definition), not one run-on paragraph.
"""

from __future__ import annotations

from pathlib import Path

import numpy as np
import pymupdf
import pytest

from backend.config import IngestSettings
from backend.config import IndexSettings
from backend.index.encoders import SentenceTransformerEncoder
from backend.index.lexical import BM25Index
from backend.ingest.extract import Line, RawPage, RawTable, TextBlock
from backend.ingest.layout import layout_document
from backend.ingest.parser import parse_pdf
from backend.types import BlockKind, Layer, NodeKind

MANUAL = Path("/usr/share/doc/libtasn1-doc/libtasn1.pdf")
TOC = [
    ("1", "Introduction", 3), ("2", "Structure handling", 3), ("2.1", "Syntax", 3), ("2.2", "Naming", 4),
    ("3", "Utilities", 4), ("3.1", "Invoking treeparse", 4), ("3.2", "Invoking treecode", 5),
]
OPTIONS = [
    ("-c, --check", "checks the syntax only"),
    ("-o, --output=FILE", "output file"),
    ("-n, --name=NAME", "array name"),
    ("-h, --help", "display this help and exit"),
]
INDEX = [
    ("array name", 4), ("checking syntax", 4), ("naming rules", 4), ("output file", 4),
    ("structure handling", 3), ("syntax of definitions", 3), ("treecode program", 5), ("treeparse program", 4),
]
BODY = (
    "The library reads definitions of abstract structures and builds a tree of nodes from them. "
    "Each node has a name, a type and a value, and programs walk the tree to read or write fields. "
)


def _leader(title: str, page: int, width: int = 60) -> str:
    return f"{title} " + ". " * max(3, (width - len(title)) // 2) + str(page)


def _write_manual(path: Path) -> Path:
    with pymupdf.open() as pdf:
        page = pdf.new_page()
        page.insert_text((90, 200), "Treeparse Manual", fontsize=24, fontname="hebo")
        page = pdf.new_page()
        page.insert_text((90, 96), "Table of Contents", fontsize=17, fontname="hebo")
        y = 140
        for number, title, p in TOC:
            x = 90 if "." not in number else 105
            page.insert_text((x, y), number, fontsize=10.9)
            page.insert_text((x + 25, y), _leader(title, p), fontsize=10.9)
            y += 18
        for chapter, (number, title) in enumerate([("1", "Introduction"), ("2", "Structure handling")], start=0):
            page = pdf.new_page()
            page.insert_text((90, 96), f"{number} {title}", fontsize=17, fontname="hebo")
            page.insert_textbox(pymupdf.Rect(90, 120, 520, 400), BODY * 3, fontsize=10.9)
        page = pdf.new_page()
        page.insert_text((90, 96), "3 Utilities", fontsize=17, fontname="hebo")
        page.insert_text((90, 141), "3.1 Invoking treeparse", fontsize=14, fontname="hebo")
        page.insert_textbox(pymupdf.Rect(90, 155, 520, 200), "treeparse reads a file of definitions and writes a C array.", fontsize=10.9)
        page.insert_text((90, 240), "Usage: treeparse [OPTION] FILE", fontsize=10.9, fontname="cour")
        y = 259
        for term, definition in OPTIONS:
            page.insert_text((101, y), term, fontsize=10.9, fontname="cour")
            page.insert_text((227, y), definition, fontsize=10.9, fontname="cour")
            y += 13
        page.insert_textbox(pymupdf.Rect(90, y + 20, 520, y + 120), BODY, fontsize=10.9)
        page = pdf.new_page()
        page.insert_text((90, 96), "3.2 Invoking treecode", fontsize=14, fontname="hebo")
        page.insert_textbox(pymupdf.Rect(90, 120, 520, 400), BODY * 2, fontsize=10.9)
        page = pdf.new_page()
        page.insert_text((90, 96), "Concept Index", fontsize=17, fontname="hebo")
        y = 140
        for letter in sorted({t[0].upper() for t, _ in INDEX}):
            page.insert_text((90, y), letter, fontsize=12, fontname="hebo")
            y += 18
            for term, p in (e for e in INDEX if e[0][0].upper() == letter):
                page.insert_text((90, y), _leader(term, p, 50), fontsize=10.9)
                y += 11
            y += 8
        pdf.set_toc([[1, "Treeparse Manual", 1], [1, "1 Introduction", 3], [1, "2 Structure handling", 4],
                     [1, "3 Utilities", 5], [2, "3.1 Invoking treeparse", 5], [2, "3.2 Invoking treecode", 6],
                     [1, "Concept Index", 7]])
        pdf.save(path)
    return path


@pytest.fixture(scope="module")
def manual(tmp_path_factory):
    path = _write_manual(tmp_path_factory.mktemp("manual") / "treeparse.pdf")
    return parse_pdf(path, IngestSettings(), None)


def _units(doc):
    return [n for n in doc.nodes if n.layer in (Layer.COMPONENT, Layer.SUBCOMPONENT)]


def test_toc_lines_are_blocks_of_kind_toc_and_no_unit(manual):
    toc_blocks = [b for b in manual.blocks if b.kind == BlockKind.TOC]
    assert {b.page for b in toc_blocks} == {2}
    assert any("Structure handling" in b.text for b in toc_blocks)  # visible in the parse view
    assert all(b.node is None for b in toc_blocks)
    leaky = [n.text for n in _units(manual) if n.page == 2 or ". . . ." in n.text]
    assert not leaky, leaky


def test_index_entries_are_blocks_of_kind_index_and_no_unit(manual):
    index_blocks = [b for b in manual.blocks if b.kind == BlockKind.INDEX]
    assert {b.page for b in index_blocks} == {7}
    assert any("treecode program" in b.text for b in index_blocks)
    assert not [n.text for n in _units(manual) if n.page == 7]
    assert "Concept Index" in [s.title for s in manual.sections]  # the heading still opens its section


def test_content_pages_keep_their_paragraphs(manual):
    pages = {n.page for n in manual.nodes if n.kind == NodeKind.PARAGRAPH}
    assert {3, 4, 5, 6} <= pages


def test_each_option_is_one_unit_with_its_definition(manual):
    paragraphs = [n for n in manual.nodes if n.kind == NodeKind.PARAGRAPH and n.page == 5]
    for term, definition in OPTIONS:
        unit = [n for n in paragraphs if n.text.startswith(term)]
        assert len(unit) == 1, (term, [n.text for n in paragraphs])
        assert definition in unit[0].text and unit[0].role == BlockKind.LIST_ITEM.value
        others = [t for t, _ in OPTIONS if t != term]
        assert not any(o in unit[0].text for o in others), unit[0].text


def test_the_check_option_question_finds_its_item(manual):
    """Lexical and dense retrieval over the paragraphs rank the -c item first: before, one unit
    carried every option and its definition, so no answer could point at -c alone."""
    paragraphs = [n for n in manual.nodes if n.kind == NodeKind.PARAGRAPH]
    index = BM25Index([n.id for n in paragraphs], [n.text for n in paragraphs])
    best_id, _ = index.search("What does the --check option do?", 1)[0]
    assert next(n.text for n in paragraphs if n.id == best_id) == "-c, --check checks the syntax only"
    encoder = SentenceTransformerEncoder(IndexSettings(device="cpu"))
    vectors = encoder.encode([n.text for n in paragraphs])  # (n, dim), normalised
    scores = vectors @ encoder.encode(["What does the -c option do?"])[0]
    assert paragraphs[int(np.argmax(scores))].text == "-c, --check checks the syntax only"


@pytest.mark.skipif(not MANUAL.exists(), reason="libtasn1-doc is not installed (apt-get install libtasn1-doc)")
def test_the_gnu_manual_toc_and_index_are_not_units():
    doc = parse_pdf(MANUAL, IngestSettings(), None)
    units = _units(doc)
    assert not [n.text for n in units if "ASN.1 structure handling . ." in n.text or n.page in (3, 35, 36)]
    assert any(b.kind == BlockKind.TOC and "ASN.1 structure handling" in b.text for b in doc.blocks)
    checks = [n for n in units if n.kind == NodeKind.PARAGRAPH and n.text.startswith("-c, --check")]
    assert checks and all(n.text == "-c, --check checks the syntax only" for n in checks)


def test_a_header_read_from_above_a_table_is_the_tables_but_prose_there_stays_prose():
    # find_tables may take the text just above a table's rules for its header (an "external" header).
    # Those words are the table's: "December 31," was also a paragraph of its own. A sentence there
    # (a boxed note read as a table) stays a paragraph, so that the reader can still cite it.
    def block(text: str, bbox) -> TextBlock:
        return TextBlock(lines=[Line(text=text, bbox=bbox, size=10.0, bold=False)], bbox=bbox)

    def page(head_text: str) -> RawPage:
        table = RawTable(bbox=(72, 120, 522, 200), header=["", head_text, "2018"], header_bbox=(72, 100, 522, 120),
                         rows=[["Revenue", "120", "100"], ["Costs", "80", "70"]], row_bboxes=[(72, 120, 522, 160), (72, 160, 522, 200)])
        prose = block("The company's results for the year are set out in the table below, with comparatives.", (72, 60, 522, 72))
        return RawPage(number=1, width=595, height=842, blocks=[prose, block(head_text, (230, 104, 300, 116))], tables=[table])

    texts = [b.text for b in layout_document([page("December 31,")])[0] if b.kind != BlockKind.TABLE]
    assert "December 31," not in texts and any(t.startswith("The company's results") for t in texts)
    sentence = "Revenue and operating income included an unfavorable currency impact of 5% and 8%, respectively."
    texts = [b.text for b in layout_document([page(sentence)])[0] if b.kind != BlockKind.TABLE]
    assert sentence in texts

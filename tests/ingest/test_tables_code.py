"""Borderless tables (backend/ingest/borderless.py) and code listings (backend/ingest/code.py):
a table set without ruling lines is found when its columns align under a header, prose set in two
columns is not; lines in a typewriter font become a code unit, not a paragraph. The first tests
write their PDF here; the last ones read real manuals (glpk.pdf, R-intro.pdf) from Debian."""

from __future__ import annotations

from pathlib import Path

import pymupdf
import pytest

from backend.config import IngestSettings
from backend.ingest.extract import extract_page
from backend.ingest.layout import layout_document
from backend.ingest.parser import parse_pdf
from backend.types import BlockKind, NodeKind

PROSE = ("The routine sets the type and bounds of the row of the problem object, as the parameters",
         "type, lb and ub specify them; a row without a lower bound ignores the parameter lb and a",
         "row without an upper bound ignores ub, while a fixed row uses lb alone as its value here.")
TABLE = (("Type", "Bounds", "Comment"), ("GLP_FR", "-inf < x < +inf", "Free (unbounded) variable"),
         ("GLP_LO", "lb <= x < +inf", "Variable with lower bound"), ("GLP_UP", "-inf < x <= ub", "Variable with upper bound"),
         ("GLP_FX", "lb = x = ub", "Fixed variable"))
CODE = ("int main(void)", "{", "    glp_prob *P = glp_create_prob();", "    return 0;", "}")


def _write(path: Path, *, table: bool = True, code: bool = True, two_columns: bool = False) -> Path:
    doc = pymupdf.open()
    page = doc.new_page(width=612, height=792)
    y = 80.0
    for line in PROSE:
        page.insert_text((72, y), line, fontname="helv", fontsize=10)
        y += 13
    if table:
        y += 8
        for row in TABLE:
            for x, cell in zip((150, 240, 350), row):
                page.insert_text((x, y), cell, fontname="helv", fontsize=10)
            y += 13.5
        y += 8
    if code:
        for line in CODE:
            indent = len(line) - len(line.lstrip())  # set by position, as TeX sets it: Courier 10 is 6 pt a character
            page.insert_text((90 + 6 * indent, y), line.lstrip(), fontname="cour", fontsize=10)
            y += 12
        y += 8
    if two_columns:
        words = "the model reads each page of the report and finds the tables and the figures".split()
        for i in range(12):
            left = " ".join(words[i % 5: i % 5 + 8])
            page.insert_text((72, y), left, fontname="helv", fontsize=10)
            page.insert_text((320, y), left.upper().lower(), fontname="helv", fontsize=10)
            y += 13
    for line in PROSE:
        page.insert_text((72, y), line, fontname="helv", fontsize=10)
        y += 13
    doc.save(path)
    return path


def _blocks(path: Path, pages: tuple[int, ...] = (1,)):
    with pymupdf.open(path) as pdf:
        raws = [extract_page(pdf[p - 1], find_tables=True, max_tables=10, ocr_engine=None, ocr_language="eng", ocr_dpi=100)[0]
                for p in pages]
    return layout_document(raws)[0]


def test_a_table_without_rules_is_found_when_its_columns_align(tmp_path):
    blocks = _blocks(_write(tmp_path / "t.pdf", code=False))
    tables = [b for b in blocks if b.kind == BlockKind.TABLE]
    assert len(tables) == 1
    assert tables[0].table.header == ["Type", "Bounds", "Comment"]
    assert tables[0].table.rows[0] == ["GLP_FR", "-inf < x < +inf", "Free (unbounded) variable"]
    assert len(tables[0].table.rows) == 4
    text = " ".join(b.text for b in blocks if b.kind != BlockKind.TABLE)
    assert "GLP_FR" not in text and "The routine sets" in text  # the table's lines left the text, the prose stayed


def test_prose_in_two_columns_is_not_a_table(tmp_path):
    blocks = _blocks(_write(tmp_path / "p.pdf", table=False, code=False, two_columns=True))
    assert not any(b.kind == BlockKind.TABLE for b in blocks)


def test_code_lines_become_a_code_unit_with_its_indentation(tmp_path):
    pdf = _write(tmp_path / "c.pdf", table=False)
    parsed = parse_pdf(pdf, IngestSettings(ocr="none"), None)
    code = [n for n in parsed.nodes if n.kind == NodeKind.CODE]
    assert len(code) == 1
    assert code[0].text.splitlines() == list(CODE)
    assert not any("glp_create_prob" in n.text for n in parsed.nodes if n.kind == NodeKind.PARAGRAPH)
    lines = [n for n in parsed.nodes if n.parent == code[0].id]
    assert [n.text for n in lines] == [c.strip() for c in CODE]
    assert any(b.kind == BlockKind.CODE for b in parsed.blocks)


# ---------------------------------------------------------------- real manuals (Debian packages)


def _manual(package: str, member: str) -> Path:
    from tests.fixtures.debian_manuals import DebianManual, ManualUnavailable, fetch_manual

    try:
        return fetch_manual(DebianManual(Path(member).stem, package, member, "", (1, 1)))
    except ManualUnavailable as exc:
        pytest.skip(str(exc))


@pytest.mark.integration
def test_glpk_bounds_table_is_a_table_with_glp_fr_in_its_first_row():
    pdf = _manual("glpk-doc", "usr/share/doc/glpk-doc/glpk.pdf")
    blocks = _blocks(pdf, (20, 21))
    tables = [b for b in blocks if b.kind == BlockKind.TABLE]
    assert [b.page for b in tables] == [20, 21]
    for t in tables:
        assert t.table.header == ["Type", "Bounds", "Comment"]
        assert t.table.rows[0][0] == "GLP_FR" and t.table.rows[0][2] == "Free (unbounded) variable"
    synopsis = [b for b in blocks if b.kind == BlockKind.CODE]
    assert any(b.text.startswith("void glp_set_row_name(") for b in synopsis)


@pytest.mark.integration
def test_r_intro_keeps_code_as_code_and_finds_its_borderless_table():
    pdf = _manual("r-doc-pdf", "usr/share/R/doc/manual/R-intro.pdf")
    blocks = _blocks(pdf, (40, 42))
    frame = [b for b in blocks if b.kind == BlockKind.CODE and b.text.lstrip().startswith("Price")]
    assert frame and "52.00" in frame[0].text.splitlines()[1]  # a printed data frame is a listing, not a table
    tables = [b for b in blocks if b.kind == BlockKind.TABLE]
    assert [t.table.header for t in tables] == [["Distribution", "R name", "additional arguments"]]
    assert len(tables[0].table.rows) == 19


def test_text_around_a_table_in_one_block_stays_text():
    """Lines before and after a table in the same text block stay two blocks of text: one block
    spanning the table would be dropped as the table's own text."""
    from backend.ingest.borderless import find_borderless_tables
    from backend.ingest.extract import Line, RawPage, TextBlock

    def line(x: float, y: float, text: str) -> Line:
        return Line(text=text, bbox=(x, y, x + 5.5 * len(text), y + 10), size=10.0, bold=False)

    lines = [line(72, 80, "The parameters specify the type and the bounds of the row as follows:")]
    y = 100.0
    for row in TABLE:
        lines += [line(x, y, cell) for x, cell in zip((150, 240, 370), row)]
        y += 13.5
    lines.append(line(72, y + 2, "where x is the auxiliary variable associated with the row."))
    page = RawPage(number=1, width=612, height=792, blocks=[TextBlock(lines=lines, bbox=(72, 80, 520, y + 12))])
    tables, blocks = find_borderless_tables(page)
    assert len(tables) == 1 and tables[0].header == ["Type", "Bounds", "Comment"]
    assert [b.text for b in blocks] == [lines[0].text, lines[-1].text]


@pytest.mark.integration
def test_the_free_variable_question_finds_the_glp_fr_row(tmp_path):
    """The issue's question: lexical retrieval over the units of glpk.pdf's pages 18-22 ranks the
    table row that holds both the answer (GLP_FR) and the question's words first. Before, the
    table was short paragraphs: "Free (unbounded) variable" stood apart from "GLP_FR"."""
    from backend.index.lexical import BM25Index
    from tests.fixtures.debian_manuals import write_copy

    window = tmp_path / "glpk-window.pdf"
    write_copy(_manual("glpk-doc", "usr/share/doc/glpk-doc/glpk.pdf"), window, keep_outline=False, page_window=(18, 22))
    parsed = parse_pdf(window, IngestSettings(ocr="none"), None)
    units = [n for n in parsed.nodes if n.kind in (NodeKind.SENTENCE, NodeKind.ROW)]
    index = BM25Index([n.id for n in units], [n.text for n in units])
    best_id, _ = index.search("Which type of variable is a free (unbounded) variable?", 1)[0]
    best = next(n for n in units if n.id == best_id)
    assert best.kind == NodeKind.ROW and best.row.cells[0] == ("Type", "GLP_FR"), best.text

"""Statement tables (backend/ingest/statements.py): a filing's balance sheet, set with white space,
dot leaders and currency signs, with no header over its line items, is one table whose rows keep
their figures under their years; prose with numbers in it, and a list of numbered items, are not."""

from __future__ import annotations

from pathlib import Path

import pymupdf

from backend.config import IngestSettings
from backend.ingest.extract import extract_page
from backend.ingest.layout import layout_document
from backend.ingest.parser import parse_pdf
from backend.ingest.statements import is_figure
from backend.types import BlockKind, NodeKind

ROWS = (
    ("Current assets:", None, None),
    ("Cash and cash equivalents", "$ 2,822,795", "$ 1,467,576"),
    ("Short-term investments", "-", "266,206"),
    ("Other current assets", "536,245", "260,202"),
    ("Total current assets", "7,669,974", "5,720,291"),
    ("Accumulated other comprehensive loss", "(20,557)", "(48,565)"),
    ("Preferred stock, $0.001 par value; 10,000,000 shares authorized; no shares", None, None),
    ("issued and outstanding at December 31, 2017 and 2016", "-", "-"),
    ("Total liabilities and stockholders' equity", "$ 19,012,742", "$ 13,586,610"),
)
PROSE = ("In 2017 our revenues grew to 11,692,713 thousand dollars from 8,830,669 thousand in 2016, as",
         "members grew in every region; operating income rose to 838,679 thousand from 379,793",
         "thousand, and we expect the growth to go on in 2018 as we add 1,000 hours of originals.")


def _right(page: pymupdf.Page, x_right: float, y: float, text: str, size: float = 9) -> None:
    """Set `text` flush right at x_right, as statements set their figures."""
    width = pymupdf.get_text_length(text, fontname="helv", fontsize=size)
    page.insert_text((x_right - width, y), text, fontname="helv", fontsize=size)


def _statement_pdf(path: Path, *, leaders: bool = False) -> Path:
    doc = pymupdf.open()
    page = doc.new_page(width=612, height=792)
    page.insert_text((229, 60), "CONSOLIDATED BALANCE SHEETS", fontname="hebo", fontsize=11)
    y = 80.0
    for line in PROSE:
        page.insert_text((36, y), line, fontname="helv", fontsize=9)
        y += 12
    y += 20
    page.insert_text((470, y), "As of December 31,", fontname="helv", fontsize=9)
    y += 12
    _right(page, 502, y, "2017")
    _right(page, 587, y, "2016")
    y += 14
    for label, a, b in ROWS:
        text = f"{label} {'.' * 30}" if leaders and a else label
        page.insert_text((36, y), text, fontname="helv", fontsize=9)
        if a:
            _right(page, 502, y, a)
            _right(page, 587, y, b)
        y += 11 if label.endswith("no shares") else 13.5  # a label that wraps sits closer to its next line
    doc.save(path)
    return path


def _tables(path: Path):
    with pymupdf.open(path) as pdf:
        raw = extract_page(pdf[0], find_tables=True, max_tables=10, ocr_engine=None, ocr_language="eng", ocr_dpi=100)[0]
    blocks = layout_document([raw])[0]
    return [b for b in blocks if b.kind == BlockKind.TABLE], blocks


def test_figures_as_statements_print_them():
    for text in ("2,822,795", "$ 1,467,576", "(20,557)", "—", "12.5%", "(6) %", "n/a", "$(1,349)"):
        assert is_figure(text), text
    for text in ("Total assets", "Note 5", "2017 and 2016", "10-K"):
        assert not is_figure(text), text


def test_a_balance_sheet_without_rules_is_one_table_with_its_years(tmp_path):
    tables, blocks = _tables(_statement_pdf(tmp_path / "bs.pdf"))
    assert len(tables) == 1
    t = tables[0].table
    assert t.header == ["Line item", "As of December 31, 2017", "As of December 31, 2016"]
    assert t.rows[0] == ["Cash and cash equivalents", "$ 2,822,795", "$ 1,467,576"]
    assert ["Short-term investments", "-", "266,206"] in t.rows
    assert ["Accumulated other comprehensive loss", "(20,557)", "(48,565)"] in t.rows
    wrapped = [r for r in t.rows if r[0].startswith("Preferred stock")]
    assert wrapped and wrapped[0][0].endswith("issued and outstanding at December 31, 2017 and 2016")  # one row, not two
    assert not any(r[0] == "Current assets:" for r in t.rows)  # a group label is not a row
    text = " ".join(b.text for b in blocks if b.kind != BlockKind.TABLE)
    assert "2,822,795" not in text and "revenues grew" in text  # the prose with its numbers stays prose


def test_dot_leaders_and_currency_signs_leave_the_line_items(tmp_path):
    tables, _ = _tables(_statement_pdf(tmp_path / "lead.pdf", leaders=True))
    assert len(tables) == 1
    labels = [r[0] for r in tables[0].table.rows]
    assert "Cash and cash equivalents" in labels and "Total current assets" in labels


def test_prose_and_a_numbered_list_are_not_statements(tmp_path):
    doc = pymupdf.open()
    page = doc.new_page(width=612, height=792)
    y = 80.0
    for _ in range(4):
        for line in PROSE:
            page.insert_text((36, y), line, fontname="helv", fontsize=9)
            y += 12
        y += 6
    for i, item in enumerate(("Business", "Risk Factors", "Properties", "Legal Proceedings")):
        page.insert_text((36, y), f"{i + 1}. {item} and what it covers in the report", fontname="helv", fontsize=9)
        y += 13
    doc.save(tmp_path / "prose.pdf")
    tables, _ = _tables(tmp_path / "prose.pdf")
    assert tables == []


def test_a_statement_row_unit_carries_its_year_and_figure(tmp_path):
    parsed = parse_pdf(_statement_pdf(tmp_path / "bs.pdf"), IngestSettings(ocr="none"), None)
    rows = [n for n in parsed.nodes if n.kind == NodeKind.ROW]
    cash = next(n for n in rows if n.row and n.row.label == "Cash and cash equivalents")
    assert ("As of December 31, 2017", "$ 2,822,795") in [tuple(c) for c in cash.row.cells]
    assert not any(n.kind == NodeKind.PARAGRAPH and "2,822,795" in n.text for n in parsed.nodes)


def _ruled(path: Path, *, grid: bool, background: bool = False) -> Path:
    doc = pymupdf.open()
    page = doc.new_page(width=612, height=792)
    if background:
        page.draw_rect(pymupdf.Rect(0, -4000, 612, 9000), color=None, fill=(1, 1, 1))  # a filing's white page background
    y = 100.0
    for label, a, b in ROWS[1:5]:
        page.insert_text((36, y), label, fontname="helv", fontsize=9)
        _right(page, 502, y, a)
        _right(page, 587, y, b)
        page.draw_line((30 if grid else 440, y + 4), (590, y + 4), color=(0, 0, 0), width=0.5)  # the rule under the row (its figures)
        y += 18
    if grid:
        for x in (30, 440, 515, 590):
            page.draw_line((x, 85), (x, y - 14), color=(0, 0, 0), width=0.5)
        page.draw_line((30, 85), (590, 85), color=(0, 0, 0), width=0.5)
    doc.save(path)
    return path


def test_find_tables_does_not_run_for_rules_under_figures_and_a_page_background(tmp_path):
    def raw(path: Path):
        with pymupdf.open(path) as pdf:
            return extract_page(pdf[0], find_tables=True, max_tables=10, ocr_engine=None, ocr_language="eng", ocr_dpi=100)[0]

    underlined = raw(_ruled(tmp_path / "u.pdf", grid=False, background=True))
    assert not underlined.has_lines and underlined.tables == []  # rules under figures and a white background: no grid
    ruled = raw(_ruled(tmp_path / "g.pdf", grid=True))
    assert ruled.has_lines and len(ruled.tables) == 1  # a grid: find_tables runs and reads it
    assert any("Cash and cash equivalents" in " ".join(r) for r in ruled.tables[0].rows + [ruled.tables[0].header])

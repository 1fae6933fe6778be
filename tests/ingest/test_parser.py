"""The parser on real PDFs: the sample corpus (whose structure sample_corpus/README.md documents),
two benchmark PDFs, and a scanned page that needs OCR.

Expectations come from sample_corpus/README.md and build_sample_corpus.py; regenerate them on
purpose when the sample corpus changes.
"""

from __future__ import annotations

import re
import shutil
from collections import Counter
from pathlib import Path

import pymupdf
import pytest

from backend.config import IngestSettings
from backend.ingest.parser import parse_pdf
from backend.types import BlockKind, EdgeKind, Layer, NodeKind, ParsedDocument
from tests.fakes import ruled_table

REPO_ROOT = Path(__file__).resolve().parents[2]
SAMPLE_DIR = REPO_ROOT / "sample_corpus"
BENCH_DIR = REPO_ROOT.parent / "shared" / "bench"
TATQA = BENCH_DIR / "dev-tatqa-pdf" / "corpus"
HOTPOT = BENCH_DIR / "dev-hotpot-pdf" / "corpus"

TITLES = {
    "cool_streets_report.pdf": "Cool Streets Programme 2019-2023: Final Report",
    "methods_appendix.pdf": "Technical Appendix: Canopy and Heat Mapping Methods",
    "data_annex.pdf": "Data Annex: Cool Streets Monitoring Tables 2019-2023",
    "policy_brief.pdf": "Shade Where It Matters: Lessons from Larkhaven's Cool Streets Programme",
}
PAGES = {"cool_streets_report.pdf": 5, "methods_appendix.pdf": 4, "data_annex.pdf": 3, "policy_brief.pdf": 3}
TABLES = {"cool_streets_report.pdf": 3, "methods_appendix.pdf": 2, "data_annex.pdf": 4, "policy_brief.pdf": 0}
FIGURES = {"cool_streets_report.pdf": 3, "methods_appendix.pdf": 2, "data_annex.pdf": 0, "policy_brief.pdf": 1}


@pytest.fixture(scope="module")
def parse_root(tmp_path_factory) -> Path:
    return tmp_path_factory.mktemp("parse")


@pytest.fixture(scope="module")
def parsed(parse_root) -> dict[str, ParsedDocument]:
    """Each sample PDF parsed once, in process; crops go to parse_root/crops/<doc id>/."""
    settings = IngestSettings()
    return {name: parse_pdf(SAMPLE_DIR / name, settings, parse_root / "crops") for name in TITLES}


def _by_number(doc: ParsedDocument) -> dict[str, object]:
    return {s.number: s for s in doc.sections if s.number}


def _depth(number: str) -> int:
    return 1 if re.fullmatch(r"[A-Z]", number) else number.count(".") + 1


def _nodes(doc: ParsedDocument) -> dict:
    return {n.id: n for n in doc.nodes}


# ---------------------------------------------------------------- documents and sections


def test_titles_pages_and_hierarchy_source(parsed):
    for name, doc in parsed.items():
        assert doc.document.title == TITLES[name]
        assert doc.document.pages == PAGES[name]
        assert doc.document.file_name == name
        assert len(doc.document.page_sizes) == PAGES[name]
        assert doc.document.warnings == [], f"{name}: unexpected warnings {doc.document.warnings}"
    # The report and the data annex carry an outline; the other two must be read from numbering and fonts.
    for name in TITLES:
        has_outline = bool(pymupdf.open(SAMPLE_DIR / name).get_toc())
        assert has_outline == (name in ("cool_streets_report.pdf", "data_annex.pdf"))
        assert (parsed[name].document.hierarchy_source == "outline") == has_outline


def test_report_sections_come_from_the_outline(parsed):
    doc = parsed["cool_streets_report.pdf"]
    numbered = [s for s in doc.sections if s.number]
    assert [s.number for s in numbered] == ["1", "2", "2.1", "2.2", "3", "3.1", "3.2", "3.3", "4", "A"]
    assert all(s.source == "outline" and s.confidence == 1.0 for s in numbered)
    by_number = _by_number(doc)
    assert by_number["A"].title.startswith("Appendix A")
    assert by_number["A"].level == 1
    assert by_number["3.3"].path == [TITLES["cool_streets_report.pdf"], "3 Results", "3.3 Tree planting and survival"]


def test_methods_appendix_third_level_headings_without_outline(parsed):
    doc = parsed["methods_appendix.pdf"]
    title = TITLES["methods_appendix.pdf"]
    by_number = _by_number(doc)
    for number in ("2.1.1", "2.1.2", "2.2.1", "2.2.2"):
        assert number in by_number, f"heading {number} not found; sections: {[s.title for s in doc.sections]}"
        assert by_number[number].level == 3
        assert by_number[number].source in ("numbering", "font", "toc")
    sections = {s.id: s for s in doc.sections}
    s212 = by_number["2.1.2"]
    assert sections[s212.parent].number == "2.1"
    assert sections[sections[s212.parent].parent].number == "2"
    assert s212.path == [title, "2 Methods", "2.1 Canopy mapping from airborne LiDAR", "2.1.2 Canopy height threshold"]
    assert by_number["A"].title.startswith("Appendix A") and by_number["A"].level == 1


def test_numbered_sections_have_the_level_of_their_number(parsed):
    for name, doc in parsed.items():
        sections = {s.id: s for s in doc.sections}
        roots = [s for s in doc.sections if s.level == 0]
        assert len(roots) == 1 and roots[0].path == [TITLES[name]]
        for s in doc.sections:
            if s.number:
                assert s.level == _depth(s.number), f"{name}: {s.title!r} has level {s.level}"
                parent = sections[s.parent]
                if "." in s.number:
                    assert parent.number == s.number.rsplit(".", 1)[0], f"{name}: {s.title!r} under {parent.title!r}"
            if s.parent:
                assert sections[s.parent].path == s.path[:-1]
                assert sections[s.parent].level < s.level


def test_policy_brief_subsections(parsed):
    by_number = _by_number(parsed["policy_brief.pdf"])
    assert {"1", "2", "3", "3.1", "3.2", "3.3", "4", "4.1", "4.2", "4.3", "4.4", "5"} <= set(by_number)
    assert by_number["3.3"].path[-2:] == ["3 Findings", "3.3 Costs"]


# ---------------------------------------------------------------- tables and figures


def test_tables_with_captions_and_header_repeated_in_every_row(parsed, parse_root):
    for name, doc in parsed.items():
        nodes = _nodes(doc)
        tables = [n for n in doc.nodes if n.kind == NodeKind.TABLE]
        assert len(tables) == TABLES[name], f"{name}: {len(tables)} tables"
        captions = {e.dst: nodes[e.src] for e in doc.edges if e.kind == EdgeKind.CAPTION}
        for t in tables:
            assert t.label and re.fullmatch(r"Table \d+", t.label), t.label
            cap = captions.get(t.id)
            assert cap is not None and cap.role == "caption" and cap.text.startswith(f"{t.label}:")
            assert cap.page == t.page and cap.bbox[3] <= t.bbox[1] + 1, "captions sit above the sample tables"
            assert t.context == cap.text
            lines = t.text.split("\n")
            assert lines[0] == cap.text
            header = [h for h in lines[1].split(" | ") if h]
            rows = [n for n in doc.nodes if n.parent == t.id]
            assert 5 <= len(rows) <= 7, f"{name} {t.label}: {len(rows)} rows"
            for r in rows:
                assert r.kind == NodeKind.ROW and r.layer == Layer.SUBCOMPONENT
                assert r.text.startswith(f"{t.label}: ")
                assert r.row is not None and r.row.table == t.label and r.row.index_text() == r.text  # the cells write the text
                assert [c.header for c in r.row.cells] == [h for h in header if f"{h}: " in r.text]
                for h in header:
                    assert f"{h}: " in r.text, f"{name} {t.label}: header {h!r} missing from row {r.text!r}"
                assert r.page == t.page and r.bbox is not None
                assert t.bbox[1] - 1 <= r.bbox[1] and r.bbox[3] <= t.bbox[3] + 1
            assert t.crop and (parse_root / t.crop).is_file()


def test_known_table_content(parsed):
    doc = parsed["cool_streets_report.pdf"]
    table1 = next(n for n in doc.nodes if n.label == "Table 1" and n.kind == NodeKind.TABLE)
    rows = [n.text for n in doc.nodes if n.parent == table1.id]
    eastgate = [r for r in rows if "District: Eastgate" in r]
    assert len(eastgate) == 1
    assert "Canopy 2019 (%): 10.9" in eastgate[0] and "Canopy 2023 (%): 14.6" in eastgate[0]
    cells = next(n.row for n in doc.nodes if n.parent == table1.id and n.text == eastgate[0]).cells
    assert cells[0] == ("District", "Eastgate") and ("Canopy 2023 (%)", "14.6") in cells
    annex = parsed["data_annex.pdf"]
    table2 = next(n for n in annex.nodes if n.label == "Table 2" and n.kind == NodeKind.TABLE)
    summer_2022 = [n.text for n in annex.nodes if n.parent == table2.id and "Summer: 2022" in n.text]
    assert summer_2022 and "Ambulance call-outs: 232" in summer_2022[0]


def test_figures_have_crops_captions_and_context(parsed, parse_root):
    for name, doc in parsed.items():
        nodes = _nodes(doc)
        figures = [n for n in doc.nodes if n.kind == NodeKind.FIGURE]
        assert len(figures) == FIGURES[name], f"{name}: {len(figures)} figures"
        captions = {e.dst: nodes[e.src] for e in doc.edges if e.kind == EdgeKind.CAPTION}
        for f in figures:
            assert f.label and re.fullmatch(r"Figure \d+", f.label)
            cap = captions[f.id]
            assert cap.text.startswith(f"{f.label}:") and cap.page == f.page
            assert cap.bbox[1] >= f.bbox[3] - 1, "captions sit below the sample figures"
            assert f.context == cap.text and f.text.startswith(cap.text)
            crop = parse_root / f.crop
            assert crop.is_file() and crop.stat().st_size > 500
            pix = pymupdf.Pixmap(str(crop))
            # The crop has the figure's aspect ratio (crop_dpi scaling aside).
            w, h = f.bbox[2] - f.bbox[0], f.bbox[3] - f.bbox[1]
            assert abs(pix.width / pix.height - w / h) < 0.05 * (w / h)
            objects = [n for n in doc.nodes if n.parent == f.id]
            assert objects and all(o.kind == NodeKind.OBJECT for o in objects)


def test_vector_chart_axis_labels_belong_to_the_figure(parsed):
    """Report Figure 1 is a vector line chart: its tick labels are part of the figure, not paragraphs."""
    doc = parsed["cool_streets_report.pdf"]
    fig = next(n for n in doc.nodes if n.label == "Figure 1" and n.kind == NodeKind.FIGURE)
    assert "Hour of day" in fig.text and "00:00" in fig.text
    stray = [n.text for n in doc.nodes if n.kind == NodeKind.PARAGRAPH and n.page == fig.page and re.fullmatch(r"\d{2}", n.text)]
    assert stray == []


# ---------------------------------------------------------------- edges


def _xref_targets(doc: ParsedDocument) -> dict[tuple[str, str], str]:
    """(source node id, matched text) -> target id for every xref edge."""
    return {(e.src, e.provenance): e.dst for e in doc.edges if e.kind == EdgeKind.XREF}


@pytest.mark.parametrize(
    "name, mention, target",
    [
        ("cool_streets_report.pdf", "Table 1", ("label", "Table 1")),
        ("cool_streets_report.pdf", "Figure 2", ("label", "Figure 2")),
        ("cool_streets_report.pdf", "Fig. 3", ("label", "Figure 3")),
        ("cool_streets_report.pdf", "Section 2.1", ("number", "2.1")),
        ("cool_streets_report.pdf", "Appendix A", ("number", "A")),
        ("cool_streets_report.pdf", "§3", ("number", "3")),
        ("methods_appendix.pdf", "§2.1.2", ("number", "2.1.2")),
        ("methods_appendix.pdf", "Table 1", ("label", "Table 1")),
        ("data_annex.pdf", "Table 2", ("label", "Table 2")),
        ("policy_brief.pdf", "Figure 1", ("label", "Figure 1")),
    ],
)
def test_cross_references_resolve_to_the_labelled_unit(parsed, name, mention, target):
    doc = parsed[name]
    nodes = _nodes(doc)
    hits = [dst for (src, text), dst in _xref_targets(doc).items() if text == mention]
    assert hits, f"no xref edge for {mention!r} in {name}"
    for dst in hits:
        node = nodes[dst]
        if target[0] == "label":
            assert node.label == target[1] and node.kind in (NodeKind.TABLE, NodeKind.FIGURE), (mention, node)
        else:
            section = next(s for s in doc.sections if s.id == dst)
            assert section.number == target[1]


def test_every_xref_edge_matches_its_text(parsed):
    for name, doc in parsed.items():
        nodes = _nodes(doc)
        sections = {s.id: s for s in doc.sections}
        for e in (e for e in doc.edges if e.kind == EdgeKind.XREF):
            assert e.provenance in nodes[e.src].text
            number = re.search(r"([A-Z]?\d+(?:\.\d+)*|[A-Z])$", e.provenance).group(1)
            if e.dst in sections:
                assert sections[e.dst].number == number, (name, e)
            else:
                assert nodes[e.dst].label.split()[-1] == number, (name, e)


def test_internal_links_land_on_the_referenced_unit(parsed):
    """Every GoTo link of the sample corpus sits on a cross-reference; the link edge must reach
    the unit the cross-reference names (or the caption of that table/figure)."""
    for name, doc in parsed.items():
        nodes = _nodes(doc)
        caption_of = {e.src: e.dst for e in doc.edges if e.kind == EdgeKind.CAPTION}
        xrefs = {(e.src, e.dst) for e in doc.edges if e.kind == EdgeKind.XREF}
        links = [e for e in doc.edges if e.kind == EdgeKind.LINK]
        assert len(links) >= 4, f"{name}: {len(links)} link edges"
        for e in links:
            target = caption_of.get(e.dst, e.dst)
            assert (e.src, target) in xrefs, f"{name}: link {nodes[e.src].text[:40]!r} -> {nodes[e.dst].text[:40]!r}"
            assert nodes[e.dst].page == int(e.provenance.rsplit(" ", 1)[-1])


def test_links_to_other_files_are_kept_for_the_corpus(parsed):
    pending = {(name, link.target, link.provenance) for name, doc in parsed.items() for link in doc.doc_links}
    assert ("cool_streets_report.pdf", "methods_appendix.pdf", "file link") in pending
    assert ("cool_streets_report.pdf", "policy_brief.pdf", "file link") in pending
    assert ("policy_brief.pdf", "https://example.org/strata/data_annex.pdf", "uri link") in pending
    for name, doc in parsed.items():
        ids = {n.id for n in doc.nodes}
        assert all(link.src in ids for link in doc.doc_links)


# ---------------------------------------------------------------- layout


def test_running_headers_and_page_numbers_are_furniture(parsed):
    for name, doc in parsed.items():
        furniture = [b for b in doc.blocks if b.kind in (BlockKind.HEADER, BlockKind.FOOTER, BlockKind.PAGE_NUMBER)]
        pages_with_number = {b.page for b in furniture if re.fullmatch(r"Page \d+ of \d+", b.text)}
        assert pages_with_number == set(range(1, PAGES[name] + 1)), name
        headers = {b.page for b in furniture if "Larkhaven City Council" in b.text and b.kind == BlockKind.HEADER}
        assert headers == set(range(1, PAGES[name] + 1)), name
        assert all(b.node is None for b in furniture)
        texts = [n.text for n in doc.nodes if n.layer in (Layer.COMPONENT, Layer.SUBCOMPONENT)]
        assert not any(re.search(r"Page \d+ of \d+", t) for t in texts), f"{name}: a page number became text"
        running = furniture[0].text if furniture else ""
        assert not any(t.strip() == running for t in texts)


def test_two_column_page_reading_order(parsed):
    """policy_brief.pdf page 2: a paragraph of 3.3 runs from the bottom of the left column to the
    top of the right one; the right column's text must follow it, before section 4."""
    doc = parsed["policy_brief.pdf"]
    paras = sorted((n for n in doc.nodes if n.kind == NodeKind.PARAGRAPH and n.page == 2), key=lambda n: n.order)
    left_end = next(n for n in paras if n.text.startswith("Most of the money went into the ground"))
    right_top = next(n for n in paras if n.text.startswith("engagement, including the street tree volunteers"))
    assert left_end.bbox[0] < 150 < right_top.bbox[0], "fixture check: the two parts are in different columns"
    assert right_top.bbox[1] < left_end.bbox[1]
    assert paras.index(right_top) == paras.index(left_end) + 1
    assert right_top.section == left_end.section
    costs = next(s for s in doc.sections if s.number == "3.3")
    assert right_top.section == costs.id
    nexts = {(e.src, e.dst) for e in doc.edges if e.kind == EdgeKind.NEXT}
    assert (left_end.id, right_top.id) in nexts
    # Everything of the left column comes before everything of the right column.
    body = [b for b in sorted(doc.blocks, key=lambda b: b.order) if b.page == 2 and b.kind not in (BlockKind.HEADER, BlockKind.PAGE_NUMBER)]
    columns = ["L" if b.bbox[2] < 300 else "R" for b in body]
    assert columns == sorted(columns), columns


def test_wrapped_list_items_stay_one_item(parsed):
    """policy_brief's key messages wrap onto a second, indented line that PyMuPDF returns as its
    own block; it must stay part of its list item, not become a paragraph of its own."""
    doc = parsed["policy_brief.pdf"]
    items = [n for n in doc.nodes if n.kind == NodeKind.PARAGRAPH and n.role == "list_item" and n.page == 1]
    first = next(n for n in items if n.text.lstrip("-• ").startswith("Tree canopy in Larkhaven rose"))
    assert first.text.endswith("gained the most.")
    assert not any(n.text == "gained the most." for n in doc.nodes if n.kind == NodeKind.PARAGRAPH)


def test_every_node_has_a_page_and_a_box_inside_it(parsed):
    for name, doc in parsed.items():
        sizes = doc.document.page_sizes
        for n in doc.nodes:
            assert 1 <= n.page <= doc.document.pages, (name, n.id, n.page)
            if n.kind in (NodeKind.DOCUMENT,):
                continue
            if n.kind == NodeKind.SECTION and n.bbox is None:
                continue  # the root section of a document without a title block
            assert n.bbox is not None, (name, n.id)
            w, h = sizes[n.page - 1]
            x0, y0, x1, y1 = n.bbox
            assert -1 <= x0 <= x1 <= w + 1 and -1 <= y0 <= y1 <= h + 1, (name, n.id, n.bbox)
        for b in doc.blocks:
            w, h = sizes[b.page - 1]
            assert -1 <= b.bbox[0] <= b.bbox[2] <= w + 1 and -1 <= b.bbox[1] <= b.bbox[3] <= h + 1


def test_node_ids_are_stable_across_parses(parsed, tmp_path):
    name = "policy_brief.pdf"
    copy = tmp_path / "renamed.pdf"
    shutil.copyfile(SAMPLE_DIR / name, copy)
    again = parse_pdf(copy, IngestSettings(), None, display_name=name)
    first = parsed[name]
    assert again.document.id == first.document.id
    assert [(n.id, n.kind, n.text) for n in again.nodes] == [(n.id, n.kind, n.text) for n in first.nodes]
    assert sorted((e.src, e.dst, e.kind) for e in again.edges) == sorted((e.src, e.dst, e.kind) for e in first.edges)
    ids = [n.id for n in first.nodes]
    assert len(ids) == len(set(ids))
    assert all(i.startswith(first.document.id) for i in ids)


# ---------------------------------------------------------------- benchmark PDFs


needs_bench = pytest.mark.skipif(not TATQA.is_dir(), reason=f"shared benchmark PDFs not found at {BENCH_DIR}")


def _run_on_report(path: Path, open_top: bool, second_page_prose: str | None = None) -> None:
    """A balance sheet whose table runs on to a second page, where its rows go on under no header."""
    doc = pymupdf.open()
    page = doc.new_page()
    page.insert_text((72, 560), "The venture's assets and liabilities are as follows.", fontsize=11)
    page.insert_text((72, 600), "Table 1: Balance sheet of the venture", fontsize=10)
    ruled_table(page, 620, [["As of", "2019", "2018"], ["Cash and equivalents", "$130", "$91"], ["Receivables", "128", "126"],
                            ["Total current assets", "391", "339"]])
    page = doc.new_page()
    top = 60
    if second_page_prose:
        page.insert_text((72, 60), second_page_prose, fontsize=11)
        top = 100
    ruled_table(page, top, [["Property, plant, and equipment", "2,235", "2,641"], ["Total assets", "$2,664", "$3,025"],
                            ["Current debt", "696", "20"], ["Total liabilities", "$909", "$1,305"]], open_top=open_top)
    doc.save(path)


@pytest.mark.parametrize("open_top", [True, False], ids=["header read from above the rules", "first row read as header"])
def test_a_table_run_on_to_the_next_page_keeps_its_header_and_label(tmp_path, open_top):
    # TAT-QA's IMFT balance sheet: page 2's rows were read under the columns "2,235" and "2,641" (its
    # first row taken for a header), and that row was also a paragraph of its own.
    _run_on_report(tmp_path / "venture.pdf", open_top)
    doc = parse_pdf(tmp_path / "venture.pdf", IngestSettings(), None)
    tables = sorted((n for n in doc.nodes if n.kind == NodeKind.TABLE), key=lambda n: n.page)
    assert [t.page for t in tables] == [1, 2]
    first, run_on = tables
    assert run_on.label == first.label == "Table 1"
    assert run_on.context == first.context
    rows = [n.text for n in doc.nodes if n.parent == run_on.id]
    assert rows[0] == "Table 1: As of: Property, plant, and equipment; 2019: 2,235; 2018: 2,641", rows
    assert rows[-1] == "Table 1: As of: Total liabilities; 2019: $909; 2018: $1,305", rows
    row_boxes = [n.bbox for n in doc.nodes if n.parent == run_on.id]
    assert run_on.bbox[1] <= row_boxes[0][1] + 1, "the table's box holds its first row"
    assert not [n.text for n in doc.nodes if n.kind == NodeKind.PARAGRAPH and n.page == 2], "no row repeated as prose"


def test_a_table_after_prose_on_the_next_page_is_a_table_of_its_own(tmp_path):
    _run_on_report(tmp_path / "venture.pdf", False, second_page_prose="The figures below are the venture's own.")
    doc = parse_pdf(tmp_path / "venture.pdf", IngestSettings(), None)
    run_on = next(n for n in doc.nodes if n.kind == NodeKind.TABLE and n.page == 2)
    rows = [n.text for n in doc.nodes if n.parent == run_on.id]
    assert not any("2019" in r for r in rows), rows  # its header is its own first row, as before


def test_a_units_row_under_the_header_belongs_to_the_header(tmp_path):
    # "2019 | 2018" over "£m | £m": the units row was a row of its own ("Table 1: 2019: £m; 2018: £m"),
    # which a reader could cite and whose units the figures below lost. A column of words keeps its rows.
    doc = pymupdf.open()
    page = doc.new_page()
    ruled_table(page, 100, [["", "2019", "2018"], ["", "£m", "£m"], ["Revenue", "120.5", "100.1"], ["Costs", "80.2", "70.4"]])
    ruled_table(page, 300, [["Term", "Meaning"], ["EBITDA", "before interest"], ["Capex", "capital spend"], ["Opex", "running costs"]])
    doc.save(tmp_path / "units.pdf")
    parsed = parse_pdf(tmp_path / "units.pdf", IngestSettings(), None)
    tables = sorted((n for n in parsed.nodes if n.kind == NodeKind.TABLE), key=lambda n: n.bbox[1])
    figures = [n.text for n in parsed.nodes if n.parent == tables[0].id]
    assert figures == ["column 1: Revenue; 2019 £m: 120.5; 2018 £m: 100.1", "column 1: Costs; 2019 £m: 80.2; 2018 £m: 70.4"], figures
    words = [n.text for n in parsed.nodes if n.parent == tables[1].id]
    assert words[0] == "Term: EBITDA; Meaning: before interest" and len(words) == 3, words


def test_a_header_of_three_lines_over_nil_dashes_and_a_date_is_one_header(tmp_path):
    # "Revised Preliminary / Allocation / As of August 1, 2019" over a column that prints nil as a dash:
    # the dash is a figure, the date a column's name however many words it has, so the three lines make
    # one header and no row reads "Allocation" or "As of August 1, 2019" (tatqa_0a75d1da).
    doc = pymupdf.open()
    page = doc.new_page()
    ruled_table(page, 100, [["", "Revised Preliminary", "Measurement"],
                            ["", "Allocation", "Period"],
                            ["(In millions)", "As of August 1, 2019", "Adjustments"],
                            ["Goodwill", "261.3", "(7.4)"], ["Trade receivables", "37.3", "-"],
                            ["Other receivables", "0.3", "-"], ["Total assets", "540.6", "5.2"]])
    doc.save(tmp_path / "allocation.pdf")
    parsed = parse_pdf(tmp_path / "allocation.pdf", IngestSettings(), None)
    table = next(n for n in parsed.nodes if n.kind == NodeKind.TABLE)
    rows = [n.text for n in parsed.nodes if n.parent == table.id]
    assert rows[0] == ("(In millions): Goodwill; Revised Preliminary Allocation As of August 1, 2019: 261.3; "
                       "Measurement Period Adjustments: (7.4)"), rows
    assert len(rows) == 4, rows


@needs_bench
def test_tatqa_allocation_table_reads_its_three_line_header():
    doc = parse_pdf(TATQA / "tatqa_0a75d1da.pdf", IngestSettings(), None)
    rows = [n.text for n in doc.nodes if n.kind == NodeKind.ROW]
    assert ("Table 1: (In millions): Total liabilities; Revised Preliminary Allocation As of August 1, 2019: $ 94.9; "
            "Measurement Period Adjustments: $ 5.2; Revised Preliminary Allocation As of December 31, 2019: $ 100.1") in rows, rows
    assert not any(r.startswith("Table 1: column 1:") for r in rows), rows


@needs_bench
def test_tatqa_balance_sheet_run_on_to_page_two():
    doc = parse_pdf(TATQA / "tatqa_e9a946ce.pdf", IngestSettings(), None)
    rows = [n.text for n in doc.nodes if n.kind == NodeKind.ROW and n.page == 2]
    assert "Table 1: As of: Total liabilities; 2019: $909; 2018: $1,305" in rows, rows


@needs_bench
def test_tatqa_numbered_headings_and_captioned_table():
    doc = parse_pdf(TATQA / "tatqa_00addb09.pdf", IngestSettings(), None)
    assert doc.document.pages == 2 and doc.document.hierarchy_source == "outline"
    by_number = _by_number(doc)
    assert by_number["1"].title == "1 Financial highlights" and by_number["1"].level == 1
    assert by_number["1.1"].level == 2 and by_number["1.1"].parent == by_number["1"].id
    assert by_number["2"].title == "2 Notes" and by_number["2"].level == 1
    tables = [n for n in doc.nodes if n.kind == NodeKind.TABLE]
    assert len(tables) == 1
    table = tables[0]
    assert table.label == "Table 1" and table.section == by_number["1.1"].id
    assert table.context.startswith("Table 1: $ MILLION, Sales and related items")
    assert any(e.kind == EdgeKind.CAPTION and e.dst == table.id for e in doc.edges)
    rows = [n.text for n in doc.nodes if n.parent == table.id]
    ebit = [r for r in rows if "EBIT" in r and "474" in r]
    assert ebit and "F19" in ebit[0], rows
    # The notes on page 2 belong to section 2.
    notes = [n for n in doc.nodes if n.kind == NodeKind.PARAGRAPH and n.page == 2]
    assert notes and all(n.section == by_number["2"].id for n in notes)


@needs_bench
def test_tatqa_table_rows_follow_the_gold_table():
    """The gold table of TAT-QA context 00a5764e: "Dividend yield | 4.5% | 4.6% | 4.1%" under a
    spanning "Years Ended December 31" row and a "2019 | 2018 | 2017" row."""
    doc = parse_pdf(TATQA / "tatqa_00a5764e.pdf", IngestSettings(), None)
    table = next(n for n in doc.nodes if n.kind == NodeKind.TABLE)
    assert table.label == "Table 1" and table.page == 1
    header = table.text.split("\n")[1].split(" | ")
    assert header[1:] == ["2019", "2018", "2017"], header
    assert "following assumptions" not in table.text.split("\n")[1], "the paragraph above is not the header"
    rows = [n.text for n in doc.nodes if n.parent == table.id]
    dividend = [r for r in rows if "Dividend yield" in r]
    assert len(dividend) == 1 and dividend[0].endswith("2019: 4.5%; 2018: 4.6%; 2017: 4.1%"), rows
    assert any(r.endswith("2019: 28.3%; 2018: 28.7%; 2017: 27.1%") for r in rows), rows
    assert all(r.count("Table 1:") == 1 for r in rows)


@pytest.mark.skipif(not HOTPOT.is_dir(), reason=f"shared benchmark PDFs not found at {BENCH_DIR}")
def test_hotpot_title_link_is_kept_as_a_document_link():
    """HotpotQA pages link article titles to other PDFs of the collection (GoToR file links)."""
    doc = parse_pdf(HOTPOT / "122nd_Division_Imperial_Japanese_Army.pdf", IngestSettings(), None)
    links = [link for link in doc.doc_links if link.target == "122nd_Division.pdf"]
    assert links and links[0].provenance == "file link"
    src = next(n for n in doc.nodes if n.id == links[0].src)
    assert src.layer == Layer.COMPONENT and src.page == 1


# ---------------------------------------------------------------- OCR


def _scanned_pdf(path: Path, lines: list[str]) -> None:
    """A PDF whose only page is an image of rendered text (no text layer)."""
    src = pymupdf.open()
    page = src.new_page(width=420, height=260)
    for i, line in enumerate(lines):
        page.insert_text((36, 70 + 50 * i), line, fontsize=22)
    pix = page.get_pixmap(dpi=150)
    out = pymupdf.open()
    scan = out.new_page(width=420, height=260)
    scan.insert_image(scan.rect, pixmap=pix)
    out.save(path)
    assert pymupdf.open(path)[0].get_text().strip() == "", "fixture check: the page has no text layer"


@pytest.mark.skipif(shutil.which("tesseract") is None, reason="tesseract is not installed")
def test_scanned_page_is_read_with_ocr(tmp_path):
    pdf = tmp_path / "scan.pdf"
    _scanned_pdf(pdf, ["Gravel harbour lanterns", "Quarterly report 2024", "Seventeen copper kettles"])
    doc = parse_pdf(pdf, IngestSettings(ocr="tesseract"), None)
    text = " ".join(n.text for n in doc.nodes if n.kind == NodeKind.PARAGRAPH).lower()
    for word in ("gravel", "harbour", "lanterns", "quarterly", "copper", "kettles"):
        assert word in text, f"{word!r} not in OCR text {text!r}"
    assert any("OCR" in w for w in doc.document.warnings), doc.document.warnings
    # The scan is the page's text, not a figure.
    assert not any(n.kind == NodeKind.FIGURE for n in doc.nodes)


def test_scanned_page_without_ocr_warns_and_does_not_crash(tmp_path):
    pdf = tmp_path / "scan.pdf"
    _scanned_pdf(pdf, ["Gravel harbour lanterns"])
    doc = parse_pdf(pdf, IngestSettings(ocr="none"), None)
    assert any("text is missing" in w for w in doc.document.warnings), doc.document.warnings
    assert not any(n.kind == NodeKind.PARAGRAPH for n in doc.nodes)
    assert Counter(n.kind for n in doc.nodes)[NodeKind.DOCUMENT] == 1


def test_a_heading_before_text_given_back_from_a_frame_is_kept_apart():
    """Prose inside a drawn frame comes back as paragraph blocks without lines (layout.py); the
    definition-term check after a heading reads the next block's lines and must not fail on them
    (a real earnings release stopped parsing on it)."""
    from backend.ingest.hierarchy import _demote_definition_terms
    from backend.ingest.layout import LayoutBlock

    term = LayoutBlock(page=1, bbox=(72, 100, 200, 110), kind=BlockKind.PARAGRAPH, text="Restructuring", size=10)
    term.heading_candidate = True
    framed = LayoutBlock(page=1, bbox=(90, 111, 400, 121), kind=BlockKind.PARAGRAPH, text="Intangible asset", size=10)
    _demote_definition_terms([term, framed], 10.0)
    assert term.heading_candidate

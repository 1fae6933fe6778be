"""Stage 3: layout. Turns raw page content into typed blocks in reading order.

Decides, per block: heading candidate, paragraph, list item, caption, table, figure, or page
furniture (running header/footer, page number, recognised by position and repetition across
pages). Orders blocks column by column on two-column pages. It does not build the section tree
(hierarchy.py) and does not create graph nodes (components.py).
"""

from __future__ import annotations

import re
from collections import Counter, defaultdict
from collections.abc import Iterable
from dataclasses import dataclass, field, replace

from backend.ingest.borderless import find_borderless_tables
from backend.ingest.statements import find_statement_tables
from backend.ingest.code import code_listings_apply, code_text, is_code
from backend.ingest.extract import FIGURE_CELL_RE, Line, RawPage, RawTable, TextBlock
from backend.types import FURNITURE_KINDS, BBox, BlockKind

CAPTION_RE = re.compile(
    r"^(?P<word>Table|TABLE|Tab\.|Figure|FIGURE|Fig\.|FIG\.|Figs\.|Chart|CHART|Exhibit|EXHIBIT|Graph|Diagram|Plate)"
    r"\s*(?P<num>[A-Z]?\d+(?:[.\-]\d+)*[a-z]?|[IVX]+)\s*(?:[:.\-–—|)]|\s|$)"
)
NUMBERED_HEADING_RE = re.compile(
    r"^(?:(?P<appendix>Appendix|APPENDIX|Annex|ANNEX)\s+(?P<app>[A-Z](?:\.\d+)*)|"
    r"(?P<num>\d{1,2}(?:\.\d{1,2}){0,4})|(?P<alpha>[A-Z](?:\.\d{1,2}){1,3})|(?P<roman>(?:X{0,3})(?:IX|IV|V?I{0,3})))"
    r"[.):]?\s+(?P<title>\S.*)$"
)
BULLET_RE = re.compile(r"^(?:[•·▪‣◦●○■□➢►\-–*]\s*|\(?[a-z]\)\s+|\(\d{1,2}\)\s+|\d{1,2}\)\s+)")
PAGE_NUMBER_RE = re.compile(r"^(?:page\s*)?[-–]?\s*\d{1,4}\s*[-–]?(?:\s*(?:of|/)\s*\d{1,4})?$", re.IGNORECASE)
ROMAN_PAGE_RE = re.compile(r"^[ivxlc]{1,6}$", re.IGNORECASE)
MIN_FOLIO_PAGES = 3  # margin numbers that agree on at least this many pages before a fit is trusted
FOLIO_RE = re.compile(r"^(\d{1,4})\b|\b(\d{1,4})$")  # a printed page number at the start or end of a margin line
MARGIN_FRACTION = 0.085
FIGURE_LABEL_GAP = 6.0  # points between a chart's drawings and its tick labels / axis titles
WORD_RE = re.compile(r"[^\W\d_]{2,}")
BULLET_CHARS = "•·▪‣◦●○■□➢►"
ADMONITION_RE = re.compile(r"^(?:note|tip|hint|caution|warning|important|attention|danger|remark)s?:?$", re.IGNORECASE)
# A command-line option opening a line: "-c, --check", "--output=FILE", "-h".
OPTION_RE = re.compile(r"^--?[A-Za-z0-9?][\w-]*")
DEFINITION_MIN_GAP = 8.0  # points between a term and its definition set in a second column


@dataclass(slots=True)
class LayoutBlock:
    page: int
    bbox: BBox
    kind: BlockKind
    text: str
    lines: list[Line] = field(default_factory=list)
    size: float = 0.0
    bold: bool = False
    table: RawTable | None = None
    inner: list[tuple[BBox, str]] = field(default_factory=list)  # text found inside a figure
    label_kind: str | None = None  # caption: "table" | "figure"
    label_num: str | None = None  # caption: "2", "3b"
    heading_candidate: bool = False
    number: str | None = None  # heading numbering: "2.1", "A", "IV"
    order: int = 0
    continues: int | None = None  # table: the order of the table it continues from the page before


def _area(b: BBox) -> float:
    return max(0.0, b[2] - b[0]) * max(0.0, b[3] - b[1])


def _center_in(b: BBox, region: BBox, pad: float = 1.0) -> bool:
    cx, cy = (b[0] + b[2]) / 2, (b[1] + b[3]) / 2
    return region[0] - pad <= cx <= region[2] + pad and region[1] - pad <= cy <= region[3] + pad


def _overlap_fraction(a: BBox, b: BBox) -> float:
    ix = max(0.0, min(a[2], b[2]) - max(a[0], b[0]))
    iy = max(0.0, min(a[3], b[3]) - max(a[1], b[1]))
    return (ix * iy) / (_area(a) or 1.0)


def _union(boxes) -> BBox:
    boxes = list(boxes)
    return (min(b[0] for b in boxes), min(b[1] for b in boxes), max(b[2] for b in boxes), max(b[3] for b in boxes))


def body_font_size(pages: list[RawPage]) -> float:
    """The character-weighted most common line font size: the size of body text."""
    sizes: Counter[float] = Counter()
    for p in pages:
        for b in p.blocks:
            for ln in b.lines:
                sizes[round(ln.size * 2) / 2] += len(ln.text)
    return sizes.most_common(1)[0][0] if sizes else 10.0


def _split_by_style(block: TextBlock) -> list[list[Line]]:
    """Split a PyMuPDF block where the font style changes (a heading glued to its paragraph)."""
    groups: list[list[Line]] = [[block.lines[0]]]
    for prev, cur in zip(block.lines, block.lines[1:]):
        if abs(cur.size - prev.size) > 0.6 or cur.bold != prev.bold:
            groups.append([cur])
        else:
            groups[-1].append(cur)
    return groups


def _figure_regions(page: RawPage) -> list[BBox]:
    page_area = page.width * page.height
    regions: list[BBox] = []
    for b in page.images:
        w, h = b[2] - b[0], b[3] - b[1]
        if w >= 40 and h >= 30 and _area(b) >= 0.012 * page_area and _area(b) < 0.9 * page_area:
            regions.append(b)
    for b in page.drawings:
        w, h = b[2] - b[0], b[3] - b[1]
        if w >= 60 and h >= 40 and 0.03 * page_area <= _area(b) <= 0.7 * page_area:
            if not any(_overlap_fraction(b, t.bbox) > 0.3 for t in page.tables):
                regions.append(b)
    regions = [r for r in regions if not any(_overlap_fraction(r, t.bbox) > 0.5 for t in page.tables)]
    merged: list[BBox] = []
    for r in sorted(regions, key=_area, reverse=True):
        for i, m in enumerate(merged):
            if _overlap_fraction(r, m) > 0.2:
                merged[i] = _union([m, r])
                break
        else:
            merged.append(r)
    return merged


def _box_gap(a: BBox, b: BBox) -> float:
    return max(0.0, a[0] - b[2], b[0] - a[2], a[1] - b[3], b[1] - a[3])


def _absorb_figure_labels(figures: list[BBox], blocks: list[TextBlock], body_size: float) -> list[BBox]:
    """Grow each figure region over the short, plain text blocks that touch it: axis ticks,
    axis titles and legends set just outside a chart's drawings. Without this every tick label
    ("40", "35", ...) becomes a paragraph of the section and a link to the figure lands on one."""
    grown = list(figures)
    changed = True
    while changed:
        changed = False
        for tb in blocks:
            text = tb.text.strip()
            if (
                len(text.split()) > 8 or CAPTION_RE.match(text) or (PAGE_NUMBER_RE.match(text) and len(text.split()) > 1)
                or any(ln.bold or ln.size > body_size * 1.05 for ln in tb.lines)
            ):
                continue
            for i, region in enumerate(grown):
                if _center_in(tb.bbox, region):
                    break
                if _box_gap(tb.bbox, region) <= FIGURE_LABEL_GAP:
                    grown[i] = _union([region, tb.bbox])
                    changed = True
                    break
    return grown


def _style_block(page_no: int, lines: list[Line]) -> LayoutBlock:
    weights = [len(ln.text) for ln in lines]
    total = sum(weights) or 1
    size = sum(ln.size * w for ln, w in zip(lines, weights)) / total
    bold = sum(w for ln, w in zip(lines, weights) if ln.bold) > total / 2
    text, _ = join_lines(lines)
    return LayoutBlock(
        page=page_no, bbox=_union(ln.bbox for ln in lines), kind=BlockKind.PARAGRAPH, text=text, lines=lines,
        size=round(size, 1), bold=bold,
    )


def _rows(lines: list[Line]) -> list[list[Line]]:
    """Lines grouped into visual rows: a term and its definition set in two columns are two
    PyMuPDF lines at the same height."""
    rows: list[list[Line]] = []
    for ln in lines:
        prev = rows[-1][-1] if rows else None
        if prev is not None and abs(ln.bbox[1] - prev.bbox[1]) < 0.5 * max(ln.size, 4.0) and ln.bbox[0] > prev.bbox[2]:
            rows[-1].append(ln)
        else:
            rows.append([ln])
    return rows


def _is_two_column_term(row: list[Line], def_x: float | None) -> bool:
    """A short term, a gap, then a definition of a few words starting at the list's definition column."""
    if len(row) < 2 or len(row[0].text.split()) > 5 or row[1].bbox[0] - row[0].bbox[2] < DEFINITION_MIN_GAP:
        return False
    return def_x is None or abs(row[1].bbox[0] - def_x) <= 3.0


def _item_starts(rows: list[list[Line]]) -> list[bool]:
    """Which rows open an item of an option list ("-c, --check  checks the syntax only") or of a
    two-column definition list ("InstanceName  the name of ..."); all False when the rows are not one."""
    option = [bool(OPTION_RE.match(r[0].text)) for r in rows]
    if sum(option) >= 2:
        term_x = min(r[0].bbox[0] for r, o in zip(rows, option) if o)
        return [o and abs(r[0].bbox[0] - term_x) <= 2.0 for r, o in zip(rows, option)]
    paired = [r for r in rows if len(r) >= 2]
    def_x = paired[0][1].bbox[0] if paired else None
    starts = [_is_two_column_term(r, def_x) for r in rows]
    defined = [r for r, s in zip(rows, starts) if s]
    # Code set in two columns ("x  INTEGER,") is not a definition list: definitions are phrases.
    if len(defined) < 3 or sum(len(" ".join(ln.text for ln in r[1:]).split()) for r in defined) < 3 * len(defined):
        return [False] * len(rows)
    return starts


def split_definition_items(lines: list[Line]) -> list[tuple[list[Line], bool]]:
    """Split one block's lines into (lines, is_item) groups, one per option / definition-list
    item (the term row plus the rows indented under it), so that each item becomes its own unit
    instead of one run-on paragraph. A block that is not such a list comes back whole."""
    rows = _rows(lines)
    starts = _item_starts(rows)
    if sum(starts) < 2:
        return [(lines, False)]
    term_x = min(r[0].bbox[0] for r, s in zip(rows, starts) if s)
    groups: list[tuple[list[Line], bool]] = []
    for row, start in zip(rows, starts):
        if start:
            groups.append((list(row), True))
        elif groups and groups[-1][1] and row[0].bbox[0] > term_x + 3.0:
            groups[-1][0].extend(row)  # the definition wrapped onto the next row
        elif groups and not groups[-1][1]:
            groups[-1][0].extend(row)
        else:
            groups.append((list(row), False))
    return groups


def _text_blocks(page_no: int, tb: TextBlock, body_size: float, code: bool = False) -> list[LayoutBlock]:
    """The classified blocks of one PyMuPDF text block: split where the style changes and
    where an option or definition list starts a new item. code: a group of lines set in a
    typewriter font that is not such a list is a code listing (code.py), its text kept line by line."""
    out: list[LayoutBlock] = []
    for group in _split_by_style(tb):
        items = split_definition_items(group)
        # An option list set in a typewriter font ("-c, --check  checks the syntax only") stays one item per option.
        options = len(items) > 1 and all(OPTION_RE.match(lines[0].text) for lines, is_item in items if is_item)
        if code and not options and is_code(group, body_size):
            blk = _style_block(page_no, group)
            blk.kind, blk.text = BlockKind.CODE, code_text(group)
            out.append(blk)
            continue
        for lines, is_item in items:
            blk = _style_block(page_no, lines)
            _classify_text(blk, body_size)
            if is_item:
                blk.kind = BlockKind.LIST_ITEM
                blk.heading_candidate = False
                blk.number = None
            out.append(blk)
    return out


def join_lines(lines: list[Line]) -> tuple[str, list[tuple[int, int, BBox]]]:
    """Paragraph text from its lines (de-hyphenated) and each line's (start, end, bbox) in it.
    Built from parts: a string grown line by line is copied on each step once it is large."""
    parts: list[str] = []
    size = 0
    spans: list[tuple[int, int, BBox]] = []
    for ln in lines:
        last = parts[-1] if parts else ""
        # The character before the hyphen may end the part before ("-" read as a line of its own).
        if last.endswith("-") and size > 1 and (last[-2:-1] or parts[-2][-1:]).isalpha() and ln.text[:1].islower():
            parts[-1] = last[:-1]
            size -= 1
        elif size:
            parts.append(" ")
            size += 1
        start = size
        parts.append(ln.text)
        size += len(ln.text)
        spans.append((start, size, ln.bbox))
    return "".join(parts), spans


def _classify_text(block: LayoutBlock, body_size: float) -> None:
    text = block.text
    m = CAPTION_RE.match(text)
    # "Table 2 shows that ..." is body text about the table, not its caption ("Table 2: ...",
    # "Figure 3 Trees planted ..."); taking it for one steals the label from the real caption.
    if m and re.match(r"\s+[a-z]", text[m.end("num"):]):
        m = None
    if m and len(text.split()) >= 2 and not text.rstrip().endswith(("see", "in")):
        word = m.group("word").lower()
        block.kind = BlockKind.CAPTION
        block.label_kind = "table" if word.startswith("tab") else "figure"
        block.label_num = m.group("num").lower()
        return
    words = text.split()
    n_words = len(words)
    hm = NUMBERED_HEADING_RE.match(text)
    number = None
    if hm:
        number = hm.group("app") or hm.group("num") or hm.group("alpha") or hm.group("roman") or None
        if hm.group("roman") is not None and not hm.group("roman"):
            number = None
    # A word of two letters at least: index letters ("A", "R E") and symbols are not headings.
    has_letters = WORD_RE.search(text) is not None
    looks_short = len(block.lines) <= 3 and n_words <= 22 and has_letters
    # Bold bullets ("• Block device") and admonition labels in body-size bold ("Note", "Tip")
    # look like headings by style alone but never open a section.
    if (text[:1] and text[:1] in BULLET_CHARS) or (ADMONITION_RE.match(text) and block.size < body_size * 1.12):
        looks_short = False
    ends_sentence = text.rstrip().endswith((".", ",", ";")) and not (number and n_words <= 8)
    prominent = block.size >= body_size * 1.12 or (block.bold and block.size >= body_size * 0.95)
    # In plain body text "1. Minute [0,59]" is a numbered list item; "2.1 Scope" and "3 Methods" stay candidates.
    plain_numbered = number is not None and ("." in number or re.match(r"\d{1,2}\s", text) is not None)
    if looks_short and not ends_sentence and (prominent or (plain_numbered and n_words <= 12 and block.size >= body_size)):
        if number and hm.group("roman") and not prominent:
            number = None  # "I went ..." is not a heading
        if prominent or number:
            block.heading_candidate = True
            block.number = number
            block.kind = BlockKind.HEADING
            return
    if BULLET_RE.match(text):
        block.kind = BlockKind.LIST_ITEM


def _furniture_key(text: str) -> str:
    return re.sub(r"\d+", "#", text.lower()).strip()


def _mark_furniture(blocks_by_page: dict[int, list[LayoutBlock]], pages: list[RawPage]) -> None:
    heights = {p.number: p.height for p in pages}
    zone_counts: dict[tuple[str, str], set[int]] = defaultdict(set)
    candidates: list[tuple[LayoutBlock, str]] = []
    for page_no, blocks in blocks_by_page.items():
        h = heights[page_no]
        for b in blocks:
            if b.kind in (BlockKind.TABLE, BlockKind.FIGURE) or len(b.text.split()) > 18:
                continue
            zone = "top" if b.bbox[3] <= h * MARGIN_FRACTION + 4 else "bottom" if b.bbox[1] >= h * (1 - MARGIN_FRACTION) - 4 else ""
            if not zone:
                continue
            key = _furniture_key(b.text)
            zone_counts[(zone, key)].add(page_no)
            candidates.append((b, zone))
    min_repeats = max(2, int(0.3 * len(pages)))
    folio_offset = _folio_offset(candidates, min_repeats)
    for b, zone in candidates:
        text = b.text.strip()
        if PAGE_NUMBER_RE.match(text) or ROMAN_PAGE_RE.match(text):
            b.kind = BlockKind.PAGE_NUMBER
        elif len(zone_counts[(zone, _furniture_key(text))]) >= min_repeats or (
            folio_offset is not None and b.page + folio_offset in _folio_numbers(text)
        ):
            b.kind = BlockKind.HEADER if zone == "top" else BlockKind.FOOTER
        if b.kind in (BlockKind.HEADER, BlockKind.FOOTER, BlockKind.PAGE_NUMBER):
            # A bold running header is classified as a heading candidate before it is known
            # to be furniture; hierarchy.py must not turn it into a section.
            b.heading_candidate = False
            b.number = None


def _folio_numbers(text: str) -> set[int]:
    return {int(g) for groups in FOLIO_RE.findall(text) for g in groups if g}


def _folio_offset(candidates: list[tuple[LayoutBlock, str]], min_pages: int) -> int | None:
    """printed page number - PDF page number, when margin blocks agree on one on enough pages.

    Running headers that carry the chapter title ("4 Chapter 1. Scope", "2.3. Registering 7")
    change text every chapter, so they never repeat often enough to be caught by their text;
    the printed page number (folio) at their start or end gives them away instead.
    """
    pages_by_offset: dict[int, set[int]] = defaultdict(set)
    for b, _zone in candidates:
        for n in _folio_numbers(b.text.strip()):
            pages_by_offset[n - b.page].add(b.page)
    if not pages_by_offset:
        return None
    offset, pages = max(pages_by_offset.items(), key=lambda kv: len(kv[1]))
    return offset if len(pages) >= max(3, min_pages) else None


def _margin_numbers(kind: str, text: str) -> set[int]:
    """The page numbers a margin block may show: a page-number block's number, the folio at
    the start or end of a running header or footer."""
    text = text.strip()
    if kind == BlockKind.PAGE_NUMBER.value:
        first = re.search(r"\d+", text) if PAGE_NUMBER_RE.match(text) else None
        return {int(first.group())} if first else set()
    return {int(g) for groups in FOLIO_RE.findall(text) for g in groups if g}


def printed_page_map(rows: Iterable[tuple[int, str, str]], pages: int) -> dict[int, tuple[int, ...]]:
    """printed number -> the positions (1-based) of the pages that show it, from one document's
    margin blocks (page, block kind, text).

    The fit is `printed = slope * position + offset`, slope 1 (one page per sheet) or 2 (two-page
    spreads scanned as one page, which show two numbers), from the margin numbers that agree on
    at least MIN_FOLIO_PAGES pages; every page between the first and last agreeing ones gets the
    fitted numbers (a folio the layout stage missed). Page-number blocks count as they read
    even off the fit; a number at the end of a running header counts only through the fit (it
    may be a year or a chapter). Used by questions that name a page (retrieval/references.py):
    a journal paper printed as pages 6981-6994, a manual whose page "28" is the file's 29th."""
    shown: dict[int, set[int]] = defaultdict(set)
    support: dict[tuple[int, int], set[int]] = defaultdict(set)
    for page, kind, text in rows:
        for n in _margin_numbers(kind, text):
            if n <= 0:
                continue
            if kind == BlockKind.PAGE_NUMBER.value:
                shown[page].add(n)
            support[(1, n - page)].add(page)
            support[(2, n - 2 * page - (n - 2 * page) % 2)].add(page)  # spreads: 2p+off and 2p+off+1, off even
    if support:
        # Most pages explained; a tie goes to one page per sheet.
        (slope, offset), explained = max(support.items(), key=lambda kv: (len(kv[1]), -kv[0][0]))
        if len(explained) >= MIN_FOLIO_PAGES:
            for p in range(min(explained), max(explained) + 1):
                first = slope * p + offset
                shown[p].update(n for n in range(first, first + slope) if n > 0)
    out: dict[int, list[int]] = defaultdict(list)
    for p in sorted(shown):
        if 1 <= p <= pages:
            for n in sorted(shown[p]):
                out[n].append(p)
    return {n: tuple(ps) for n, ps in out.items()}


def _reading_order(blocks: list[LayoutBlock], width: float) -> list[LayoutBlock]:
    """Column-aware order: full-width blocks cut the page into bands; each band is read left
    column first, then right column. Single-column pages reduce to top-to-bottom."""
    mid = width / 2
    tol = width * 0.04

    def column(b: LayoutBlock) -> str:
        if b.bbox[2] <= mid + tol:
            return "L"
        if b.bbox[0] >= mid - tol:
            return "R"
        return "F"

    cols = [column(b) for b in blocks]
    left = [b for b, c in zip(blocks, cols) if c == "L"]
    right = [b for b, c in zip(blocks, cols) if c == "R"]
    # Two columns only when a left and a right block stand side by side; a right-aligned
    # chapter label ("CHAPTER ONE") above single-column text is not a second column.
    side_by_side = any(a.bbox[1] < b.bbox[3] and b.bbox[1] < a.bbox[3] for a in left for b in right)
    if not side_by_side:
        return sorted(blocks, key=lambda b: (round(b.bbox[1], 0), b.bbox[0]))
    ordered: list[LayoutBlock] = []
    band: list[LayoutBlock] = []
    for b in sorted(blocks, key=lambda b: (b.bbox[1], b.bbox[0])):
        if column(b) == "F":
            ordered.extend(sorted(band, key=lambda x: (column(x) != "L", x.bbox[1])))
            band = []
            ordered.append(b)
        else:
            band.append(b)
    ordered.extend(sorted(band, key=lambda x: (column(x) != "L", x.bbox[1])))
    return ordered


def _reads_as_prose(text: str) -> bool:
    """Six words or more, ending a sentence. Not a regex: `(?:\S+\s+){5,}\S*[.!?]\s*$` searched a
    block of n words that ends without a stop in O(n^2) (4 s for 2,000 words, hours for 50,000)."""
    return text.rstrip()[-1:] in (".", "!", "?") and len(text.split(maxsplit=5)) == 6


def layout_document(pages: list[RawPage]) -> tuple[list[LayoutBlock], float]:
    """All blocks of the document in reading order, each with its kind. Returns (blocks, body size)."""
    body_size = body_font_size(pages)
    code = code_listings_apply(pages)
    blocks_by_page: dict[int, list[LayoutBlock]] = {}
    for page in pages:
        figures = _absorb_figure_labels(_figure_regions(page), page.blocks, body_size)
        borderless, kept = find_borderless_tables(page, figures)
        if borderless:
            page = replace(page, blocks=kept, tables=page.tables + borderless)
        statements, kept = find_statement_tables(page, figures)
        if statements:
            page = replace(page, blocks=kept, tables=page.tables + statements)
        figure_inner: dict[int, list[tuple[BBox, str]]] = defaultdict(list)
        page_blocks: list[LayoutBlock] = []
        for tb in page.blocks:
            if any(_center_in(tb.bbox, t.bbox) for t in page.tables):
                continue
            if not _reads_as_prose(tb.text) and any(t.header_bbox and _center_in(tb.bbox, t.header_bbox) for t in page.tables):
                continue  # a header find_tables read from just above the rules ("December 31,", "Periods") is the table's
            fig_idx = next((i for i, f in enumerate(figures) if _center_in(tb.bbox, f)), None)
            if fig_idx is not None:
                figure_inner[fig_idx].append((tb.bbox, tb.text))
                continue
            page_blocks.extend(_text_blocks(page.number, tb, body_size, code))
        for i, region in enumerate(figures):
            inner = figure_inner.get(i, [])
            if sum(len(t.split()) for _, t in inner) > 150:
                # A frame around prose, not a figure: give the text back as paragraphs.
                for bbox, text in inner:
                    blk = LayoutBlock(page=page.number, bbox=bbox, kind=BlockKind.PARAGRAPH, text=text, size=body_size)
                    _classify_text(blk, body_size)
                    page_blocks.append(blk)
                continue
            page_blocks.append(
                LayoutBlock(page=page.number, bbox=region, kind=BlockKind.FIGURE, text="", inner=inner)
            )
        for t in page.tables:
            page_blocks.append(LayoutBlock(page=page.number, bbox=t.bbox, kind=BlockKind.TABLE, text="", table=t))
        blocks_by_page[page.number] = page_blocks
    _mark_furniture(blocks_by_page, pages)
    ordered: list[LayoutBlock] = []
    widths = {p.number: p.width for p in pages}
    for page_no in sorted(blocks_by_page):
        body = [b for b in blocks_by_page[page_no] if b.kind not in (BlockKind.HEADER, BlockKind.FOOTER, BlockKind.PAGE_NUMBER)]
        furniture = [b for b in blocks_by_page[page_no] if b not in body]
        ordered.extend(_reading_order(body, widths[page_no]))
        ordered.extend(furniture)
    ordered = _merge_code_runs(_merge_list_continuations(ordered))
    for i, b in enumerate(ordered):
        b.order = i
    _join_continued_tables(ordered)
    return ordered, body_size


NIL_CELL_RE = re.compile(r"^\s*[—–-]?\s*$")  # an empty cell or a dash for nil
YEAR_CELL_RE = re.compile(r"^\s*(?:19|20)\d{2}\s*$")


def _reads_as_row(header: list[str]) -> bool:
    """A header whose value cells are figures, not years ("Property, plant, and equipment | 2,235 |
    2,641", "Deferred taxes | — | 0.4 | 0.4"): a table's first row taken for its header, as
    find_tables takes it on a page the table runs on to."""
    values = [c for c in header[1:] if not NIL_CELL_RE.match(c)]
    return bool(values) and all(FIGURE_CELL_RE.match(c) and not YEAR_CELL_RE.match(c) for c in values)


def _join_continued_tables(ordered: list[LayoutBlock]) -> None:
    """A table that opens a page right after a table that closed the page before, with as many
    columns, is that table run on: it is marked as continuing it (`continues`), and when its own
    header reads as a row of figures, that row goes back among its rows and the table takes the
    header of the part it continues. Without this, "Total liabilities | $909 | $1,305" on the second
    page of a balance sheet would be read under the columns "2,235" and "2,641", not 2019 and 2018."""
    body = [b for b in ordered if b.kind not in FURNITURE_KINDS]
    for prev, b in zip(body, body[1:]):
        if not (b.kind == prev.kind == BlockKind.TABLE and b.page == prev.page + 1 and b.table and prev.table):
            continue
        if len(b.table.header) != len(prev.table.header):
            continue
        b.continues = prev.order
        if _reads_as_row(b.table.header) and not _reads_as_row(prev.table.header):
            head_box = b.table.header_bbox or b.table.bbox
            b.table.rows.insert(0, b.table.header)
            b.table.row_bboxes.insert(0, head_box)
            b.table.header = list(prev.table.header)
            b.bbox = b.table.bbox = _union([b.bbox, head_box])  # a header read from above the rules: the row is the table's


def _merge_code_runs(blocks: list[LayoutBlock]) -> list[LayoutBlock]:
    """Join the pieces of one code listing: PyMuPDF cuts a listing into blocks where its
    indentation changes; pieces right under each other (no blank line between) are one listing."""
    out: list[LayoutBlock] = []
    for b in blocks:
        prev = out[-1] if out else None
        if (
            prev is not None and prev.kind == b.kind == BlockKind.CODE and b.page == prev.page and b.lines and prev.lines
            and -1.0 <= b.bbox[1] - prev.bbox[3] < max(prev.size, 6) * 0.8
        ):
            prev.lines = prev.lines + b.lines
            prev.text = code_text(prev.lines)
            prev.bbox = _union([prev.bbox, b.bbox])
            continue
        out.append(b)
    return out


def _merge_list_continuations(blocks: list[LayoutBlock]) -> list[LayoutBlock]:
    """Join the wrapped lines of a list item (indented to the item's text, right under it, no
    bullet of their own) back into the item: PyMuPDF often returns them as a separate block."""
    out: list[LayoutBlock] = []
    for b in blocks:
        prev = out[-1] if out else None
        if (
            prev is not None
            and prev.kind == BlockKind.LIST_ITEM
            and b.kind == BlockKind.PARAGRAPH
            and b.lines
            and prev.lines
            and b.page == prev.page
            and b.bbox[0] > prev.bbox[0] + 3
            and 0 <= b.bbox[1] - prev.bbox[3] < max(prev.size, 6) * 0.6
            and abs(b.size - prev.size) < 0.6
            and not BULLET_RE.match(b.text)
        ):
            prev.lines = prev.lines + b.lines
            prev.text, _ = join_lines(prev.lines)
            prev.bbox = _union([prev.bbox, b.bbox])
            continue
        out.append(b)
    return out

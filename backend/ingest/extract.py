"""Stage 2: raw extraction of one page with PyMuPDF (text lines with fonts, images, drawings,
tables, links), with OCR for pages that have no text layer.

This module knows PyMuPDF; it does not decide what a block *is* (layout.py does that).
"""

from __future__ import annotations

import logging
import re
import shutil
import zlib
from collections import Counter
from dataclasses import dataclass, field

import pymupdf

from backend.errors import clean_text, library_reason
from backend.types import BBox

log = logging.getLogger(__name__)

BOLD_FLAG = 16
_BOLD_NAMES = ("bold", "black", "heavy", "demi", "semibold", "-bd", ",bd")
CAPTION_START_RE = re.compile(r"^(?:Table|TABLE|Tab\.|Figure|FIGURE|Fig\.|Exhibit|EXHIBIT)\s*[A-Z]?\d")


@dataclass(slots=True)
class Line:
    text: str
    bbox: BBox
    size: float  # dominant font size of the line, weighted by characters
    bold: bool  # most characters bold
    mono: bool = False  # most characters in a monospaced (typewriter) font


@dataclass(slots=True)
class TextBlock:
    lines: list[Line]
    bbox: BBox

    @property
    def text(self) -> str:
        return " ".join(line.text for line in self.lines)


@dataclass(slots=True)
class RawTable:
    bbox: BBox
    header: list[str]
    header_bbox: BBox | None
    rows: list[list[str]]
    row_bboxes: list[BBox]


@dataclass(slots=True)
class RawLink:
    kind: int
    rect: BBox
    target_page: int | None = None  # 1-based, for internal links
    target_y: float | None = None
    target_x: float | None = None
    file: str | None = None
    uri: str | None = None


@dataclass(slots=True)
class RawPage:
    number: int  # 1-based
    width: float
    height: float
    blocks: list[TextBlock] = field(default_factory=list)
    images: list[BBox] = field(default_factory=list)
    drawings: list[BBox] = field(default_factory=list)  # clusters of vector drawings
    tables: list[RawTable] = field(default_factory=list)
    links: list[RawLink] = field(default_factory=list)
    ocr_engine: str | None = None
    has_lines: bool = False


# ---------------------------------------------------------------- page budget
#
# MuPDF interprets a page's content stream in one go (text, images, drawings, tables each run
# it again) and cannot be stopped half-way, so what a page asks for is counted from its streams
# BEFORE any of that runs: a 300 KB file whose forms draw each other 10 times over seven levels
# is 10^7 draws (minutes of MuPDF and gigabytes of drawing dicts); 100,000 ruling lines or
# 10,000 link annotations are valid but slow. A page over a bound is degraded (its graphics,
# tables or links are skipped, its text kept where it can be), never refused.

_OP_RE = re.compile(rb"(?<![A-Za-z0-9/#.*'\"_\-])[A-Za-z'\"][A-Za-z0-9*'\"]{0,2}(?![A-Za-z0-9*'\"])")
_DO_RE = re.compile(rb"/([^\s/\[\]()<>{}%]+)\s*Do(?![A-Za-z0-9])")
_STRING_RE = re.compile(rb"\((?:[^()\\]|\\.)*\)|<[0-9A-Fa-f\s]*>", re.DOTALL)
_INLINE_IMAGE_RE = re.compile(rb"\bID\s.*?\bEI\b", re.DOTALL)
_REF_RE = re.compile(r"/([^\s/\[\]()<>{}%]+)\s*(\d+)\s+\d+\s+R")
_PATH_OPS = frozenset((b"S", b"s", b"f", b"F", b"f*", b"B", b"B*", b"b", b"b*", b"sh"))
_TEXT_OPS = frozenset((b"Tj", b"TJ", b"'", b'"'))
ZLIB_MAX_RATIO = 1032  # deflate cannot inflate more than this
COUNTED_STREAM_BYTES = 32 * 2**20  # a longer stream is not tokenised: its length alone puts it over the bounds
BYTES_PER_OP = 4  # a content operator with its operands takes at least this many bytes


@dataclass(frozen=True, slots=True)
class PageBounds:
    """The most work one page may ask for. Defaults keep a page under a few seconds on one core."""

    max_draws: int = 20_000  # form XObject runs: MuPDF spends ~40 us on each, per pass over the page
    max_ops: int = 1_000_000  # content operators, XObject draws expanded
    max_paths: int = 10_000  # path-painting operators: each becomes a drawing dict, clustered pairwise
    max_text_ops: int = 200_000  # text-showing operators (each a span or more)
    max_image_pixels: int = 100_000_000  # width x height of the page's images, before any is decoded
    max_annots: int = 2_000  # annotations (links) on the page
    max_stream_bytes: int = 512 * 2**20  # inflated size of one content stream (decompression bombs)


@dataclass(frozen=True, slots=True)
class StreamCost:
    """What running one content stream costs, with the XObjects it draws expanded."""

    ops: int = 0
    paths: int = 0
    text_ops: int = 0
    draws: int = 0
    inflated_bytes: int = 0  # the largest single stream, in bytes

    def __add__(self, other: StreamCost) -> StreamCost:
        return StreamCost(
            self.ops + other.ops, self.paths + other.paths, self.text_ops + other.text_ops, self.draws + other.draws,
            max(self.inflated_bytes, other.inflated_bytes),
        )

    def times(self, n: int) -> StreamCost:
        return StreamCost(self.ops * n, self.paths * n, self.text_ops * n, self.draws * n, self.inflated_bytes)


@dataclass(frozen=True, slots=True)
class PagePlan:
    """What to read of one page: everything, or less when it is over a bound (reasons say why)."""

    text: bool = True
    text_top_level_only: bool = False  # the forms it draws are skipped: only its own stream's text is read
    graphics: bool = True  # images, drawings, tables, OCR
    links: bool = True
    reasons: tuple[str, ...] = ()

    @property
    def degraded(self) -> bool:
        return bool(self.reasons)


def _inflated_size(pdf: pymupdf.Document, xref: int, limit: int) -> int | None:
    """Bytes a Flate stream inflates to, counted without holding them, stopping past `limit`;
    None when it cannot grow past COUNTED_STREAM_BYTES (or is not Flate, or is damaged)."""
    if "FlateDecode" not in pdf.xref_get_key(xref, "Filter")[1]:
        return None
    raw = pdf.xref_stream_raw(xref) or b""
    if len(raw) * ZLIB_MAX_RATIO <= COUNTED_STREAM_BYTES:
        return None
    inflater, data, total = zlib.decompressobj(), raw, 0
    try:
        while data and total <= limit:
            total += len(inflater.decompress(data, 1 << 24))
            data = inflater.unconsumed_tail
    except zlib.error:
        return None  # damaged stream: MuPDF decides what is left of it
    return total if total > COUNTED_STREAM_BYTES else None


def _count_stream(data: bytes) -> tuple[StreamCost, list[bytes]]:
    """Operators of one content stream and the names it draws with Do (strings, hex strings and
    inline image data removed first, so their bytes are not read as operators)."""
    data = _STRING_RE.sub(b" ", _INLINE_IMAGE_RE.sub(b" ", data))
    ops = Counter(_OP_RE.findall(data))
    cost = StreamCost(
        ops=sum(ops.values()),
        paths=sum(n for op, n in ops.items() if op in _PATH_OPS),
        text_ops=sum(n for op, n in ops.items() if op in _TEXT_OPS),
        inflated_bytes=len(data),
    )
    return cost, _DO_RE.findall(data)


class PageCoster:
    """Counts what each page of one document asks for and plans what to read of it. A form drawn
    on many pages (a letterhead) is counted once: costs are kept per XObject."""

    MAX_NESTING = 64  # forms nested deeper are counted as over every bound

    def __init__(self, pdf: pymupdf.Document, bounds: PageBounds) -> None:
        self._pdf = pdf
        self._bounds = bounds
        self._forms: dict[int, StreamCost] = {}
        self._over = StreamCost(ops=bounds.max_ops + 1, draws=bounds.max_draws + 1)

    def _resolved(self, xref: int, key: str) -> str | None:
        kind, value = self._pdf.xref_get_key(xref, key)
        if kind == "xref":
            return self._pdf.xref_object(int(value.split()[0]), compressed=True)
        return value if kind == "dict" else None

    def _page_xobjects(self, page: pymupdf.Page) -> dict[bytes, int]:
        """Name -> xref of the page's XObjects, with resources inherited from the page tree."""
        holder = page.xref
        for _ in range(self.MAX_NESTING):
            if self._pdf.xref_get_key(holder, "Resources")[0] != "null":
                found = self._resolved(holder, "Resources/XObject")
                return {m.group(1).encode(): int(m.group(2)) for m in _REF_RE.finditer(found or "")}
            kind, parent = self._pdf.xref_get_key(holder, "Parent")
            if kind != "xref":
                break
            holder = int(parent.split()[0])
        return {}

    def _stream(self, xref: int, names: dict[bytes, int], depth: int) -> tuple[StreamCost, StreamCost]:
        """One content stream's own cost and its cost with the forms it draws expanded."""
        inflated = _inflated_size(self._pdf, xref, self._bounds.max_stream_bytes)
        if inflated is not None:  # too long to tokenise: its length says enough
            own = StreamCost(ops=inflated // BYTES_PER_OP, inflated_bytes=inflated)
            return own, own
        own, drawn = _count_stream(self._pdf.xref_stream(xref) or b"")
        expanded = own
        for name, n in Counter(drawn).items():
            target = names.get(name)
            if target is not None and self._pdf.xref_get_key(target, "Subtype")[1] == "/Form":
                expanded = expanded + self._form(target, names, depth + 1).times(n)
        return own, expanded

    def _form(self, xref: int, inherited: dict[bytes, int], depth: int) -> StreamCost:
        if xref in self._forms:
            return self._forms[xref]
        if depth > self.MAX_NESTING:
            return self._over
        self._forms[xref] = self._over  # a form that draws itself: over every bound
        own = self._resolved(xref, "Resources/XObject")
        names = {m.group(1).encode(): int(m.group(2)) for m in _REF_RE.finditer(own)} if own is not None else inherited
        cost = self._stream(xref, names, depth)[1] + StreamCost(draws=1)
        self._forms[xref] = cost
        return cost

    def _image_pixels(self, page: pymupdf.Page) -> int:
        return sum(max(0, img[2]) * max(0, img[3]) for img in page.get_images(full=True))

    def _annots(self, page: pymupdf.Page) -> int:
        kind, value = self._pdf.xref_get_key(page.xref, "Annots")
        if kind == "xref":
            value = self._pdf.xref_object(int(value.split()[0]), compressed=True)
        return value.count(" R") if kind in ("array", "xref") else 0

    def plan(self, page: pymupdf.Page) -> PagePlan:
        """What to read of this page, decided from counts alone (nothing is rendered or run)."""
        names = self._page_xobjects(page)
        top = StreamCost()
        total = StreamCost()
        for xref in page.get_contents():
            own, expanded = self._stream(xref, names, 0)
            top, total = top + own, total + expanded
        return _plan_from_counts(page.number + 1, top, total, self._image_pixels(page), self._annots(page), self._bounds)


def _plan_from_counts(page_no: int, top: StreamCost, total: StreamCost, pixels: int, annots: int, b: PageBounds) -> PagePlan:
    reasons: list[str] = []
    text, top_only, graphics, links = True, False, True, True
    if total.inflated_bytes > b.max_stream_bytes:
        text, graphics = False, False
        mib = b.max_stream_bytes // 2**20
        reasons.append(f"page {page_no}'s content inflates to more than {mib} MiB, half the parser's {2 * mib} MiB memory share "
                       "(STRATA_INGEST__MEMORY_BUDGET_MB, STRATA_INGEST__PARSE_MEMORY_MB): it looks like a decompression bomb; "
                       "the page was skipped")
    elif total.draws > b.max_draws or total.ops > b.max_ops or total.text_ops > b.max_text_ops:
        graphics = False
        top_only = total.draws > b.max_draws  # the forms it draws are what is too many: read its own stream
        text = (top if top_only else total).text_ops <= b.max_text_ops
        kept = ("only the text of its own content stream was read" if top_only else "its text was kept") if text else "its text was not read either"
        reasons.append(f"page {page_no} asks for {total.ops:,} drawing operations and {total.draws:,} nested form draws "
                       f"(bounds {b.max_ops:,} and {b.max_draws:,}); its images, drawings and tables were skipped and {kept}")
    else:
        if total.paths > b.max_paths:
            graphics = False
            reasons.append(f"page {page_no} has {total.paths:,} vector paths (bound {b.max_paths:,}); "
                           "its drawings, images and tables were skipped, its text was kept")
        if pixels > b.max_image_pixels:
            graphics = False
            reasons.append(f"page {page_no}'s images hold {pixels:,} pixels (bound {b.max_image_pixels:,}); "
                           "its images, drawings and tables were skipped, its text was kept")
    if annots > b.max_annots:
        links = False
        reasons.append(f"page {page_no} has {annots:,} annotations (bound {b.max_annots:,}); its links were skipped")
    return PagePlan(text=text, text_top_level_only=top_only, graphics=graphics, links=links, reasons=tuple(reasons))


# Typewriter fonts by name, for the many that do not set the monospaced flag: TeX's CMTT10 and
# CMSLTT10, EC's SFTT1000, Latin Modern Mono, Courier, Consolas, Menlo, DejaVu Sans Mono.
_MONO_NAME_RE = re.compile(r"tt\d|mono|courier|consol|typewriter|menlo|inconsolata|cousine", re.IGNORECASE)
MONO_FLAG = 8


def _is_mono(span: dict) -> bool:
    return bool(span["flags"] & MONO_FLAG) or _MONO_NAME_RE.search(span.get("font", "")) is not None


def _is_bold(span: dict) -> bool:
    if span["flags"] & BOLD_FLAG:
        return True
    font = span.get("font", "").lower()
    return any(n in font for n in _BOLD_NAMES)


def _clean(text: str) -> str:
    return clean_text(" ".join(text.replace("\u00ad", "").split()))


def _blocks_from_dict(page_dict: dict) -> tuple[list[TextBlock], list[BBox]]:
    blocks: list[TextBlock] = []
    images: list[BBox] = []
    for b in page_dict["blocks"]:
        if b["type"] == 1:
            images.append(tuple(b["bbox"]))
            continue
        lines: list[Line] = []
        for ln in b.get("lines", []):
            if abs(ln.get("dir", (1.0, 0.0))[1]) > 0.1:
                continue  # rotated text: margin stamps, axis labels; not part of the reading flow
            spans = [s for s in ln["spans"] if s["text"].strip()]
            if not spans:
                continue
            text = _clean(" ".join(s["text"] for s in spans)) if len(spans) > 1 else _clean(spans[0]["text"])
            # PyMuPDF splits words across spans without spaces; join spans that abut.
            if len(spans) > 1:
                parts = [spans[0]["text"]]
                for prev, cur in zip(spans, spans[1:]):
                    gap = cur["bbox"][0] - prev["bbox"][2]
                    parts.append(("" if gap < 0.5 else " ") + cur["text"])
                text = _clean("".join(parts))
            if not text:
                continue
            weights = [len(s["text"].strip()) for s in spans]
            total = sum(weights) or 1
            size = sum(s["size"] * w for s, w in zip(spans, weights)) / total
            bold_chars = sum(w for s, w in zip(spans, weights) if _is_bold(s))
            mono_chars = sum(w for s, w in zip(spans, weights) if _is_mono(s))
            lines.append(Line(text=text, bbox=tuple(ln["bbox"]), size=round(size, 1), bold=bold_chars > total / 2,
                              mono=mono_chars > total * 0.8))
        if lines:
            blocks.append(TextBlock(lines=lines, bbox=tuple(b["bbox"])))
    return blocks, images


MIN_EDGE = 3.0  # points: find_tables drops edges shorter than this (its edge_min_length)
MIN_RULE_ROWS = 3  # rules across the page at this many heights make a table ruled only across
WIDE_RULE = 0.4  # a rule across at least this share of the page's width


def _visible(d: dict) -> bool:
    """A drawing a reader sees: stroked, or filled with a colour other than white."""
    fill = d.get("fill")
    return d.get("color") is not None or (fill is not None and any(c < 0.99 for c in fill))


def may_hold_ruled_table(drawings: list[dict], page: pymupdf.Page) -> bool:
    """Whether find_tables (the costly step) can find a table among the page's visible drawings
    (_visible): rules or shaded boxes that cross (two horizontal and two vertical edges, each
    MIN_EDGE long or more), or rules across WIDE_RULE of the page's width at MIN_RULE_ROWS
    heights or more (a table ruled only across, as papers set them with booktabs; a rule drawn in
    pieces counts by the span of its pieces). A rectangle as large as the page is a background.
    A filing's page whose only drawings are the short rules under its figures, a rule under its
    header or a page background does not pay for find_tables."""
    area, width = abs(page.rect), page.rect.width
    h = v = 0
    spans: dict[int, list[float]] = {}
    for d in drawings[:5000]:
        if not _visible(d):
            continue
        for item in d.get("items", ()):
            if item[0] in ("re", "qu"):
                r = item[1].rect if item[0] == "qu" else item[1]
                w, ht = abs(r.width), abs(r.height)
                if w * ht > 0.8 * area:
                    continue
                h += (2 if ht >= MIN_EDGE else 1) if w >= MIN_EDGE else 0
                v += (2 if w >= MIN_EDGE else 1) if ht >= MIN_EDGE else 0
                if w >= MIN_EDGE and ht < MIN_EDGE:
                    _extend(spans, r.y0, min(r.x0, r.x1), max(r.x0, r.x1))
            elif item[0] == "l":
                p1, p2 = item[1], item[2]
                if abs(p1.x - p2.x) < 1 and abs(p1.y - p2.y) >= MIN_EDGE:
                    v += 1
                elif abs(p1.y - p2.y) < 1 and abs(p1.x - p2.x) >= MIN_EDGE:
                    h += 1
                    _extend(spans, p1.y, min(p1.x, p2.x), max(p1.x, p2.x))
        if h >= 2 and v >= 2:
            return True
    return sum(1 for x0, x1 in spans.values() if x1 - x0 >= WIDE_RULE * width) >= MIN_RULE_ROWS


def _extend(spans: dict[int, list[float]], y: float, x0: float, x1: float) -> None:
    """Widen the span of the rules drawn at height y (to 2 points) by one piece."""
    key = round(y / 2)
    span = spans.setdefault(key, [x0, x1])
    span[0], span[1] = min(span[0], x0), max(span[1], x1)


def _cell_text(words: list[tuple], rect) -> str:
    """The words whose centre lies in the cell, in MuPDF's reading order. (Table.extract()
    sorts characters by position: with a tolerance large enough to keep "95.8" whole it
    interleaves two-line cells into "Dece 2m 0b 1e 9r 31,"; with a small one it splits words.)"""
    x0, y0, x1, y1 = rect
    inside = [w for w in words if x0 <= (w[0] + w[2]) / 2 <= x1 and y0 <= (w[1] + w[3]) / 2 <= y1]
    inside.sort(key=lambda w: (w[5], w[6], w[7]))
    return _clean(" ".join(w[4] for w in inside))


def _external_header_ok(words: list[tuple], tab) -> bool:
    """find_tables takes the text just above a table for an "external" header; keep it only when
    that band holds no caption and no prose running past the table's edges."""
    if not tab.header.bbox:
        return False
    hx0, hy0, hx1, hy1 = tab.header.bbox
    band = [w for w in words if hy0 <= (w[1] + w[3]) / 2 <= hy1]
    lines: dict[tuple[int, int], list[tuple]] = {}
    for w in band:
        lines.setdefault((w[5], w[6]), []).append(w)
    for line in lines.values():
        line.sort(key=lambda w: w[7])
        text = " ".join(w[4] for w in line)
        if CAPTION_START_RE.match(text) or min(w[0] for w in line) < hx0 - 5 or max(w[2] for w in line) > hx1 + 5:
            return False
    return True


FIGURE_CELL_RE = re.compile(r"^[\s$€£¥(−–-]*\d[\d,.]*\)?\s*%?$")  # "2,235", "$(9,399)", "4.5%"
NIL_CELL_RE = re.compile(r"^[$€£¥]?[—–−-]+$")  # "—", "$ —": nil, as reports print it in a column of figures
# A column's date ("As of August 1, 2019", "December 31, 2019") is header text, however many words.
DATE_CELL_RE = re.compile(
    r"^(?:(?:as )?(?:of|at|ended) )?(?:jan|feb|mar|apr|may|jun|jul|aug|sep|oct|nov|dec)[a-z]*\.? \d{1,2},? \d{4}$", re.IGNORECASE
)
MAX_HEADER_ROWS = 2  # rows under the header that may still belong to it
MAX_HEADER_CELL_WORDS = 4


def _is_figure(cell: str) -> bool:
    """A figure, or the dash a report prints for nil."""
    compact = cell.replace(" ", "")
    return bool(FIGURE_CELL_RE.match(compact) or NIL_CELL_RE.match(compact))


def _reads_as_header(row: list[str], below: list[list[str]]) -> bool:
    """Does a row under a table's header belong to it: the units under the years ("€m | €m"), or a
    second line of the column names ("As reported | Adjustments")? Each value cell it fills holds a
    few words (or a date) and no figure, over a column whose cells below are mostly figures (a dash
    for nil counts as one)."""
    filled = [i for i, c in enumerate(row) if i > 0 and c.strip()]
    if not filled or len(below) < 2:
        return False
    for i in filled:
        cell = " ".join(row[i].split())
        if _is_figure(cell) or (len(cell.split()) > MAX_HEADER_CELL_WORDS and not DATE_CELL_RE.match(cell)):
            return False
        column = [r[i] for r in below if i < len(r) and r[i].strip()]
        if not column or sum(map(_is_figure, column)) * 3 < len(column) * 2:
            return False
    return True


def _merge_header_rows(
    header: list[str], header_bbox: BBox, body: list[list[str]], boxes: list[BBox]
) -> tuple[list[str], BBox, list[list[str]], list[BBox]]:
    """The header with the rows under it that belong to it (_reads_as_header) joined in, cell by cell."""
    for _ in range(MAX_HEADER_ROWS):
        if not body or len(body[0]) != len(header) or not _reads_as_header(body[0], body[1:]):
            break
        header = [" ".join(p for p in (a, b) if p) for a, b in zip(header, body[0])]
        header_bbox = (min(header_bbox[0], boxes[0][0]), header_bbox[1], max(header_bbox[2], boxes[0][2]), boxes[0][3])
        body, boxes = body[1:], boxes[1:]
    return header, header_bbox, body, boxes


def _tables(page: pymupdf.Page, max_tables: int, use_layout: bool = False) -> list[RawTable]:
    found = page.find_tables(use_layout=use_layout)
    words = page.get_text("words")  # (x0, y0, x1, y1, word, block, line, word number)
    out: list[RawTable] = []
    for tab in found.tables:
        if tab.row_count < 2 or tab.col_count < 2:
            continue
        try:
            rows = [[_cell_text(words, c) if c is not None else "" for c in r.cells] for r in tab.rows]
        except (ValueError, IndexError, RuntimeError, TypeError) as exc:  # malformed cell geometry
            log.debug("table extraction failed on page %s: %s", page.number + 1, exc)
            continue
        row_bboxes = [tuple(r.bbox) for r in tab.rows]
        if tab.header.external and _external_header_ok(words, tab):
            header = [_cell_text(words, c) if c is not None else "" for c in tab.header.cells]
            header_bbox = tuple(tab.header.bbox)
            body, body_boxes = rows, row_bboxes
        else:
            header, body, body_boxes = rows[0], rows[1:], row_bboxes[1:]
            header_bbox = row_bboxes[0]
            if body and sum(1 for c in header if c) * 2 < len(header):
                # A spanning first row ("Years ended December 31" over the year columns) and the
                # row under it make the header together.
                header = [" ".join(p for p in (a, b) if p) for a, b in zip(header, body[0])]
                header_bbox = (header_bbox[0], header_bbox[1], body_boxes[0][2], body_boxes[0][3])
                body, body_boxes = body[1:], body_boxes[1:]
        header, header_bbox, body, body_boxes = _merge_header_rows(header, header_bbox, body, body_boxes)
        body_pairs = [(r, bb) for r, bb in zip(body, body_boxes) if any(r)]
        if not body_pairs:
            continue
        out.append(
            RawTable(
                bbox=tuple(tab.bbox),
                header=header,
                header_bbox=header_bbox,
                rows=[r for r, _ in body_pairs],
                row_bboxes=[bb for _, bb in body_pairs],
            )
        )
    out.sort(key=lambda t: -(t.bbox[2] - t.bbox[0]) * (t.bbox[3] - t.bbox[1]))
    return out[:max_tables]


def _links(page: pymupdf.Page) -> list[RawLink]:
    out: list[RawLink] = []
    for ln in page.get_links():
        rect = tuple(ln["from"])
        kind = ln.get("kind", 0)
        if kind == pymupdf.LINK_NAMED and "page" in ln:
            kind = pymupdf.LINK_GOTO
        if kind == pymupdf.LINK_GOTO and ln.get("page", -1) >= 0:
            to = ln.get("to")
            out.append(
                RawLink(kind=kind, rect=rect, target_page=ln["page"] + 1, target_y=float(to.y) if to else None,
                        target_x=float(to.x) if to else None)
            )
        elif kind in (pymupdf.LINK_GOTOR, pymupdf.LINK_LAUNCH) and ln.get("file"):
            out.append(RawLink(kind=kind, rect=rect, file=clean_text(str(ln["file"]))))
        elif kind == pymupdf.LINK_URI and ln.get("uri"):
            out.append(RawLink(kind=kind, rect=rect, uri=clean_text(str(ln["uri"]))))
    return out


def available_ocr_engine(preference: str) -> str | None:
    """The OCR engine to use for scanned pages, or None when none is installed."""
    if preference == "none":
        return None
    if preference in ("auto", "tesseract") and shutil.which("tesseract"):
        return "tesseract"
    if preference in ("auto", "rapidocr"):
        try:
            import rapidocr_onnxruntime  # noqa: F401
        except ImportError:
            return None
        return "rapidocr"
    return None


# Exceptions an OCR call can end with: tesseract's std::bad_alloc surfaces as RuntimeError,
# MuPDF's own errors as FzErrorBase, a Python allocation as MemoryError.
OCR_ERRORS: tuple[type[BaseException], ...] = (RuntimeError, ValueError, OSError, MemoryError, pymupdf.mupdf.FzErrorBase)
_ocr_failure: list[str] = []  # why OCR stopped working in this process (empty: it works)


def ocr_unusable() -> str | None:
    """Why OCR is off for the rest of this process, or None. A tesseract call that fails inside
    MuPDF (a std::bad_alloc under the worker's memory limit) leaves Leptonica marked as in use:
    every later OCR call in the process then fails ("Attempt to use Leptonica from 2 threads at
    once!"). So after the first failure OCR is skipped, the file degrades (its text layer and
    the pages already read are kept) and the parse worker asks to be replaced (worker.py)."""
    return _ocr_failure[0] if _ocr_failure else None


def adopt_ocr_failure(reason: str) -> None:
    """Take on an OCR failure another process of the same parse met (split.py), so that this
    process, too, reads no more with OCR, as one process would have after the first failure."""
    if not _ocr_failure:
        _ocr_failure.append(reason)


def _note_ocr_failure(engine: str, exc: BaseException) -> str:
    reason = f"OCR with {engine} failed ({library_reason(exc)})"
    log.warning("OCR with %s failed, OCR is off for the rest of this parse: %s", engine, exc)
    if not _ocr_failure:
        _ocr_failure.append(reason)
    return reason


def _ocr_tesseract(page: pymupdf.Page, language: str, dpi: int) -> dict:
    tp = page.get_textpage_ocr(language=language, dpi=dpi, full=True)
    return page.get_text("dict", textpage=tp)


def _ocr_rapidocr(page: pymupdf.Page, dpi: int) -> dict:
    return _ocr_rapidocr_pixmap(page.get_pixmap(dpi=dpi))


_rapidocr_engines: dict[int, object] = {}  # process id -> its RapidOCR (a forked page helper makes its own)


def rapidocr_engine():
    """This process's RapidOCR, made once (loading its three ONNX models per page cost more than
    reading many pages). Its ONNX Runtime sessions run on one thread, as tesseract does
    (OMP_THREAD_LIMIT=1): pages run in parallel as processes, and ORT's default of a thread per
    core could not start its threads on a 16-core machine under the parse worker's address-space
    limit (pthread_create failed, the library aborted, every file with a figure failed)."""
    import os

    engine = _rapidocr_engines.get(os.getpid())
    if engine is None:
        from rapidocr_onnxruntime import RapidOCR

        engine = _rapidocr_engines[os.getpid()] = RapidOCR(intra_op_num_threads=1, inter_op_num_threads=1)
    return engine


def _ocr_rapidocr_pixmap(pix: pymupdf.Pixmap) -> dict:
    """RapidOCR returns line boxes in pixels; convert them to a get_text('dict')-like structure
    in the pixmap's point space (pixels * 72 / dpi)."""
    import numpy as np

    dpi = pix.xres or 72
    img = np.frombuffer(pix.samples, dtype=np.uint8).reshape(pix.height, pix.width, pix.n)[:, :, :3]
    from rapidocr_onnxruntime.utils.infer_engine import ONNXRuntimeError

    try:
        result, _ = rapidocr_engine()(img)
    except ONNXRuntimeError as exc:  # ONNX Runtime's failure (a std::bad_alloc under the worker's limit) as OCR_ERRORS know it
        raise RuntimeError(str(exc)) from exc
    scale = 72.0 / dpi
    blocks = []
    for box, text, _score in result or []:
        xs = [p[0] * scale for p in box]
        ys = [p[1] * scale for p in box]
        bbox = (min(xs), min(ys), max(xs), max(ys))
        span = {"text": text, "bbox": bbox, "size": max(6.0, (bbox[3] - bbox[1]) * 0.8), "flags": 0, "font": "ocr"}
        blocks.append({"type": 0, "bbox": bbox, "lines": [{"bbox": bbox, "spans": [span]}]})
    return {"blocks": blocks}


def _top_level_text(page: pymupdf.Page) -> dict:
    """get_text('dict') of a copy of the page whose XObjects are removed: MuPDF reads only the
    page's own content stream (the text it shows itself), not the forms it draws 10^7 times."""
    with pymupdf.open() as tmp:
        tmp.insert_pdf(page.parent, from_page=page.number, to_page=page.number, links=False, annots=False, widgets=False)
        copy = tmp[0]
        kind, value = tmp.xref_get_key(copy.xref, "Resources")
        if kind == "xref":
            tmp.xref_set_key(int(value.split()[0]), "XObject", "<<>>")
        elif kind == "dict":
            tmp.xref_set_key(copy.xref, "Resources/XObject", "<<>>")
        return copy.get_text("dict", flags=pymupdf.TEXTFLAGS_DICT & ~pymupdf.TEXT_PRESERVE_IMAGES)


def _ocr_page(page: pymupdf.Page, raw: RawPage, engine: str, language: str, dpi: int, max_pixels: int) -> list[str]:
    """OCR a page with no text layer into raw.blocks; returns warnings. The resolution is lowered
    for a huge page (20,000 pt on a side) so its render stays under max_pixels."""
    area_in2 = max(1.0, raw.width * raw.height) / 72**2
    dpi = max(20, min(dpi, int((max_pixels / area_in2) ** 0.5)))
    page_area = raw.width * raw.height
    if (broken := ocr_unusable()) is not None:
        return [f"page {raw.number}: not read with OCR, an earlier {broken}"]
    try:
        ocr_dict = _ocr_tesseract(page, language, dpi) if engine == "tesseract" else _ocr_rapidocr(page, dpi)
    except OCR_ERRORS as exc:
        return [f"page {raw.number}: {_note_ocr_failure(engine, exc)}"]
    raw.blocks, _ = _blocks_from_dict(ocr_dict)
    raw.ocr_engine = engine
    # The scanned image covers the page; it is the text, not a figure.
    raw.images = [b for b in raw.images if (b[2] - b[0]) * (b[3] - b[1]) < 0.5 * page_area]
    return []


def _graphics(page: pymupdf.Page, raw: RawPage, find_tables: bool, max_tables: int, table_layout_model: bool) -> list[str]:
    """Drawings (clustered) and, where ruling lines make one possible, tables."""
    warnings: list[str] = []
    drawings = page.get_drawings()
    raw.has_lines = may_hold_ruled_table(drawings, page)
    if drawings:
        try:
            raw.drawings = [tuple(r) for r in page.cluster_drawings(drawings=drawings)]
        except (ValueError, RuntimeError) as exc:
            log.debug("cluster_drawings failed on page %s: %s", raw.number, exc)
    if find_tables and raw.has_lines:
        try:
            raw.tables = _tables(page, max_tables, table_layout_model)
        except (ValueError, RuntimeError, IndexError, pymupdf.mupdf.FzErrorBase) as exc:
            warnings.append(f"page {raw.number}: table detection failed ({library_reason(exc)})")
    return warnings


def extract_page(
    page: pymupdf.Page,
    *,
    find_tables: bool,
    max_tables: int,
    table_layout_model: bool = False,
    ocr_engine: str | None,
    ocr_language: str,
    ocr_dpi: int,
    plan: PagePlan | None = None,
    bounds: PageBounds | None = None,
) -> tuple[RawPage, list[str]]:
    """Extract one page, reading what `plan` allows (PageCoster.plan; everything by default).
    Returns the raw page and warnings (a degraded page, OCR needed but unavailable)."""
    plan = plan or PagePlan()
    bounds = bounds or PageBounds()
    warnings: list[str] = list(plan.reasons)
    rect = page.rect
    raw = RawPage(number=page.number + 1, width=rect.width, height=rect.height)
    if plan.text:
        page_dict = (
            _top_level_text(page) if plan.text_top_level_only
            else page.get_text("dict", flags=pymupdf.TEXTFLAGS_DICT & ~pymupdf.TEXT_PRESERVE_IMAGES)
        )
        raw.blocks, _ = _blocks_from_dict(page_dict)
    if not plan.graphics:
        raw.links = _links(page) if plan.links else []
        return raw, warnings
    raw.images = [tuple(info["bbox"]) for info in page.get_image_info() if info.get("bbox")]
    if not raw.blocks and raw.images:
        if ocr_engine is None:
            warnings.append(f"page {raw.number} has no text layer and no OCR engine is installed; its text is missing")
        else:
            warnings += _ocr_page(page, raw, ocr_engine, ocr_language, ocr_dpi, bounds.max_image_pixels)
    warnings += _graphics(page, raw, find_tables, max_tables, table_layout_model)
    raw.links = _links(page) if plan.links else []
    return raw, warnings


def ocr_region(page: pymupdf.Page, bbox: BBox, engine: str, language: str, dpi: int = 150) -> list[tuple[BBox, str]]:
    """OCR the text inside a raster figure: (box in page points, text) per OCR block. A failed
    OCR call gives no text (the figure keeps its caption) and turns OCR off (ocr_unusable)."""
    clip = pymupdf.Rect(bbox) & page.rect
    if clip.is_empty or ocr_unusable() is not None:
        return []
    try:
        page_dict, fx, fy = _ocr_clip(page, clip, engine, language, dpi)
    except OCR_ERRORS as exc:
        _note_ocr_failure(engine, exc)
        return []
    blocks, _ = _blocks_from_dict(page_dict)
    out: list[tuple[BBox, str]] = []
    for b in blocks:
        text = " ".join(ln.text for ln in b.lines if sum(c.isalnum() for c in ln.text) >= 2)
        if text:
            x0, y0, x1, y1 = b.bbox
            out.append(((clip.x0 + x0 * fx, clip.y0 + y0 * fy, clip.x0 + x1 * fx, clip.y0 + y1 * fy), text))
    return out


def _ocr_clip(page: pymupdf.Page, clip: pymupdf.Rect, engine: str, language: str, dpi: int) -> tuple[dict, float, float]:
    """get_text('dict') of the OCR of one page region, and the factors from its space to points."""
    pix = page.get_pixmap(clip=clip, dpi=dpi)
    if engine != "tesseract":
        return _ocr_rapidocr_pixmap(pix), 1.0, 1.0  # already in points relative to the clip
    with pymupdf.open("pdf", pix.pdfocr_tobytes(language=language)) as ocr_pdf:
        ocr_page = ocr_pdf[0]
        return ocr_page.get_text("dict"), clip.width / ocr_page.rect.width, clip.height / ocr_page.rect.height

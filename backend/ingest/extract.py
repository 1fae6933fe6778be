"""Stage 2: raw extraction of one page with PyMuPDF (text lines with fonts, images, drawings,
tables, links), with OCR for pages that have no text layer.

This module knows PyMuPDF; it does not decide what a block *is* (layout.py does that).
"""

from __future__ import annotations

import logging
import re
import shutil
from dataclasses import dataclass, field

import pymupdf

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


def _is_bold(span: dict) -> bool:
    if span["flags"] & BOLD_FLAG:
        return True
    font = span.get("font", "").lower()
    return any(n in font for n in _BOLD_NAMES)


def _clean(text: str) -> str:
    return " ".join(text.replace("\u00ad", "").split())


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
            lines.append(Line(text=text, bbox=tuple(ln["bbox"]), size=round(size, 1), bold=bold_chars > total / 2))
        if lines:
            blocks.append(TextBlock(lines=lines, bbox=tuple(b["bbox"])))
    return blocks, images


def _ruling_edges(drawings: list[dict]) -> int:
    """Horizontal/vertical edges drawn on the page. find_tables (the costly step) only runs
    where there are enough of them to make a ruled table."""
    edges = 0
    for d in drawings[:5000]:
        for item in d.get("items", ()):
            if item[0] == "re" or item[0] == "qu":
                edges += 4
            elif item[0] == "l":
                p1, p2 = item[1], item[2]
                if abs(p1.x - p2.x) < 1 or abs(p1.y - p2.y) < 1:
                    edges += 1
        if edges >= 8:
            break
    return edges


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
            out.append(RawLink(kind=kind, rect=rect, file=str(ln["file"])))
        elif kind == pymupdf.LINK_URI and ln.get("uri"):
            out.append(RawLink(kind=kind, rect=rect, uri=str(ln["uri"])))
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


def _ocr_tesseract(page: pymupdf.Page, language: str, dpi: int) -> dict:
    tp = page.get_textpage_ocr(language=language, dpi=dpi, full=True)
    return page.get_text("dict", textpage=tp)


def _ocr_rapidocr(page: pymupdf.Page, dpi: int) -> dict:
    return _ocr_rapidocr_pixmap(page.get_pixmap(dpi=dpi))


def _ocr_rapidocr_pixmap(pix: pymupdf.Pixmap) -> dict:
    """RapidOCR returns line boxes in pixels; convert them to a get_text('dict')-like structure
    in the pixmap's point space (pixels * 72 / dpi)."""
    import numpy as np
    from rapidocr_onnxruntime import RapidOCR

    dpi = pix.xres or 72
    img = np.frombuffer(pix.samples, dtype=np.uint8).reshape(pix.height, pix.width, pix.n)[:, :, :3]
    result, _ = RapidOCR()(img)
    scale = 72.0 / dpi
    blocks = []
    for box, text, _score in result or []:
        xs = [p[0] * scale for p in box]
        ys = [p[1] * scale for p in box]
        bbox = (min(xs), min(ys), max(xs), max(ys))
        span = {"text": text, "bbox": bbox, "size": max(6.0, (bbox[3] - bbox[1]) * 0.8), "flags": 0, "font": "ocr"}
        blocks.append({"type": 0, "bbox": bbox, "lines": [{"bbox": bbox, "spans": [span]}]})
    return {"blocks": blocks}


def extract_page(
    page: pymupdf.Page,
    *,
    find_tables: bool,
    max_tables: int,
    table_layout_model: bool = False,
    ocr_engine: str | None,
    ocr_language: str,
    ocr_dpi: int,
) -> tuple[RawPage, list[str]]:
    """Extract one page. Returns the raw page and warnings (e.g. OCR needed but unavailable)."""
    warnings: list[str] = []
    rect = page.rect
    raw = RawPage(number=page.number + 1, width=rect.width, height=rect.height)
    page_dict = page.get_text("dict", flags=pymupdf.TEXTFLAGS_DICT & ~pymupdf.TEXT_PRESERVE_IMAGES)
    raw.blocks, _ = _blocks_from_dict(page_dict)
    raw.images = [tuple(info["bbox"]) for info in page.get_image_info() if info.get("bbox")]
    if not raw.blocks:
        page_area = rect.width * rect.height
        image_area = sum((b[2] - b[0]) * (b[3] - b[1]) for b in raw.images)
        if image_area > 0.3 * page_area or raw.images:
            if ocr_engine is None:
                warnings.append(f"page {raw.number} has no text layer and no OCR engine is installed; its text is missing")
            else:
                try:
                    ocr_dict = (
                        _ocr_tesseract(page, ocr_language, ocr_dpi)
                        if ocr_engine == "tesseract"
                        else _ocr_rapidocr(page, ocr_dpi)
                    )
                    raw.blocks, _ = _blocks_from_dict(ocr_dict)
                    raw.ocr_engine = ocr_engine
                    # The scanned image covers the page; it is the text, not a figure.
                    raw.images = [b for b in raw.images if (b[2] - b[0]) * (b[3] - b[1]) < 0.5 * page_area]
                except (RuntimeError, ValueError, OSError) as exc:
                    warnings.append(f"page {raw.number}: OCR with {ocr_engine} failed: {exc}")
    drawings = page.get_drawings()
    raw.has_lines = _ruling_edges(drawings) >= 8
    if drawings:
        try:
            raw.drawings = [tuple(r) for r in page.cluster_drawings(drawings=drawings)]
        except (ValueError, RuntimeError) as exc:
            log.debug("cluster_drawings failed on page %s: %s", raw.number, exc)
    if find_tables and raw.has_lines:
        try:
            raw.tables = _tables(page, max_tables, table_layout_model)
        except (ValueError, RuntimeError, IndexError) as exc:
            warnings.append(f"page {raw.number}: table detection failed: {exc}")
    raw.links = _links(page)
    return raw, warnings


def ocr_region(page: pymupdf.Page, bbox: BBox, engine: str, language: str, dpi: int = 150) -> list[tuple[BBox, str]]:
    """OCR the text inside a raster figure: (box in page points, text) per OCR block."""
    clip = pymupdf.Rect(bbox) & page.rect
    if clip.is_empty:
        return []
    pix = page.get_pixmap(clip=clip, dpi=dpi)
    if engine == "tesseract":
        with pymupdf.open("pdf", pix.pdfocr_tobytes(language=language)) as ocr_pdf:
            ocr_page = ocr_pdf[0]
            fx = clip.width / ocr_page.rect.width
            fy = clip.height / ocr_page.rect.height
            page_dict = ocr_page.get_text("dict")
    else:
        page_dict = _ocr_rapidocr_pixmap(pix)  # already in points relative to the clip
        fx = fy = 1.0
    blocks, _ = _blocks_from_dict(page_dict)
    out: list[tuple[BBox, str]] = []
    for b in blocks:
        text = " ".join(ln.text for ln in b.lines if sum(c.isalnum() for c in ln.text) >= 2)
        if text:
            x0, y0, x1, y1 = b.bbox
            out.append(((clip.x0 + x0 * fx, clip.y0 + y0 * fy, clip.x0 + x1 * fx, clip.y0 + y1 * fy), text))
    return out

"""One PDF in, one ParsedDocument out: validate -> extract -> layout -> hierarchy -> components
-> links -> cards. Runs inside the parse worker process (worker.py), so a hostile file can only
take that process down. It does not encode or store anything (pipeline.py does).
"""

from __future__ import annotations

import hashlib
import logging
import time
from collections.abc import Callable
from pathlib import Path

import pymupdf

from backend.config import IngestSettings
from backend.errors import BadPdfError
from backend.ingest.components import build_components
from backend.ingest.extract import available_ocr_engine, extract_page
from backend.ingest.hierarchy import assign_sections, build_hierarchy
from backend.ingest.layout import layout_document
from backend.ingest.links import annotation_edges, xref_edges
from backend.types import Document, Layer, NodeKind, ParsedDocument

log = logging.getLogger(__name__)

PARSER_VERSION = "1"
CARD_MAX_CHARS = 1500
ProgressFn = Callable[[str, int, int], None]


def file_sha256(path: Path) -> str:
    h = hashlib.sha256()
    with path.open("rb") as f:
        for chunk in iter(lambda: f.read(1 << 20), b""):
            h.update(chunk)
    return h.hexdigest()


def doc_id_for(sha256: str) -> str:
    return f"d{sha256[:15]}"


def open_validated(path: Path, settings: IngestSettings) -> pymupdf.Document:
    """Open a PDF or raise BadPdfError with a message that says why it cannot be used."""
    name = path.name
    if not path.is_file():
        raise BadPdfError(name, "file not found")
    size = path.stat().st_size
    if size == 0:
        raise BadPdfError(name, "the file is empty (0 bytes)")
    if size > settings.max_file_mb * 1024 * 1024:
        raise BadPdfError(
            name, f"the file is {size / 2**20:.1f} MiB, over the {settings.max_file_mb:g} MiB limit (STRATA_INGEST__MAX_FILE_MB)"
        )
    with path.open("rb") as f:
        head = f.read(1024)
    if b"%PDF-" not in head:
        raise BadPdfError(name, "not a PDF: the file does not start with a %PDF- header")
    try:
        doc = pymupdf.open(path, filetype="pdf")
    except (pymupdf.FileDataError, RuntimeError, ValueError) as exc:
        raise BadPdfError(name, f"damaged PDF that cannot be opened ({exc})") from exc
    if doc.needs_pass and not doc.authenticate(""):
        doc.close()
        raise BadPdfError(name, "the PDF is encrypted with a password; remove the password and upload it again")
    if doc.page_count == 0:
        doc.close()
        raise BadPdfError(name, "the PDF has no pages (it may be truncated or damaged)")
    if doc.page_count > settings.max_pages:
        n = doc.page_count
        doc.close()
        raise BadPdfError(name, f"the PDF has {n} pages, over the {settings.max_pages}-page limit (STRATA_INGEST__MAX_PAGES)")
    return doc


def _doc_card(title: str, sections, toc_entries: list[str]) -> str:
    parts = [title]
    for s in sections[1:]:
        if s.level <= 2:
            parts.append(" > ".join(s.path[1:]))
    parts.extend(toc_entries)
    card, seen = [], set()
    for p in parts:
        key = p.lower()
        if p and key not in seen:
            seen.add(key)
            card.append(p)
    return "\n".join(card)[:CARD_MAX_CHARS]


def parse_pdf(
    path: Path,
    settings: IngestSettings,
    crops_root: Path | None,
    progress: ProgressFn | None = None,
    display_name: str | None = None,
) -> ParsedDocument:
    """Parse one PDF. Crops go to crops_root/<doc id>/ when crops_root is given."""
    name = display_name or path.name
    report = progress or (lambda stage, done, total: None)
    timings: dict[str, float] = {}
    t0 = time.perf_counter()
    sha = file_sha256(path)
    doc_id = doc_id_for(sha)
    pdf = open_validated(path, settings)
    timings["open"] = time.perf_counter() - t0
    try:
        ocr_engine = available_ocr_engine(settings.ocr)
        warnings: list[str] = []
        raw_pages = []
        t = time.perf_counter()
        n_pages = pdf.page_count
        for i in range(n_pages):
            try:
                page = pdf.load_page(i)
                raw, page_warnings = extract_page(
                    page, find_tables=settings.find_tables, max_tables=settings.max_tables_per_page,
                    ocr_engine=ocr_engine, ocr_language=settings.ocr_language, ocr_dpi=settings.ocr_dpi,
                )
            except (RuntimeError, ValueError) as exc:
                warnings.append(f"page {i + 1} could not be read and was skipped: {exc}")
                continue
            warnings.extend(page_warnings)
            raw_pages.append(raw)
            report("extract", i + 1, n_pages)
        if not raw_pages:
            raise BadPdfError(name, "no page of the PDF could be read (damaged or truncated file)")
        timings["extract"] = time.perf_counter() - t
        if not any(p.blocks for p in raw_pages):
            warnings.append("no text found on any page" + ("" if ocr_engine else " and no OCR engine is installed (install tesseract-ocr)"))

        t = time.perf_counter()
        blocks, body_size = layout_document(raw_pages)
        timings["layout"] = time.perf_counter() - t
        report("layout", n_pages, n_pages)

        t = time.perf_counter()
        toc = pdf.get_toc(simple=True)
        blocks, hier = build_hierarchy(blocks, toc, pdf.metadata.get("title", "") if pdf.metadata else "", path.stem, body_size)
        sections, owner, heading_section = assign_sections(blocks, hier, doc_id)
        timings["hierarchy"] = time.perf_counter() - t
        report("hierarchy", n_pages, n_pages)

        t = time.perf_counter()
        crops_dir = None
        if crops_root is not None:
            crops_dir = crops_root / doc_id
            crops_dir.mkdir(parents=True, exist_ok=True)
        built = build_components(
            doc_id=doc_id, blocks=blocks, hier=hier, sections=sections, owner=owner, heading_section=heading_section,
            pdf=pdf, crops_dir=crops_dir, crop_rel_prefix=f"crops/{doc_id}", crop_dpi=settings.crop_dpi,
            ocr_engine=ocr_engine if settings.ocr_figures else None, ocr_language=settings.ocr_language,
        )
        timings["components"] = time.perf_counter() - t
        report("components", n_pages, n_pages)

        t = time.perf_counter()
        edges = list(built.edges)
        edges += xref_edges(built.nodes, built.labels, sections)
        link_edges, pending = annotation_edges(built.nodes, raw_pages)
        edges += link_edges
        timings["links"] = time.perf_counter() - t
        report("links", n_pages, n_pages)

        body = [n.text for n in built.nodes if n.kind == NodeKind.PARAGRAPH and n.role == "paragraph" and n.page <= 2]
        summary = " ".join(body)[:600]
        card = _doc_card(hier.title, sections, hier.toc_entries)
        for n in built.nodes:
            if n.kind == NodeKind.DOCUMENT:
                n.text = card
        document = Document(
            id=doc_id, file_name=name, title=hier.title, pages=n_pages, sha256=sha, bytes=path.stat().st_size,
            card=card, summary=summary, hierarchy_source=hier.source,
            page_sizes=[(round(pdf[i].rect.width, 2), round(pdf[i].rect.height, 2)) for i in range(n_pages)],
            warnings=warnings,
        )
        if ocr_engine and any(p.ocr_engine for p in raw_pages):
            document.warnings.append(f"{sum(1 for p in raw_pages if p.ocr_engine)} page(s) read with OCR ({ocr_engine})")
        if not any(n.layer == Layer.COMPONENT for n in built.nodes):
            document.warnings.append("no paragraphs, tables or figures were found")
        return ParsedDocument(
            document=document, sections=sections, nodes=built.nodes, edges=edges, blocks=built.blocks,
            doc_links=pending, stage_seconds=timings,
        )
    finally:
        pdf.close()
